#include "planners/algorithms/partition.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>
#include <string>

#include "planners/common/error.h"

namespace hippie {

namespace {

void checkCounts(int layers, int stages, const char* what) {
    if (stages < 1) throw Error(std::string(what) + ": the number of stages must be positive, got " + std::to_string(stages));
    if (layers < stages)
        throw Error(std::string(what) + ": " + std::to_string(layers) + " layers cannot fill " + std::to_string(stages) +
                    " non-empty stages");
}

void checkWeights(const std::vector<double>& weights, const char* what) {
    checkCounts(static_cast<int>(weights.size()), 1, what);
    for (size_t i = 0; i < weights.size(); ++i)
        if (!(weights[i] >= 0))
            throw Error(std::string(what) + ": weight of layer " + std::to_string(i) + " is " + std::to_string(weights[i]) +
                        "; weights must be non-negative");
}

// Stage ranges from the exclusive end index of every stage.
std::vector<StageRange> rangesFromEnds(const std::vector<int>& ends) {
    std::vector<StageRange> out;
    int first = 0;
    for (int end : ends) {
        out.push_back({first, end - 1});
        first = end;
    }
    return out;
}

// Prefix sums, so that every range sum is computed the same way (P[j] - P[i]) in the search
// and in the reconstruction: comparisons against the optimum then agree exactly.
class PrefixSums {
public:
    explicit PrefixSums(const std::vector<double>& w) : p_(w.size() + 1, 0.0) {
        for (size_t i = 0; i < w.size(); ++i) p_[i + 1] = p_[i] + w[i];
    }
    double sum(size_t from, size_t to) const { return p_[to] - p_[from]; }  // [from, to)
    size_t size() const { return p_.size() - 1; }

private:
    std::vector<double> p_;
};

// Smallest largest-stage sum over partitions of [0, n) into `stages` non-empty ranges.
double minMaxValue(const PrefixSums& s, int stages) {
    const size_t n = s.size();
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<double> best(n + 1, kInf), next(n + 1, kInf);
    for (size_t j = 1; j <= n; ++j) best[j] = s.sum(0, j);
    for (int k = 2; k <= stages; ++k) {
        std::fill(next.begin(), next.end(), kInf);
        for (size_t j = static_cast<size_t>(k); j <= n; ++j)
            for (size_t i = static_cast<size_t>(k) - 1; i < j; ++i) next[j] = std::min(next[j], std::max(best[i], s.sum(i, j)));
        std::swap(best, next);
    }
    return best[n];
}

// Whether [from, n) splits into exactly `stages` non-empty ranges of sum <= limit.
bool suffixFits(const PrefixSums& s, size_t from, int stages, double limit) {
    const size_t n = s.size();
    if (n - from < static_cast<size_t>(stages)) return false;
    int needed = 0;
    size_t i = from;
    while (i < n) {
        if (s.sum(i, i + 1) > limit) return false;
        size_t j = i + 1;
        while (j < n && s.sum(i, j + 1) <= limit) ++j;
        ++needed;
        i = j;
    }
    return needed <= stages;  // ranges of sum <= limit can be split further without raising the maximum
}

// Normalises to [0, 1] as torchgpipe does (all equal: all zero).
std::vector<double> normalised(const std::vector<double>& w) {
    const double lo = *std::min_element(w.begin(), w.end());
    const double span = *std::max_element(w.begin(), w.end()) - lo;
    std::vector<double> out(w.size(), 0.0);
    if (span != 0)
        for (size_t i = 0; i < w.size(); ++i) out[i] = (w[i] - lo) / span;
    return out;
}

// Python's slice bounds: negative indices count from the end, then clamp to [0, n].
int pythonIndex(int x, int n) {
    if (x < 0) x += n;
    return std::clamp(x, 0, n);
}

// Bárány et al.'s block moves on torchgpipe's split points (exclusive ends of the blocks),
// with Python's slicing: a block whose split points cross on the way is empty.
class BlockMoves {
public:
    BlockMoves(std::vector<double> normal, int blocks) : w_(std::move(normal)) {
        const int n = static_cast<int>(w_.size());
        for (int x = 0; x + 1 < blocks; ++x) ends_.push_back(n / blocks * (x + 1));
        ends_.push_back(n);
    }

