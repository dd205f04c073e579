#include "planners/model/attention_core.h"

#include <string>
#include <string_view>

namespace hippie {

namespace {

constexpr std::string_view kScoresSuffix = "_scores";
constexpr std::string_view kSoftmaxSuffix = "_softmax";
constexpr std::string_view kDropoutSuffix = "_dropout";

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
        out.push_back({src, static_cast<int>(op), -1});
    }
    // A core's dropout: the one op of that name reading its softmax alone.
    std::vector<int> core_of_softmax(g.ops.size(), -1);
    for (size_t c = 0; c < out.size(); ++c) core_of_softmax[static_cast<size_t>(out[c].softmax)] = static_cast<int>(c);
    for (size_t op = 0; op < g.ops.size(); ++op) {
        const Op& dropout = g.ops[op];
        if (dropout.kind != "dropout" || producer[op] < 0) continue;
        const int c = core_of_softmax[static_cast<size_t>(producer[op])];
        if (c < 0) continue;
        const Op& softmax = g.ops[static_cast<size_t>(out[static_cast<size_t>(c)].softmax)];
        const std::string prefix = softmax.name.substr(0, softmax.name.size() - kSoftmaxSuffix.size());
        if (dropout.layer == softmax.layer && dropout.name == prefix + std::string(kDropoutSuffix))
            out[static_cast<size_t>(c)].dropout = static_cast<int>(op);
    }
    return out;
}

std::vector<int> AttentionCore::ops() const {
    std::vector<int> o{scores, softmax};
    if (dropout >= 0) o.push_back(dropout);
    return o;
}

}  // namespace hippie
