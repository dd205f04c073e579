#pragma once
// Program: a Plan lowered to one instruction stream per device. The simulator times it with
// the cost model; the engine executes the same instructions with LibTorch.
//
// Execution semantics (shared by simulator, validator and engine):
// - Compute instructions (Forward, Backward, BackwardInput, BackwardWeight, Recompute,
//   OptimizerStep) run one at a time, in program order, on the device's compute stream.
// - A compute instruction first waits for every Recv posted since the previous compute
//   instruction of its device. Recvs are posted early; only compute waits on them.
// - A Send follows the compute instruction that produced its tensor and starts when that
//   instruction has ended; sends on one (from, to) link go in program order.
// - AllReduce starts when every device of its group has reached it and its bucket's
//   gradients are ready (the compute instruction before it has ended); a device's
//   collectives run in program order on a collective stream beside compute.
// - OptimizerStep waits for every collective of its device posted before it.
// - ZeRO (Plan::zero_stage): ReduceScatter is posted like AllReduce (each member keeps its
//   1/n shard of the bucket's summed gradients). AllGather (each member's shard of a
//   bucket's parameters to all) starts when every member has reached it and the compute
//   instruction before it has started (a prefetch of the parameters the next compute needs),
//   or ended when that instruction is the OptimizerStep (it gathers the updated shards).
//   A compute instruction waits for every AllGather of its device posted before it.
// - Tensor parallelism (Plan::tp > 1): TensorParallel stands right after the compute
//   instruction (Forward, Recompute, Backward or BackwardInput) whose in-line collectives it
//   lists: Megatron's all-reduces of the row-parallel outputs (forward, recompute) and of the
//   column-parallel input gradients (backward), or with sequence parallelism a reduce-scatter
//   plus an all-gather of the same bytes each. They sit inside that compute, on the critical
//   path: the compute and its TensorParallel instruction run as one blocking unit over the
//   instruction's tp group (every member runs the same stream of compute instructions), the
//   GEMMs between the collectives on the compute stream and the collectives on the links of
//   the group. The engine runs them inside the layers' forward and backward; the simulator
//   times them from `count` and `bytes`. BackwardWeight has none (weight gradients are local).
// - ZeRO-3 (zero_stage 3): a stage's parameters are gathered layer by layer inside each
//   compute that uses them and freed after that layer, as FSDP and DeepSpeed's stage 3 do.
//   ZeroGather stands right after such a compute (Forward, Recompute, Backward or a bucket
//   part of it, BackwardInput; after its TensorParallel instruction when it has one) and lists
//   its all-gathers: `count` buckets (under ZeRO-3 a bucket is one layer's parameters, so one
//   gather per layer), `bytes` their sum, over `group`, the segment's data-parallel group.
//   zeroGatheredBuckets (zero_gathers.h) says which, in the order the compute uses them.
//   Like tp, the compute and its gathers are one blocking unit over the group: each layer's
//   gather is prefetched while the layer before it computes (two layers' parameters whole at
//   once), so the unit lasts as long as that two-stage pipeline does. BackwardWeight gathers
//   nothing (weight gradients need activations and output gradients, not weights).
//   Layout with tp > 1 (lower.cpp): every (replica r, tp rank k) is a lane, r * tp + k, as in
//   Plan::device_map; segment_devices[s][lane] is the lane's device, and each lane is a
//   pipeline of its own for sends and receives: rank k of a stage sends to rank k of the next.
//   Each rank sends the whole boundary activation (Megatron without its scatter-gather of
//   pipeline tensors), or its 1/tp sequence slice with sequence parallelism; a column-split
//   output is 1/tp on each rank either way. groups: first the data-parallel groups, one per
//   (segment, rank k): the lanes k, tp + k, ... of segment_devices; then the tensor-parallel
//   groups, one per (pipeline position, replica); then the tied-weight groups, one per rank
//   k. Buckets hold one rank's share of the gradients.
#include <cstdint>
#include <string>
#include <vector>

#include "planners/schedule/plan.h"

