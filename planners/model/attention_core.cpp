#include "planners/model/attention_core.h"

#include <string>
#include <string_view>

namespace hippie {

namespace {

constexpr std::string_view kScoresSuffix = "_scores";
constexpr std::string_view kSoftmaxSuffix = "_softmax";

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::vector<AttentionCore> attentionCores(const Graph& g) {
    std::vector<int> producer(g.ops.size(), -1);  // the one op feeding each op, -2 for several
    for (const Edge& e : g.edges) {
        int& p = producer[static_cast<size_t>(e.dst)];
        p = (p == -1 || p == e.src) ? e.src : -2;
    }
    std::vector<AttentionCore> out;
    for (size_t op = 0; op < g.ops.size(); ++op) {
        const Op& softmax = g.ops[op];
        if (softmax.kind != "softmax" || !endsWith(softmax.name, kSoftmaxSuffix)) continue;
        const int src = producer[op];
        if (src < 0) continue;
        const Op& scores = g.ops[static_cast<size_t>(src)];
        const std::string prefix = softmax.name.substr(0, softmax.name.size() - kSoftmaxSuffix.size());
        if (scores.layer != softmax.layer || scores.name != prefix + std::string(kScoresSuffix)) continue;
        out.push_back({src, static_cast<int>(op)});
    }
    return out;
}

}  // namespace hippie
