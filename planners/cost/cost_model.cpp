#include "planners/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "planners/common/error.h"

namespace hippie {

namespace {
// Adam: two moment updates, bias corrections, sqrt and divide: about a dozen FLOPs a
// parameter (the update is memory-bound on GPUs; this keeps the order of magnitude).
constexpr double kAdamFlopsPerParam = 12;
constexpr double kMomentumFlopsPerParam = 4;
constexpr double kSgdFlopsPerParam = 2;
// Share of an op's backward that computes weight gradients: for matmuls and convolutions
// the input- and weight-gradient products have the same FLOPs.
constexpr double kWeightGradShare = 0.5;
// Gradient buckets a data-parallel device holds in flight (one being filled, one reducing).
constexpr int64_t kBucketsInFlight = 2;
constexpr int64_t kFp32Bytes = 4;
// Kernels a pass launches: forward one; a weighted op's backward one for the input gradient
// and one for the weight gradient.
constexpr int kForwardKernels = 1;
constexpr int kWeightedBackwardKernels = 2;
constexpr double kBackwardTrafficFactor = 2.0;
// An optimizer step reads and writes each parameter's fp32 states, master copy and gradient:
// the update is memory bound on GPUs. It runs as one fused (multi-tensor) kernel.
constexpr double kOptimizerKernels = 1;
// Ops of this kind run at DeviceSpec::conv_efficiency of the matmul rate.
constexpr std::string_view kConvKind = "conv2d";
// The kernel table's element-wise add: the pattern of accumulating a gradient in place.
constexpr std::string_view kAddKind = "add";
// grad += new: read both, write the sum.
constexpr double kAccumulationPasses = 3;
}  // namespace

double optimizerFlopsPerParam(Optimizer o) {
    switch (o) {
    case Optimizer::SGD: return kSgdFlopsPerParam;
    case Optimizer::SGDMomentum: return kMomentumFlopsPerParam;
    case Optimizer::Adam:
    case Optimizer::AdamW: return kAdamFlopsPerParam;
    }
    return kAdamFlopsPerParam;
}

int64_t optimizerStateBytesPerParam(Optimizer o) {
    switch (o) {
    case Optimizer::SGD: return 0;
    case Optimizer::SGDMomentum: return kFp32Bytes;
    case Optimizer::Adam:
    case Optimizer::AdamW: return 2 * kFp32Bytes;  // exp_avg, exp_avg_sq
    }
    return 2 * kFp32Bytes;
}

CostModel::CostModel(const Graph& graph, const Cluster& cluster, TensorSplit split)
    : graph_(graph), cluster_(cluster), split_(split) {}

namespace {
bool isSplit(const Op& o) { return o.tensor_parallel != TensorParallel::Replicated; }
}  // namespace

double rankShare(const Op& op, TensorSplit split) {
    const bool divided = isSplit(op) || split.sequence_parallel;
    return divided && split.tp > 1 ? 1.0 / split.tp : 1.0;
}

double CostModel::rankShare(int op) const { return hippie::rankShare(graph_.ops[static_cast<size_t>(op)], split_); }

int64_t rankParamBytes(const Graph& graph, TensorSplit split, int op) {
    const Op& o = graph.ops[static_cast<size_t>(op)];
    if (!isSplit(o) || split.tp <= 1) return o.param_bytes;
    return (o.param_bytes + split.tp - 1) / split.tp;
}

double sentShare(const Op& producer, TensorSplit split) {
    if (split.tp <= 1) return 1.0;
    return producer.tensor_parallel == TensorParallel::Column || split.sequence_parallel ? 1.0 / split.tp : 1.0;
}

int64_t CostModel::rankParamBytes(int op) const { return hippie::rankParamBytes(graph_, split_, op); }

int64_t CostModel::activationBytes(int op, double samples) const {
    return scaled(graph_.ops[static_cast<size_t>(op)].keptBytes(), samples * rankShare(op));
}

TensorParallelTraffic tensorParallelTraffic(const Graph& graph, TensorSplit split, std::span<const int> ops, double samples) {
    TensorParallelTraffic t;
    if (split.tp <= 1) return t;
    std::vector<std::vector<const Edge*>> inputs(graph.ops.size());
    for (const Edge& e : graph.edges) inputs[static_cast<size_t>(e.dst)].push_back(&e);
    for (int op : ops) {
        const Op& o = graph.ops[static_cast<size_t>(op)];
        if (o.tensor_parallel == TensorParallel::Row) t.forward.push_back(scaledBytes(graph, o.output_bytes, samples));
        if (o.tensor_parallel != TensorParallel::Column) continue;
        // Only an op that reads nothing split enters the tensor-parallel region: one that reads a
        // split tensor is inside it already, and reads its whole inputs beside that on every rank
        // alike (BERT's NSP logits into the vocabulary-split loss), with no collective.
        const auto& in = inputs[static_cast<size_t>(op)];
        if (std::any_of(in.begin(), in.end(), [&](const Edge* e) { return isSplit(graph.ops[static_cast<size_t>(e->src)]); })) continue;
        for (const Edge* e : in) t.backward.push_back(scaledBytes(graph, e->bytes, samples));
    }
    return t;
}

const std::vector<OpTensorParallelTraffic>& TensorParallelTrafficByDegree::of(int tp) {
    auto it = by_degree_.find(tp);
    if (it == by_degree_.end())
        it = by_degree_.emplace(tp, tensorParallelTrafficByOp(graph_, TensorSplit{tp, sequence_parallel_}, samples_)).first;
    return it->second;
}

std::vector<OpTensorParallelTraffic> tensorParallelTrafficByOp(const Graph& graph, TensorSplit split, double samples) {
    std::vector<OpTensorParallelTraffic> out(graph.ops.size());
    if (split.tp <= 1) return out;
    for (size_t op = 0; op < graph.ops.size(); ++op)
        if (graph.ops[op].tensor_parallel == TensorParallel::Row) {
            out[op].forward = 1;
            out[op].forward_bytes = scaledBytes(graph, graph.ops[op].output_bytes, samples);
        }
    // As tensorParallelTraffic: only a Column op that reads nothing split enters the region.
    std::vector<bool> reads_split(graph.ops.size(), false);
    for (const Edge& e : graph.edges)
        if (isSplit(graph.ops[static_cast<size_t>(e.src)])) reads_split[static_cast<size_t>(e.dst)] = true;
    for (const Edge& e : graph.edges) {
        if (graph.ops[static_cast<size_t>(e.dst)].tensor_parallel != TensorParallel::Column || reads_split[static_cast<size_t>(e.dst)])
            continue;
        OpTensorParallelTraffic& t = out[static_cast<size_t>(e.dst)];
        ++t.backward;
        t.backward_bytes += scaledBytes(graph, e.bytes, samples);
    }
    return out;
}

TensorParallelTraffic CostModel::tensorParallelTraffic(std::span<const int> ops, double samples) const {
    return hippie::tensorParallelTraffic(graph_, split_, ops, samples);
}

double passBytes(double activation_bytes, double param_bytes, bool backward) {
    // Backward reads the output gradient and the saved input and writes the input gradient
    // (twice forward's activation traffic); a weighted op also reads its weights and writes
    // their gradient.
    return (backward ? kBackwardTrafficFactor : 1.0) * (activation_bytes + param_bytes);
}

KernelPassFit fitKernelPass(const KernelPassTime& small, const KernelPassTime& large, double flops_per_s, bool bytes_rate) {
    const auto compute = [&](const KernelPassTime& p) { return flops_per_s > 0 ? p.flops / flops_per_s : 0.0; };
    const double gap = large.seconds - small.seconds;
    double rate = bytes_rate && gap > 0 && large.bytes > small.bytes ? (large.bytes - small.bytes) / gap : 0.0;
    // Compute bound: the large size's FLOPs alone take the time it takes beyond the small one.
    if (compute(large) >= gap) rate = 0;
    const double work = std::max(compute(small), rate > 0 ? small.bytes / rate : 0.0);
    return {rate, std::max(0.0, small.seconds - work)};
}

double CostModel::passSeconds(const Op& op, double flops, double moved_bytes, int kernels, int device, bool backward) const {
    // An op without FLOPs (an input, a view) launches nothing.
    if (flops <= 0) return 0.0;
    const DeviceSpec& d = cluster_.device(device);
    // Convolution kernels reach a fraction of the device's matmul rate (the probe measures it).
    const double rate = d.achievableFlops(precision()) * (op.kind == kConvKind ? d.conv_efficiency : 1.0);
    // A kind measured on this device moves its bytes at its own rate, pays its own overhead
    // and may saturate at its own size.
    double half_rate = d.halfRateFlops(precision());
    double bandwidth = d.memory_bandwidth_bytes_per_s;
    double overhead = kernels * d.launch_overhead_s;
    if (const auto k = d.kernels.find(op.kind); k != d.kernels.end()) {
        const KernelTiming& t = k->second;
        if (t.half_rate_flops > 0) half_rate = t.half_rate_flops;
        if (const double measured = backward ? t.backward_bytes_per_s : t.forward_bytes_per_s; measured > 0) bandwidth = measured;
        overhead = backward ? t.backward_overhead_s : t.forward_overhead_s;
    }
    // rate(f) = R f / (f + h) per kernel, so a kernel of f FLOPs takes (f + h) / R.
    const double compute = rate > 0 ? (flops + kernels * half_rate) / rate : 0.0;
    const double memory = bandwidth > 0 ? moved_bytes / bandwidth : 0.0;
    return std::max(compute, memory) + overhead;
}

double CostModel::fwdTime(int op, double samples, int device) const {
    const Op& o = graph_.ops[static_cast<size_t>(op)];
    const double scale = samples / graph_.batch_size * rankShare(op);
    if (o.fwd_time_s) return *o.fwd_time_s * scale * cluster_.device(device).profiled_time_scale;
    const double moved = passBytes(static_cast<double>(o.moved_bytes) * scale, static_cast<double>(rankParamBytes(op)), /*backward=*/false);
    return passSeconds(o, o.fwd_flops * scale, moved, kForwardKernels, device, /*backward=*/false);
}

double CostModel::bwdTime(int op, double samples, int device) const {
    const Op& o = graph_.ops[static_cast<size_t>(op)];
    const double scale = samples / graph_.batch_size * rankShare(op);
    if (o.bwd_time_s) return *o.bwd_time_s * scale * cluster_.device(device).profiled_time_scale;
    // A weighted op computes its weight gradient in a second kernel.
    const bool weighted = o.param_bytes > 0;
    const double moved = passBytes(static_cast<double>(o.moved_bytes) * scale, static_cast<double>(rankParamBytes(op)), /*backward=*/true);
    return passSeconds(o, o.bwd_flops * scale, moved, weighted ? kWeightedBackwardKernels : kForwardKernels, device, /*backward=*/true);
}

double CostModel::bwdWeightTime(int op, double samples, int device) const {
    const Op& o = graph_.ops[static_cast<size_t>(op)];
    return o.param_bytes > 0 ? kWeightGradShare * bwdTime(op, samples, device) : 0.0;
}

double CostModel::fwdTime(std::span<const int> ops, double samples, int device) const {
    double s = 0;
    for (int op : ops) s += fwdTime(op, samples, device);
    return s;
}

double CostModel::bwdTime(std::span<const int> ops, double samples, int device) const {
    double s = 0;
    for (int op : ops) s += bwdTime(op, samples, device);
    return s;
}

double CostModel::bwdWeightTime(std::span<const int> ops, double samples, int device) const {
    double s = 0;
    for (int op : ops) s += bwdWeightTime(op, samples, device);
    return s;
}

double CostModel::optimizerTime(int64_t params, Optimizer o, int device) const {
    if (params <= 0) return 0.0;
    const DeviceSpec& d = cluster_.device(device);
    const double rate = d.achievableFlops(Precision::FP32);
    const double n = static_cast<double>(params);
    const double compute = rate > 0 ? n * optimizerFlopsPerParam(o) / rate : 0.0;
    // Read and write states and the fp32 weights; read the gradient (fp32 after unscaling).
    const double bytes_per_param = 2.0 * static_cast<double>(optimizerStateBytesPerParam(o) + kFp32Bytes) + kFp32Bytes;
    const double memory = d.memory_bandwidth_bytes_per_s > 0 ? n * bytes_per_param / d.memory_bandwidth_bytes_per_s : 0.0;
    return std::max(compute, memory) + kOptimizerKernels * d.launch_overhead_s;
}

double CostModel::gradAccumulationTime(std::span<const int> ops, int device, int shards) const {
    const DeviceSpec& d = cluster_.device(device);
    double bandwidth = d.memory_bandwidth_bytes_per_s, overhead = d.launch_overhead_s;
    if (const auto k = d.kernels.find(std::string(kAddKind)); k != d.kernels.end()) {
        if (k->second.forward_bytes_per_s > 0) bandwidth = k->second.forward_bytes_per_s;
        overhead = k->second.forward_overhead_s;
    }
    if (bandwidth <= 0) return 0.0;
    double bytes = 0;
    int kernels = 0;
    for (int op : ops) {
        const int64_t param = rankParamBytes(op);
        if (param <= 0) continue;
        bytes += kAccumulationPasses * static_cast<double>(param) / std::max(shards, 1);
        ++kernels;
    }
    return kernels > 0 ? bytes / bandwidth + kernels * overhead : 0.0;
}

namespace {
// Passes over a bucket's bytes, each a read or a write: flatten (read the gradients, write the
// buffer); average (read, write) and copy back (read, write).
constexpr double kBucketPackPasses = 2;
constexpr double kBucketUnpackPasses = 4;
}  // namespace

double CostModel::bucketPackTime(int64_t bytes, int device) const {
    const double bw = cluster_.device(device).memory_bandwidth_bytes_per_s;
    return bw > 0 ? kBucketPackPasses * static_cast<double>(bytes) / bw : 0.0;
}

double CostModel::bucketUnpackTime(int64_t bytes, int device) const {
    const double bw = cluster_.device(device).memory_bandwidth_bytes_per_s;
    return bw > 0 ? kBucketUnpackPasses * static_cast<double>(bytes) / bw : 0.0;
}

double CostModel::portShare(int node, double flows) const {
    return cluster_.egressBandwidth(node) / std::max(flows, 1.0);
}

double CostModel::p2pTime(int64_t bytes, int from, int to, double sharing) const {
    if (from == to) return 0.0;
    const Link& l = cluster_.link(from, to);
    double bandwidth = l.bandwidth_bytes_per_s;
    const int a = cluster_.nodeOf(from), b = cluster_.nodeOf(to);
    if (a != b) bandwidth = std::min({bandwidth, portShare(a, sharing), portShare(b, sharing)});
    return l.latency_s + static_cast<double>(bytes) / bandwidth;
}

namespace {
// Ring reduce-scatter (or all-gather): half of an all-reduce.
double ringHalf(double bytes, int n, const Link& l) {
    if (n <= 1) return 0.0;
    return static_cast<double>(n - 1) / n * bytes / l.bandwidth_bytes_per_s + (n - 1) * l.latency_s;
}
}  // namespace

double CostModel::ringCollectiveTime(double bytes, std::span<const int> group, double sharing, int phases) const {
    const int n = static_cast<int>(group.size());
    if (n <= 1 || bytes <= 0) return 0.0;
    std::map<int, int> per_node;
    for (int d : group) ++per_node[cluster_.nodeOf(d)];
    const double b = bytes;
    const Link& first = cluster_.link(group[0], group[1]);
    if (per_node.size() == 1) return phases * ringHalf(b, n, first);
    // Hierarchical: reduce-scatter inside each node, all-reduce of each shard across nodes
    // (k rings in parallel, one per local rank), all-gather inside. The slowest node sets the
    // pace. The k rings of a node, and any other collective leaving it at the same time,
    // share its network ports. A reduce-scatter (all-gather) is the first (second) half of
    // each: inside the node, then across (across, then inside).
    int k = 0;
    const Link* intra = nullptr;
    for (const auto& [node, count] : per_node) {
        if (count > k) {
            k = count;
            intra = &cluster_.nodes[static_cast<size_t>(node)].intra;
        }
    }
    double ring_bandwidth = cluster_.inter.bandwidth_bytes_per_s;
    for (const auto& [node, count] : per_node) ring_bandwidth = std::min(ring_bandwidth, portShare(node, count * std::max(sharing, 1.0)));
    const int nodes = static_cast<int>(per_node.size());
    const double local = k > 1 ? phases * ringHalf(b, k, *intra) : 0.0;
    const Link across{ring_bandwidth, cluster_.inter.latency_s};
    return local + phases * ringHalf(b / k, nodes, across);
}

double CostModel::allReduceTime(int64_t bytes, std::span<const int> group, double sharing) const {
    return ringCollectiveTime(static_cast<double>(bytes), group, sharing, 2);
}

double CostModel::reduceScatterTime(int64_t bytes, std::span<const int> group, double sharing) const {
    return ringCollectiveTime(static_cast<double>(bytes), group, sharing, 1);
}

double CostModel::allGatherTime(int64_t bytes, std::span<const int> group, double sharing) const {
    return ringCollectiveTime(static_cast<double>(bytes), group, sharing, 1);
}

double CostModel::tensorParallelTime(int64_t bytes, int count, std::span<const int> group, bool sequence_parallel, double sharing) const {
    if (count <= 0 || bytes <= 0) return 0.0;
    const double each = static_cast<double>(bytes) / count;
    // A reduce-scatter plus an all-gather is a ring all-reduce cut in its two halves.
    const double one = sequence_parallel ? 2 * ringCollectiveTime(each, group, sharing, 1) : ringCollectiveTime(each, group, sharing, 2);
    return count * one;
}

int64_t CostModel::scaled(int64_t bytes_at_batch, double samples) const { return scaledBytes(graph_, bytes_at_batch, samples); }

int64_t scaledBytes(const Graph& graph, int64_t bytes_at_batch, double samples) {
    const double bytes = static_cast<double>(bytes_at_batch) * samples / graph.batch_size;
    // llround of 2^63 or more is undefined: such a size is the input's error, said as the simulator says it.
    constexpr double kTwoPow63 = 9223372036854775808.0;
    if (!(bytes < kTwoPow63))
        throw Error("cost model: " + std::to_string(bytes_at_batch) + " bytes at batch " + std::to_string(graph.batch_size) +
                    " pass 2^63 bytes at " + std::to_string(samples) + " samples; the model's sizes are out of range");
    return static_cast<int64_t>(std::llround(bytes));
}

StaticMemory CostModel::staticMemory(std::span<const int> ops, Optimizer o, int dp, int64_t bucket_bytes,
                                     int64_t p2p_buffer_bytes, int zero_stage, int64_t gathered_bytes) const {
    int64_t params = 0;
    for (int op : ops) params += rankParamBytes(op);
    return staticMemoryOfParams(params, o, dp, bucket_bytes, p2p_buffer_bytes, zero_stage, gathered_bytes);
}

StaticMemory CostModel::staticMemoryOfParams(int64_t rank_param_bytes, Optimizer o, int dp, int64_t bucket_bytes,
                                             int64_t p2p_buffer_bytes, int zero_stage, int64_t gathered_bytes) const {
    StaticMemory m;
    m.params = rank_param_bytes;
    const int64_t count = m.params / activationElementBytes(precision());
    m.grads = m.params;
    m.master_params = isMixed(precision()) ? count * kFp32Bytes : 0;
    m.optimizer_state = count * optimizerStateBytesPerParam(o);
    m.comm_buffers = p2p_buffer_bytes;
    if (dp > 1) m.comm_buffers += std::min(m.grads, kBucketsInFlight * bucket_bytes);
    if (dp > 1 && zero_stage > 0) {
        // Each replica keeps its 1/dp shard (padded: the last shard is rounded up).
        const auto shard = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };
        m.master_params = shard(m.master_params);
        m.optimizer_state = shard(m.optimizer_state);
        if (zero_stage >= 2) m.grads = shard(m.grads);
        if (zero_stage >= 3) {
            m.params = shard(m.params);
            m.gathered = gathered_bytes;
        }
    }
    return m;
}

}  // namespace hippie