namespace hippie {

enum class InstrKind {
    Forward,
    Backward,        // input and weight gradients together
    BackwardInput,   // zb-h1 "B": gradient w.r.t. the segment's input only
    BackwardWeight,  // zb-h1 "W": gradient w.r.t. the segment's weights
    Recompute,       // the rebuilds of the segment's recomputed layers, which its backward runs one layer at a time
    SendActivation,
    RecvActivation,
    SendGrad,
    RecvGrad,
    AllReduce,
    ReduceScatter,   // ZeRO 2/3: gradient bucket summed, each member keeps its shard
    AllGather,       // ZeRO 1-3: parameter bucket gathered from the members' shards
    TensorParallel,  // the tp collectives inside the compute instruction before it (see above)
    ZeroGather,      // ZeRO-3: the per-layer parameter all-gathers inside the compute before it
    OptimizerStep    // last: loops over every kind run up to it
};
const char* toString(InstrKind k);
// Inline: lowering, the executor and the simulator ask them for every instruction.
// isCollective: AllReduce, ReduceScatter, AllGather. isTensorParallel: not a bucket collective
// (isCollective is false). isInline: TensorParallel or ZeroGather, part of the compute
// instruction before it.
inline bool isCollective(InstrKind k) {
    return k == InstrKind::AllReduce || k == InstrKind::ReduceScatter || k == InstrKind::AllGather;
}

inline bool isCompute(InstrKind k) {
    switch (k) {
    case InstrKind::Forward:
    case InstrKind::Backward:
    case InstrKind::BackwardInput:
    case InstrKind::BackwardWeight:
    case InstrKind::Recompute:
    case InstrKind::OptimizerStep: return true;
    default: return false;
    }
}

inline bool isSend(InstrKind k) { return k == InstrKind::SendActivation || k == InstrKind::SendGrad; }
inline bool isRecv(InstrKind k) { return k == InstrKind::RecvActivation || k == InstrKind::RecvGrad; }
inline bool isTensorParallel(InstrKind k) { return k == InstrKind::TensorParallel; }
inline bool isZeroGather(InstrKind k) { return k == InstrKind::ZeroGather; }
inline bool isInline(InstrKind k) { return isTensorParallel(k) || isZeroGather(k); }


// A unit of compute: a pipeline stage (or interleaved chunk), or a group of ops placed on one
// device. Its ops are listed in execution (topological) order.
struct Segment {
    std::vector<int> ops;
    int stage = -1;  // pipeline stage or chunk index; -1 for placement segments
};

// A group of one segment's parameters whose gradients are all-reduced together.
struct Bucket {
    int segment = 0;
    std::vector<int> ops;  // ops whose parameter gradients it holds
    int64_t bytes = 0;     // gradient bytes
    // A tied weight's gradient sum (tied_weights.h): `segment` owns the weight, tied_segment
    // holds its copy; not a data-parallel bucket of either.
    int tied_segment = -1;
};

struct Instr {
    InstrKind kind = InstrKind::Forward;
    int segment = -1;  // compute: segment run; p2p: segment whose output (or its gradient) moves
    int mb = -1;       // micro-batch (within the device's pipeline); -1 for step-wide instructions
    int peer = -1;     // p2p: the device sent to or received from
    int64_t bytes = 0; // p2p: bytes moved (for one micro-batch)
    int bucket = -1;   // collectives: index into Program::buckets; Backward/BackwardWeight: the
                       // bucket whose gradients this part completes (-1: whole segment)
    int group = -1;    // collectives: index into Program::groups
    // ReduceScatter: the micro-batch whose gradients it reduces (-1: all, at the end).
    // AllGather: the micro-batch of the compute it gathers for (-1: after the optimizer step).
    // TensorParallel: segment, mb as its compute instruction; `group` its tp group; `bytes` the
    // whole tensors of all its collectives summed (one micro-batch); `count` how many
    // collectives (all-reduces, or with sequence parallelism reduce-scatter + all-gather pairs);
    // `of` the compute kind it belongs to (Forward, Recompute, Backward or BackwardInput).
    // ZeroGather: segment, mb, bucket (a backward's bucket part) and `of` as its compute
    // instruction; `group` the segment's data-parallel group; `count` the buckets gathered,
    // `bytes` their bytes summed.
    int count = 0;
    InstrKind of = InstrKind::Forward;
    bool sequence_parallel = false;  // TensorParallel: reduce-scatter + all-gather pairs, not all-reduces

