#include "planners/schedule/balanced_stages.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "planners/common/error.h"

namespace hippie {

std::vector<StageRange> balancedStages(const Graph& graph, int stages) {
    return balancedStages(graph, std::vector<int>(static_cast<size_t>(std::max(stages, 0)), 1));
}

std::vector<StageRange> balancedStages(const Graph& graph, const std::vector<int>& shares) {
    const int stages = static_cast<int>(shares.size());
    const std::vector<Layer> layers = graph.layers();
    const int count = static_cast<int>(layers.size());
    if (stages < 1) throw Error("cannot cut a model into " + std::to_string(stages) + " stages");
    if (stages > count)
        throw Error("model '" + graph.name + "' has " + std::to_string(count) + " layers, too few for " +
                    std::to_string(stages) + " pipeline stages");

    double parts = 0;
    for (int share : shares) {
        if (share < 1) throw Error("cannot cut a model into stages of " + std::to_string(share) + " shares of its work");
        parts += share;
    }
    std::vector<double> prefix(static_cast<size_t>(count));  // FLOPs of layers 0..i
    double sum = 0;
    for (int i = 0; i < count; ++i) prefix[static_cast<size_t>(i)] = sum += layers[static_cast<size_t>(i)].fwd_flops;
    const auto distance = [&](int last, double target) { return std::abs(prefix[static_cast<size_t>(last)] - target); };

    std::vector<StageRange> out;
    int first = 0;
    double done = 0;  // shares of the stages so far
    for (int k = 0; k < stages; ++k) {
        done += shares[static_cast<size_t>(k)];
        const int latest = count - (stages - k);  // leave one layer for each later stage
        int last = first;
        if (k == stages - 1) {
            last = count - 1;
        } else {
            const double target = sum * done / parts;
            // Take every layer that stays within the target, then the next one if that lands closer.
            while (last < latest && prefix[static_cast<size_t>(last) + 1] <= target) ++last;
            if (last < latest && distance(last + 1, target) < distance(last, target)) ++last;
        }
        out.push_back({first, last});
        first = last + 1;
    }
    return out;
}

}  // namespace hippie
