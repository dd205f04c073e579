#include "planners/schedule/zero_gathers.h"

#include <algorithm>

#include "planners/schedule/tied_weights.h"

namespace hippie {

std::vector<int> zeroGatheredBuckets(const Program& prog, const Graph& graph, const Instr& compute) {
    if (prog.zero_stage < 3 || compute.segment < 0 || compute.segment >= static_cast<int>(prog.segments.size())) return {};
    const bool backward = compute.kind == InstrKind::Backward || compute.kind == InstrKind::BackwardInput;
    if (!backward && compute.kind != InstrKind::Forward && compute.kind != InstrKind::Recompute) return {};
    // The segment's data-parallel buckets this compute runs the ops of, in the order it runs them.
    std::vector<int> run;
    for (size_t b = 0; b < prog.buckets.size(); ++b) {
        const Bucket& bk = prog.buckets[b];
        if (bk.segment != compute.segment || bk.tied_segment >= 0) continue;
        if (compute.kind == InstrKind::Backward && compute.bucket >= 0 && compute.bucket != static_cast<int>(b)) continue;
        run.push_back(static_cast<int>(b));
    }
    // Buckets are cut from the end of their segment: the highest id holds its first layer.
    if (!backward) std::reverse(run.begin(), run.end());
    // A weight two layers share (an LM head reusing the embedding table) is the owner's to
    // shard: the user gathers the owner's bucket too when both are on the same devices.
    const std::vector<TiedWeightUse> ties = tiedWeights(graph);
    auto ownerBucket = [&](const TiedWeightUse& t) {
        for (size_t b = 0; b < prog.buckets.size(); ++b) {
            const Bucket& bk = prog.buckets[b];
            if (bk.tied_segment >= 0 || std::find(bk.ops.begin(), bk.ops.end(), t.owner_op) == bk.ops.end()) continue;
            const bool same_devices = prog.segment_devices[static_cast<size_t>(bk.segment)] ==
                                      prog.segment_devices[static_cast<size_t>(compute.segment)];
            return same_devices && bk.bytes > 0 ? static_cast<int>(b) : -1;
        }
        return -1;
    };
    std::vector<int> out;
    for (int b : run) {
        const Bucket& bk = prog.buckets[static_cast<size_t>(b)];
        auto uses = [&](auto&& pred) { return std::any_of(bk.ops.begin(), bk.ops.end(), pred); };
        const bool recompute = compute.kind == InstrKind::Recompute;
        // A rebuilt layer's backward runs right after its rebuild, with the parameters the
        // rebuild gathered (as FSDP's checkpointed layers do): the Recompute lists the gather.
        if (backward && uses([&](int op) { return prog.recomputedWithLayer(op); })) continue;
        for (const TiedWeightUse& t : ties) {
            const bool user_here = uses([&](int op) {
                return graph.ops[static_cast<size_t>(op)].layer == t.user_layer && (!recompute || prog.recomputed(op));
            });
            const int owner = user_here ? ownerBucket(t) : -1;
            if (owner >= 0) out.push_back(owner);
        }
        if (bk.bytes <= 0) continue;
        if (recompute && !uses([&](int op) { return prog.recomputed(op) && graph.ops[static_cast<size_t>(op)].param_bytes > 0; })) continue;
        out.push_back(b);
    }
    return out;
}

int64_t zeroGatherHeldBytes(const Program& prog, const std::vector<int>& buckets) {
    int64_t most = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
        int64_t held = prog.buckets[static_cast<size_t>(buckets[i])].bytes;
        if (i + 1 < buckets.size()) held += prog.buckets[static_cast<size_t>(buckets[i + 1])].bytes;
        most = std::max(most, held);
    }
    return most;
}

}  // namespace hippie