    // compact form: "0F3", "1B2", "AR0", "RS3", "RS3@1", "AG3", "AG3@1", "TPAR0F3" (the tp
    // all-reduces of 0F3), "TPSP0B3" (its sequence-parallel reduce-scatter + all-gather pairs),
    // "Z3AG0F3" (the ZeRO-3 gathers of 0F3), ...
    std::string str() const;
    bool operator==(const Instr&) const = default;
};

struct Program {
    ScheduleKind schedule = ScheduleKind::OneFOneB;
    double micro_batch_size = 1;   // samples per micro-batch
    int micro_batches = 1;         // per pipeline
    int pipelines = 1;             // data-parallel replicas
    int zero_stage = 0;            // Plan::zero_stage as lowered (0 when pipelines == 1)
    int tp = 1;                    // Plan::tp: devices of one tensor-parallel group (the widest segment's)
    // Plan::stage_tp by segment (empty: every segment has tp). A segment's lanes are r * t + k
    // with t its own degree; where two segments differ, lane (r, k) of one exchanges tensors
    // with lane (r, k mod t') of the other (deviceFor, devicesServedBy).
    std::vector<int> segment_tp;
    bool sequence_parallel = false;  // TensorParallel instructions are reduce-scatter + all-gather pairs
    std::vector<Segment> segments;
    std::vector<Bucket> buckets;
    std::vector<std::vector<int>> groups;        // all-reduce groups of global device ids
    std::vector<int> devices;                    // global device id of stream i
    std::vector<std::vector<Instr>> streams;     // streams[i] runs on devices[i]
    std::vector<std::vector<int>> segment_devices;  // devices holding each segment (one per replica and tp rank: lane r * t + k)
    // Per-stage replication (Plan::stage_replicas; tp 1): segments have replica counts of their
    // own, micro-batch numbers are the iteration's (0 .. pipelines x micro_batches - 1, pipelines
    // being the widest segment's replicas), and micro-batch m of segment s runs on its replica
    // m mod replicasOf(s), which sends to and receives from the replicas of the next and
    // previous segments that run m. False: each lane is a pipeline of its own, and its
    // micro-batches are numbered 0 .. micro_batches - 1.
    bool round_robin = false;
    std::vector<bool> recompute_op;               // by op id: activations recomputed in backward
    // by op id: recomputed by selective recomputation (Plan::selective_recompute), one attention
    // core at a time inside its block's backward; a subset of recompute_op. The Recompute
    // instruction times them; their outputs live only while their block's backward runs.
    std::vector<bool> selective_op;
    // The op's activations are recomputed in backward (recompute_op).
    bool recomputed(int op) const {
        const auto i = static_cast<size_t>(op);
        return i < recompute_op.size() && recompute_op[i];
    }
    // Recomputed one attention core at a time inside its block's backward (selective_op).
    bool recomputedInBlock(int op) const {
        const auto i = static_cast<size_t>(op);
        return i < selective_op.size() && selective_op[i];
    }
    // Recomputed with its whole layer (full recomputation), not only as an attention core.
    bool recomputedWithLayer(int op) const { return recomputed(op) && !recomputedInBlock(op); }
    // by segment: how full recomputation checkpoints it. True: every recomputed layer keeps its
    // outputs that other layers read (its checkpoints) and the backward rebuilds one layer at a
    // time (Megatron-LM, FSDP). False: only the segment's inputs are kept and the backward
    // rebuilds its recomputed layers together (GPipe's re-materialisation of a partition).
    // Lowering takes the one that holds less at the segment's peak: a layer at a time, unless
    // so many micro-batches are in flight (GPipe) that their checkpoints outweigh the rebuild
    // of the rest, or the backward is split (zb-h1 keeps every rebuild until W anyway); always
    // a layer at a time under ZeRO-3, which gathers one layer at a time. Empty: a layer at a time.
    std::vector<bool> recompute_per_layer;
    // The rule: a layer at a time when `held` micro-batches' checkpoints and the rebuild it
    // holds (the largest layer's, or every layer's under zb-h1) take no more than rebuilding
    // every recomputed layer (`all`) from the inputs. Also hippie's estimate.
    static bool checkpointsEachLayer(double held, double checkpoints, double rebuild, double all) {
        return held * checkpoints + rebuild <= all;
    }
    bool recomputesPerLayer(int segment) const {
        return recompute_per_layer.empty() || recompute_per_layer[static_cast<size_t>(segment)];
    }

    int tpOf(int segment) const;        // segment_tp[segment], or tp
    int replicasOf(int segment) const;  // segment_devices[segment].size() / tpOf(segment)
    // The device of `segment` that lane `lane` of segment `from` takes micro-batch `mb`'s
    // tensors from (its input activations, or its output gradients): the same replica's tp
    // rank k mod t (k the lane's rank in `from`, t the segment's degree), which with equal
    // degrees is the same lane; with round_robin the micro-batch's replica of `segment`.
    int deviceFor(int segment, int from, int lane, int mb) const;
    // The devices of `segment` that take micro-batch `mb`'s tensors from lane `lane` of `from`
    // (those whose deviceFor(from, segment, ...) is it), ascending: one with equal degrees,
    // several where `segment` has more tp ranks, none from ranks beyond its degree.
    std::vector<int> devicesServedBy(int segment, int from, int lane, int mb) const;
    // The micro-batches lane `lane` of `segment` runs, in order.
    std::vector<int> microBatchesOf(int segment, int lane) const;

    int streamOf(int device) const;  // -1 if the device runs nothing
    std::string str() const;         // one line per device: "d0: 0F0 0F1 0B0 ..."
};

}  // namespace hippie
