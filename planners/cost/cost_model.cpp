#include "planners/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

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

CostModel::CostModel(const Graph& graph, const Cluster& cluster) : graph_(graph), cluster_(cluster) {}

double CostModel::computeSeconds(double flops, int device) const {
    const double rate = cluster_.device(device).achievableFlops(precision());
    return rate > 0 ? flops / rate : 0.0;
}

double CostModel::fwdTime(int op, double samples, int device) const {
    const Op& o = graph_.ops[static_cast<size_t>(op)];
    const double scale = samples / graph_.batch_size;
    if (o.fwd_time_s) return *o.fwd_time_s * scale * cluster_.device(device).profiled_time_scale;
    return computeSeconds(o.fwd_flops * scale, device);
}

double CostModel::bwdTime(int op, double samples, int device) const {
    const Op& o = graph_.ops[static_cast<size_t>(op)];
    const double scale = samples / graph_.batch_size;
    if (o.bwd_time_s) return *o.bwd_time_s * scale * cluster_.device(device).profiled_time_scale;
    return computeSeconds(o.bwd_flops * scale, device);
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
    const double rate = cluster_.device(device).achievableFlops(Precision::FP32);
    return rate > 0 ? static_cast<double>(params) * optimizerFlopsPerParam(o) / rate : 0.0;
}

double CostModel::p2pTime(int64_t bytes, int from, int to) const {
    if (from == to) return 0.0;
    const Link& l = cluster_.link(from, to);
    return l.latency_s + static_cast<double>(bytes) / l.bandwidth_bytes_per_s;
}

namespace {
// Ring all-reduce of `bytes` over n members of one link type.
double ringAllReduce(double bytes, int n, const Link& l) {
    if (n <= 1) return 0.0;
    return 2.0 * (n - 1) / n * bytes / l.bandwidth_bytes_per_s + 2.0 * (n - 1) * l.latency_s;
}
// Ring reduce-scatter (or all-gather): half of an all-reduce.
double ringHalf(double bytes, int n, const Link& l) {
    if (n <= 1) return 0.0;
    return static_cast<double>(n - 1) / n * bytes / l.bandwidth_bytes_per_s + (n - 1) * l.latency_s;
}
}  // namespace

double CostModel::allReduceTime(int64_t bytes, std::span<const int> group) const {
    const int n = static_cast<int>(group.size());
    if (n <= 1 || bytes <= 0) return 0.0;
    std::map<int, int> per_node;
    for (int d : group) ++per_node[cluster_.nodeOf(d)];
    const double b = static_cast<double>(bytes);
    if (per_node.size() == 1) return ringAllReduce(b, n, cluster_.link(group[0], group[1]));
    // Hierarchical: reduce-scatter inside each node, all-reduce of each shard across nodes
    // (k rings in parallel, one per local rank), all-gather inside each node. The slowest
    // node sets the pace.
    int k = 0;
    const Link* intra = nullptr;
    for (const auto& [node, count] : per_node) {
        if (count > k) {
            k = count;
            intra = &cluster_.nodes[static_cast<size_t>(node)].intra;
        }
    }
    const int nodes = static_cast<int>(per_node.size());
    const double local = k > 1 ? 2.0 * ringHalf(b, k, *intra) : 0.0;
    return local + ringAllReduce(b / k, nodes, cluster_.inter);
}

int64_t CostModel::scaled(int64_t bytes_at_batch, double samples) const {
    return static_cast<int64_t>(std::llround(static_cast<double>(bytes_at_batch) * samples / graph_.batch_size));
}

StaticMemory CostModel::staticMemory(std::span<const int> ops, Optimizer o, int dp, int64_t bucket_bytes,
                                     int64_t p2p_buffer_bytes) const {
    StaticMemory m;
    for (int op : ops) m.params += graph_.ops[static_cast<size_t>(op)].param_bytes;
    const int64_t count = m.params / activationElementBytes(precision());
    m.grads = m.params;
    m.master_params = isMixed(precision()) ? count * kFp32Bytes : 0;
    m.optimizer_state = count * optimizerStateBytesPerParam(o);
    m.comm_buffers = p2p_buffer_bytes;
    if (dp > 1) m.comm_buffers += std::min(m.grads, kBucketsInFlight * bucket_bytes);
    return m;
}

}  // namespace hippie
