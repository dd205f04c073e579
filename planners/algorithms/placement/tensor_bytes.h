#pragma once
// Bytes entering parts of a placement (a group, a segment, a device's share of a segment),
// counted as they move: a tensor (one producing op's output) enters a part once, however many
// of the part's edges read it, at the size of its largest edge.
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace hippie::placement {

// One edge into a part: the part (`to`, a key the caller packs, e.g. with pairKey), the op
// producing the tensor, the edge's bytes.
struct TensorEdge {
    int64_t to = 0;
    int op = 0;
    int64_t bytes = 0;
};

// Two non-negative ids as one key that sorts as the pair does.
inline int64_t pairKey(int first, int second) { return (static_cast<int64_t>(first) << 32) | static_cast<uint32_t>(second); }
inline std::pair<int, int> splitPairKey(int64_t key) { return {static_cast<int>(key >> 32), static_cast<int>(key & 0xFFFFFFFF)}; }

// For each part, in ascending key order: (part, its distinct tensors' bytes summed). Sorts
// `edges` (a placement has thousands of parts: sorted vectors, no maps).
inline std::vector<std::pair<int64_t, int64_t>> tensorBytesByPart(std::vector<TensorEdge>& edges) {
    std::sort(edges.begin(), edges.end(), [](const TensorEdge& a, const TensorEdge& b) { return std::tie(a.to, a.op, a.bytes) < std::tie(b.to, b.op, b.bytes); });
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t k = 0; k < edges.size(); ++k) {
        const TensorEdge& e = edges[k];
        const bool more = k + 1 < edges.size();
        if (more && edges[k + 1].to == e.to && edges[k + 1].op == e.op) continue;  // the op's largest edge is its last
        if (out.empty() || out.back().first != e.to) out.emplace_back(e.to, 0);
        out.back().second += e.bytes;
    }
    return out;
}

}  // namespace hippie::placement
