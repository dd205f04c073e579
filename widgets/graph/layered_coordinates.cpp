#include "widgets/graph/layered_coordinates.h"

#include <algorithm>
#include <limits>

namespace hippie::widgets {

namespace {

// Link weights as dot's x positioning has them: bends of one edge pull hardest on each other,
// so long edges run straight; op-to-op links pull least.
constexpr double kOpOpWeight = 1;
constexpr double kOpBendWeight = 2;
constexpr double kBendBendWeight = 8;
constexpr double kStayWeight = 1e-3;  // a box with no neighbour on the swept side stays put

// Pool adjacent violators: the non-decreasing y closest to `target` in weighted least squares.
std::vector<double> isotonic(const std::vector<double>& target, const std::vector<double>& weight) {
    struct Block {
        double sum_wt;  // sum of weight * target
        double sum_w;
        size_t count;
        double mean() const { return sum_wt / sum_w; }
    };
    std::vector<Block> blocks;
    blocks.reserve(target.size());
    for (size_t i = 0; i < target.size(); ++i) {
        blocks.push_back({weight[i] * target[i], weight[i], 1});
        while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
            Block last = blocks.back();
            blocks.pop_back();
            blocks.back().sum_wt += last.sum_wt;
            blocks.back().sum_w += last.sum_w;
            blocks.back().count += last.count;
        }
    }
    std::vector<double> out;
    out.reserve(target.size());
    for (const Block& b : blocks) out.insert(out.end(), b.count, b.mean());
    return out;
}

}  // namespace

LayeredCoordinates assignLayeredCoordinates(const LayeredInput& in) {
    const size_t n = in.width.size();
    LayeredCoordinates out;
    out.x.assign(n, 0);
    out.y.assign(n, 0);
    if (n == 0) return out;

    // y: each rank as tall as its tallest box.
    double top = 0;
    for (const std::vector<int>& rank : in.ranks) {
        double tallest = 0;
        for (int b : rank) tallest = std::max(tallest, in.height[static_cast<size_t>(b)]);
        for (int b : rank) out.y[static_cast<size_t>(b)] = top + tallest / 2;
        top += tallest + in.rank_sep;
    }
    out.height = std::max(0.0, top - in.rank_sep);

    // Minimal gap between the centres of neighbours; a bend needs less room than a box.
    auto gap = [&](int a, int b) {
        const double sep = in.is_bend[static_cast<size_t>(a)] && in.is_bend[static_cast<size_t>(b)] ? in.node_sep / 2 : in.node_sep;
        return (in.width[static_cast<size_t>(a)] + in.width[static_cast<size_t>(b)]) / 2 + sep;
    };
    // x: packed from the left, then every rank centred on 0.
    for (const std::vector<int>& rank : in.ranks) {
        double x = 0;
        for (size_t i = 0; i < rank.size(); ++i) {
            if (i > 0) x += gap(rank[i - 1], rank[i]);
            out.x[static_cast<size_t>(rank[i])] = x;
        }
        for (int b : rank) out.x[static_cast<size_t>(b)] -= x / 2;
    }

    std::vector<std::vector<std::pair<int, double>>> above(n), below(n);
    for (const auto& [upper, lower] : in.links) {
        const bool ub = in.is_bend[static_cast<size_t>(upper)], lb = in.is_bend[static_cast<size_t>(lower)];
        const double w = ub && lb ? kBendBendWeight : ub || lb ? kOpBendWeight : kOpOpWeight;
        below[static_cast<size_t>(upper)].push_back({lower, w});
        above[static_cast<size_t>(lower)].push_back({upper, w});
    }

    // One rank placed as close as its order allows to the weighted mean of its neighbours.
    auto place = [&](const std::vector<int>& rank, const std::vector<std::vector<std::pair<int, double>>>& neighbours) {
        std::vector<double> target(rank.size()), weight(rank.size());
        double offset = 0;  // x_i - offset_i must be non-decreasing
        std::vector<double> offsets(rank.size());
        for (size_t i = 0; i < rank.size(); ++i) {
            if (i > 0) offset += gap(rank[i - 1], rank[i]);
            offsets[i] = offset;
            const auto b = static_cast<size_t>(rank[i]);
            double sum = kStayWeight * out.x[b], w = kStayWeight;
            for (const auto& [other, link_weight] : neighbours[b]) {
                sum += link_weight * out.x[static_cast<size_t>(other)];
                w += link_weight;
            }
            target[i] = sum / w - offsets[i];
            weight[i] = w;
        }
        const std::vector<double> fitted = isotonic(target, weight);
        for (size_t i = 0; i < rank.size(); ++i) out.x[static_cast<size_t>(rank[i])] = fitted[i] + offsets[i];
    };
    for (int sweep = 0; sweep < in.sweeps; ++sweep) {
        for (size_t r = 1; r < in.ranks.size(); ++r) place(in.ranks[r], above);
        for (size_t r = in.ranks.size() - 1; r-- > 0;) place(in.ranks[r], below);
    }

    double left = std::numeric_limits<double>::max(), right = std::numeric_limits<double>::lowest();
    for (size_t b = 0; b < n; ++b) {
        left = std::min(left, out.x[b] - in.width[b] / 2);
        right = std::max(right, out.x[b] + in.width[b] / 2);
    }
    for (double& x : out.x) x -= left;
    out.width = right - left;
    return out;
}

}  // namespace hippie::widgets