    void solve() {
        // The paper bounds the number of moves by k * n^2; the cap only guards against
        // rounding making two moves undo each other forever.
        const size_t n = w_.size(), k = ends_.size();
        const size_t max_moves = k * n * n + 1;
        size_t moves = 0;
        while (true) {
            const auto [max_size, p] = largest();  // step (1): B_p is a maximal block
            while (true) {
                const auto [min_size, q] = smallest();  // step (2)
                if (max_size <= min_size + 1 || ++moves > max_moves) return;
                // Step (3): move one element from the neighbour h of B_q on B_p's side into B_q.
                const int h = p < q ? q - 1 : q + 1;
                if (p < q) --ends_[static_cast<size_t>(h)];
                else ++ends_[static_cast<size_t>(q)];
                if (p == h) break;  // back to step (1)
            }
        }
    }

    // The blocks as Python slices [start, stop), stop < start meaning empty.
    std::vector<std::pair<int, int>> blocks() const {
        std::vector<std::pair<int, int>> out;
        for (int i = 0; i < static_cast<int>(ends_.size()); ++i) out.emplace_back(sliceStart(i), sliceStop(i));
        return out;
    }

private:
    int n() const { return static_cast<int>(w_.size()); }
    int sliceStart(int i) const { return pythonIndex(i > 0 ? ends_[static_cast<size_t>(i) - 1] : 0, n()); }
    int sliceStop(int i) const { return pythonIndex(ends_[static_cast<size_t>(i)], n()); }
    double blockSize(int i) const {
        double s = 0;  // summed left to right, as Python's sum() does
        for (int x = sliceStart(i); x < sliceStop(i); ++x) s += w_[static_cast<size_t>(x)];
        return s;
    }
    // Python's max()/min() over (size, index) tuples: ties go to the larger / smaller index.
    std::pair<double, int> largest() const {
        std::pair<double, int> best{blockSize(0), 0};
        for (int i = 1; i < static_cast<int>(ends_.size()); ++i) best = std::max(best, std::make_pair(blockSize(i), i));
        return best;
    }
    std::pair<double, int> smallest() const {
        std::pair<double, int> best{blockSize(0), 0};
        for (int i = 1; i < static_cast<int>(ends_.size()); ++i) best = std::min(best, std::make_pair(blockSize(i), i));
        return best;
    }

    std::vector<double> w_;
    std::vector<int> ends_;
};

// The blocks as stage ranges, or nothing when GPipe would reject them as a balance (an empty
// block, or blocks that do not tile the layers).
std::optional<std::vector<StageRange>> tiling(const std::vector<std::pair<int, int>>& blocks, int layers) {
    std::vector<StageRange> out;
    int expected = 0;
    for (const auto& [start, stop] : blocks) {
        if (start != expected || stop <= start) return std::nullopt;
        out.push_back({start, stop - 1});
        expected = stop;
    }
    if (expected != layers) return std::nullopt;
    return out;
}

}  // namespace

std::vector<StageRange> uniformPartition(int layers, int stages) {
    checkCounts(layers, stages, "uniform partition");
    std::vector<int> ends;
    const int base = layers / stages, extra = layers % stages;
    int end = 0;
    for (int s = 0; s < stages; ++s) {
        end += base + (s < extra ? 1 : 0);
        ends.push_back(end);
    }
    return rangesFromEnds(ends);
}

std::vector<StageRange> minMaxPartition(const std::vector<double>& weights, int stages) {
    checkWeights(weights, "min-max partition");
    checkCounts(static_cast<int>(weights.size()), stages, "min-max partition");
    const PrefixSums s(weights);
    const double limit = minMaxValue(s, stages);
    // Earliest cuts: each stage ends at the first layer that leaves a feasible remainder.
    std::vector<int> ends;
    size_t from = 0;
    for (int left = stages; left > 1; --left) {
        size_t end = from + 1;
        while (s.sum(from, end) > limit || !suffixFits(s, end, left - 1, limit)) {
            ++end;
            assert(end < s.size() && "the optimum always leaves a feasible remainder");
        }
        ends.push_back(static_cast<int>(end));
        from = end;
    }
    ends.push_back(static_cast<int>(s.size()));
    return rangesFromEnds(ends);
}

std::vector<StageRange> blockPartition(const std::vector<double>& weights, int stages) {
    checkWeights(weights, "block partition");
    checkCounts(static_cast<int>(weights.size()), stages, "block partition");
    BlockMoves moves(normalised(weights), stages);
    moves.solve();
    if (auto ranges = tiling(moves.blocks(), static_cast<int>(weights.size()))) return *ranges;
    return minMaxPartition(weights, stages);
}

}  // namespace hippie
