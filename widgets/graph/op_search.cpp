#include "widgets/graph/op_search.h"

#include <algorithm>
#include <cctype>

namespace hippie::widgets {

namespace {
std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}
}  // namespace

void OpSearch::search(const Graph& graph, const std::string& text) {
    matches_.clear();
    const std::string needle = lower(text);
    if (!needle.empty())
        for (size_t i = 0; i < graph.ops.size(); ++i)
            if (lower(graph.ops[i].name).find(needle) != std::string::npos) matches_.push_back(static_cast<int>(i));
    current_ = matches_.empty() ? -1 : 0;
}

int OpSearch::currentOp() const { return current_ < 0 ? -1 : matches_[static_cast<size_t>(current_)]; }

void OpSearch::next() {
    if (!matches_.empty()) current_ = (current_ + 1) % count();
}

void OpSearch::previous() {
    if (!matches_.empty()) current_ = (current_ - 1 + count()) % count();
}

int OpSearch::layerToExpand(const Graph& graph, bool collapsed, const std::set<int>& expanded) const {
    const int op = currentOp();
    if (op < 0 || !collapsed) return -1;
    const int layer = graph.ops[static_cast<size_t>(op)].layer;
    return expanded.count(layer) ? -1 : layer;
}

}  // namespace hippie::widgets
