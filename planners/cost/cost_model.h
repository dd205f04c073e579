#pragma once
// Cost model: compute time of ops on devices, alpha-beta point-to-point and ring
// collectives, and the memory a device needs for a set of ops.
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie {

// FLOPs of an optimizer update, per parameter (read-modify-write of the states in fp32).
double optimizerFlopsPerParam(Optimizer o);
// Optimizer state bytes per parameter (momentum: 4, Adam: 8), master fp32 copy excluded.
int64_t optimizerStateBytesPerParam(Optimizer o);

// Tensor parallelism the costs are for (Plan::tp, Plan::sequence_parallel): the costs are
// those of one rank of a tensor-parallel group. Ops the graph splits (Op::tensor_parallel)
// run 1/tp of their FLOPs and hold 1/tp of their parameters and activations; the others run
// whole on every rank, or with sequence parallelism on 1/tp of the sequence (their
// parameters stay whole).
struct TensorSplit {
    int tp = 1;
    bool sequence_parallel = false;
};

// The tensor-parallel collectives of a set of ops for one micro-batch, in op order (bytes of
// the whole tensor; an all-reduce, or with sequence parallelism a reduce-scatter plus an
// all-gather of the same bytes). Forward: the partial sums of each Row op's output.
// Backward: the input gradient of each Column op that reads no split tensor, on each of its
// inputs (Megatron's conjugate f operator, where the region is entered).
struct TensorParallelTraffic {
    std::vector<int64_t> forward;
    std::vector<int64_t> backward;
};

// One op's share of tensorParallelTraffic: how many collectives and their whole tensors'
// bytes, forward and backward.
struct OpTensorParallelTraffic {
    int forward = 0;
    int backward = 0;
    int64_t forward_bytes = 0;
    int64_t backward_bytes = 0;
};

// The same without a cluster (lowering needs the traffic, not the times): CostModel's
// rankParamBytes and tensorParallelTraffic for `graph` under `split`, and the traffic of every
// op at once (one pass over the edges), indexed by op id, to sum over many op sets.
int64_t rankParamBytes(const Graph& graph, TensorSplit split, int op);
// Bytes a pass over an op moves when it reads and writes `activation_bytes` (Op::moved_bytes
// scaled to its samples) and holds `param_bytes`: forward once, backward twice. The probe
// counts its measured kernels' bytes with it, so their rates mean what the cost model reads.
double passBytes(double activation_bytes, double param_bytes, bool backward);

// The inverse, for a measured kind (DeviceSpec::kernels): one pass timed at a size where its
// overhead dominates and at one where its bytes do. The rate comes from the difference
// (memory bound), unless `bytes_rate` is false or the large size's FLOPs at `flops_per_s`
// alone take what it takes beyond the small size (then 0: the device's bandwidth); the
// overhead is what the small size takes beyond its work.
struct KernelPassTime {
    double bytes = 0, flops = 0, seconds = 0;
};
struct KernelPassFit {
    double bytes_per_s = 0, overhead_s = 0;
};
KernelPassFit fitKernelPass(const KernelPassTime& small, const KernelPassTime& large, double flops_per_s, bool bytes_rate);
double rankShare(const Op& op, TensorSplit split);
TensorParallelTraffic tensorParallelTraffic(const Graph& graph, TensorSplit split, std::span<const int> ops, double samples);
std::vector<OpTensorParallelTraffic> tensorParallelTrafficByOp(const Graph& graph, TensorSplit split, double samples);
// tensorParallelTrafficByOp for each degree asked for (a program's segments may have degrees of
// their own: Plan::stage_tp), computed once per degree.
class TensorParallelTrafficByDegree {
public:
    TensorParallelTrafficByDegree(const Graph& graph, bool sequence_parallel, double samples)
        : graph_(graph), sequence_parallel_(sequence_parallel), samples_(samples) {}
    const std::vector<OpTensorParallelTraffic>& of(int tp);

private:
    const Graph& graph_;
    bool sequence_parallel_;
    double samples_;
    std::map<int, std::vector<OpTensorParallelTraffic>> by_degree_;
};
// Share of an op's output a tensor-parallel rank holds when it leaves for another pipeline
// stage: a column-split output is 1/tp on each rank; any other output is whole on each rank
// (each rank sends it whole, as Megatron does without its scatter-gather of pipeline
// tensors) unless sequence parallelism splits it by sequence (1/tp).
double sentShare(const Op& producer, TensorSplit split);
// Bytes at `samples` samples of a size the graph gives for its batch size (CostModel::scaled).
int64_t scaledBytes(const Graph& graph, int64_t bytes_at_batch, double samples);

struct StaticMemory {
    int64_t params = 0;
    int64_t grads = 0;
    int64_t master_params = 0;  // fp32 copy under mixed precision
    int64_t optimizer_state = 0;
    int64_t comm_buffers = 0;   // gradient buckets in flight and p2p receive buffers
    int64_t gathered = 0;       // ZeRO-3: full parameters gathered for the compute in use
    int64_t total() const { return params + grads + master_params + optimizer_state + comm_buffers + gathered; }
};

class CostModel {
public:
    CostModel(const Graph& graph, const Cluster& cluster, TensorSplit split = {});

    const Graph& graph() const { return graph_; }
    const Cluster& cluster() const { return cluster_; }
    Precision precision() const { return graph_.source.precision; }
    const TensorSplit& split() const { return split_; }

    // One tensor-parallel rank's share of an op's FLOPs and activations (1, or 1/tp).
    double rankShare(int op) const;
    // One rank's parameter bytes of an op (split ops: 1/tp, rounded up).
    int64_t rankParamBytes(int op) const;
    // One rank's bytes of an op's output kept for backward (Op::keptBytes) for `samples` samples.
    int64_t activationBytes(int op, double samples) const;
    // Tensor-parallel collectives of `ops` for `samples` samples; empty with tp = 1.
    TensorParallelTraffic tensorParallelTraffic(std::span<const int> ops, double samples) const;

    // Seconds for `samples` samples on `device`. Profiled times win over FLOPs. Otherwise an
    // op's pass takes max((FLOPs + kernels x half_rate) / achievable rate, bytes moved /
    // memory bandwidth) + kernels x launch overhead: small kernels run below the device's
    // rate, memory-bound ones at its memory bandwidth, convolutions at its conv_efficiency of
    // the rate (DeviceSpec).
    double fwdTime(int op, double samples, int device) const;
    double bwdTime(int op, double samples, int device) const;          // input + weight grads
    double bwdWeightTime(int op, double samples, int device) const;    // weight-gradient share
    double bwdInputTime(int op, double samples, int device) const { return bwdTime(op, samples, device) - bwdWeightTime(op, samples, device); }
    double fwdTime(std::span<const int> ops, double samples, int device) const;
    double bwdTime(std::span<const int> ops, double samples, int device) const;
    double bwdWeightTime(std::span<const int> ops, double samples, int device) const;
    double optimizerTime(int64_t params, Optimizer o, int device) const;
    // Gradient accumulation: a backward after the first of the same layers in a step adds
    // each weighted op's new weight gradient into the one already held (autograd's
    // AccumulateGrad, `grad += new`: two reads and a write of the gradient's bytes, one add
    // kernel per op), at the add kernel's measured rate and overhead where the device has one,
    // else at its memory bandwidth and launch overhead. `shards`: what ZeRO 2 and 3 keep of a
    // gradient (dp) once each micro-batch's is reduce-scattered; 1 otherwise. 0 without a
    // memory bandwidth.
    double gradAccumulationTime(std::span<const int> ops, int device, int shards = 1) const;
    // The engine's data-parallel gradient buckets are memory-bound copies besides their
    // collective: before it, the gradients are flattened into one buffer (a read and a write
    // of the bucket's bytes); after it, the sum is averaged in place (Gloo has no average)
    // and copied back into the gradients (two reads and two writes). 0 without a memory
    // bandwidth.
    double bucketPackTime(int64_t bytes, int device) const;
    double bucketUnpackTime(int64_t bytes, int device) const;

    // latency + bytes / bandwidth; 0 for a device to itself. Across nodes, the transfer
    // shares its nodes' network ports with `sharing` flows in the same direction (itself
    // included; the simulator's average over the transfer's span, so it may be fractional):
    // bandwidth = min(link, ports of either node / sharing).
    double p2pTime(int64_t bytes, int from, int to, double sharing = 1) const;
    // Ring all-reduce 2(n-1)/n * bytes / bandwidth + 2(n-1) latency; when the group spans
    // nodes, hierarchical: reduce-scatter inside nodes, all-reduce across (one ring per local
    // rank), all-gather inside. The rings across nodes share each node's network ports with
    // each other: with `sharing` = s, each ring has the share of k * s flows (s > 1: other
    // collectives and transfers leave the node at the same time, k * (s - 1) flows of them).
    double allReduceTime(int64_t bytes, std::span<const int> group, double sharing = 1) const;
    // Ring reduce-scatter and all-gather of `bytes` (the whole buffer, not a shard): each
    // (n-1)/n * bytes / bandwidth + (n-1) latency, hierarchical across nodes as allReduceTime
    // (an all-reduce is a reduce-scatter followed by an all-gather).
    double reduceScatterTime(int64_t bytes, std::span<const int> group, double sharing = 1) const;
    double allGatherTime(int64_t bytes, std::span<const int> group, double sharing = 1) const;
    // The tensor-parallel collectives of one compute instruction (Instr::TensorParallel):
    // `count` all-reduces of `bytes` in all (or with sequence parallelism `count`
    // reduce-scatter + all-gather pairs, which a ring times the same), one after the other:
    // each pays its latency, bytes / count of bandwidth each.
    double tensorParallelTime(int64_t bytes, int count, std::span<const int> group, bool sequence_parallel, double sharing = 1) const;

    // Bytes a sample's activations take: ops scale linearly from the graph's batch size.
    int64_t scaled(int64_t bytes_at_batch, double samples) const;

    // Parameters, gradients, master weights and optimizer state for `ops` (one tensor-parallel
    // rank's share), plus bucket and
    // receive buffers (`dp` > 1 adds in-flight gradient buckets). ZeRO over `dp` replicas:
    // stage >= 1 keeps 1/dp of the optimizer state and master weights, >= 2 of the gradients,
    // 3 of the parameters, plus `gathered_bytes` of full parameters gathered for use.
    StaticMemory staticMemory(std::span<const int> ops, Optimizer o, int dp, int64_t bucket_bytes,
                              int64_t p2p_buffer_bytes, int zero_stage = 0, int64_t gathered_bytes = 0) const;
    // The same for ops whose rankParamBytes sum to `rank_param_bytes` (a caller that keeps
    // prefix sums of them over layers).
    StaticMemory staticMemoryOfParams(int64_t rank_param_bytes, Optimizer o, int dp, int64_t bucket_bytes, int64_t p2p_buffer_bytes,
                                      int zero_stage = 0, int64_t gathered_bytes = 0) const;

private:
    // One pass over an op: `flops` in `kernels` kernels moving `moved_bytes`; `backward` picks
    // the backward rate and overhead of a measured kernel (DeviceSpec::kernels).
    double passSeconds(const Op& op, double flops, double moved_bytes, int kernels, int device, bool backward) const;
    // Ring collective of `bytes` over `group`, `phases` halves (reduce-scatter or all-gather 1,
    // all-reduce 2): hierarchical across nodes.
    double ringCollectiveTime(double bytes, std::span<const int> group, double sharing, int phases) const;
    // Bandwidth a flow crossing node boundaries gets when `flows` flows leave `node` at once
    // (on average over the flow's span: a fraction where others come and go).
    double portShare(int node, double flows) const;

    const Graph& graph_;
    const Cluster& cluster_;
    TensorSplit split_;
};

}  // namespace hippie
