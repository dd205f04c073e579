#include "planners/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "planners/common/checked.h"
#include "planners/common/error.h"
#include "planners/schedule/execute.h"
#include "planners/schedule/zero_gathers.h"
#include "planners/sim/symmetry.h"

namespace hippie {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A device's memory is a sum of the sizes the graph gives per op. A model built far beyond any
// device (gpt3-13b with micro-batches of 2^20 sequences of 65,536 tokens) would wrap int64 and
// report a small, plausible peak; it is refused instead.
int64_t addBytes(int64_t a, int64_t b) {
    const std::optional<int64_t> sum = checked::add(a, b);
    if (!sum) throw Error("simulation: a device's memory passes 2^63 bytes; the model's sizes are out of range");
    return *sum;
}

// What one micro-batch of a segment allocates, in bytes at the program's micro-batch size.
//
// Full recomputation is activation checkpointing per layer, as Megatron-LM's full recompute and
// FSDP's checkpoint wrapper do: the forward keeps each recomputed layer's outputs that another
// layer reads (its checkpoints) and drops the rest; the backward rebuilds one layer at a time
// from its checkpoints, runs that layer's backward and frees the rebuild, so one layer's
// activations are live at once. The zb-h1 input pass keeps the graph for its weight pass, so
// there every rebuilt layer lives until the weight pass (W) ends. Where that holds more
// (Program::recompute_per_layer false: many micro-batches in flight), only the segment's
// inputs are kept and its recomputed layers are rebuilt together.
struct SegmentMemory {
    int64_t kept = 0;           // stashed for backward: the input, outputs of ops not recomputed, checkpoints
    // outputs rebuilt for backward, allocated from Recompute until the backward ends: the
    // largest one layer's rebuild (the largest one block's attention core under selective
    // recomputation, which rebuilds one at a time inside the block's backward), or every
    // recomputed layer's when the backward is split into input and weight passes
    int64_t recomputed = 0;
    int64_t sent_outputs = 0;   // outputs only other segments read: freed once sent (hippie)
    int64_t weight_inputs = 0;  // inputs of weighted ops, which the weight gradient (W) still needs
    int64_t temp = 0;           // largest op workspace, held while an instruction runs
    int buckets = 0;
};

// Bytes whole on every tensor-parallel rank and bytes split over the ranks (1/tp each).
struct RankBytes {
    int64_t whole = 0;
    int64_t split = 0;
    void add(int64_t bytes, double share) {
        int64_t& into = share < 1.0 ? split : whole;
        into = addBytes(into, bytes);
    }
    void add(const RankBytes& other) {
        whole = addBytes(whole, other.whole);
        split = addBytes(split, other.split);
    }
    // One rank's bytes at `samples` samples.
    int64_t at(const CostModel& cost, double samples) const {
        return addBytes(cost.scaled(whole, samples), cost.scaled(split, samples / std::max(cost.split().tp, 1)));
    }
};

// The largest of per-layer byte counts, at `samples` samples.
int64_t largestLayer(const std::map<int, RankBytes>& by_layer, const CostModel& cost, double samples) {
    int64_t most = 0;
    for (const auto& [layer, bytes] : by_layer) most = std::max(most, bytes.at(cost, samples));
    return most;
}

// `cost_of(segment)`: the cost model of that segment's tensor-parallel split.
template <class CostOf>
std::vector<SegmentMemory> segmentMemory(const Program& prog, const Graph& g, CostOf cost_of) {
    std::vector<int> seg_of(g.ops.size(), -1);
    for (size_t s = 0; s < prog.segments.size(); ++s)
        for (int op : prog.segments[s].ops) seg_of[static_cast<size_t>(op)] = static_cast<int>(s);
    std::vector<bool> split_backward(prog.segments.size(), false);  // zb-h1: input and weight passes
    for (const auto& stream : prog.streams)
        for (const Instr& in : stream)
            if (in.kind == InstrKind::BackwardInput) split_backward[static_cast<size_t>(in.segment)] = true;
    std::vector<SegmentMemory> out(prog.segments.size());
    std::vector<RankBytes> kept(prog.segments.size()), sent(prog.segments.size()), weight_inputs(prog.segments.size());
    std::vector<bool> read_inside(g.ops.size(), false), read_outside(g.ops.size(), false);
    const std::vector<bool> read_by_other_layer = g.readByAnotherLayer();
    std::vector<std::set<int>> inputs_from_outside(prog.segments.size());
    std::vector<RankBytes> input_bytes_of_op(g.ops.size());
    for (const Edge& e : g.edges) {
        const int a = seg_of[static_cast<size_t>(e.src)], b = seg_of[static_cast<size_t>(e.dst)];
        (a == b ? read_inside : read_outside)[static_cast<size_t>(e.src)] = true;
        // A rank holds what it received from another stage as it was sent (sentShare), and its
        // own ops' outputs as the cost model splits them (rankShare).
        const CostModel& producer = cost_of(a);
        const double share = a == b ? producer.rankShare(e.src) : sentShare(g.ops[static_cast<size_t>(e.src)], producer.split());
        if (a != b && inputs_from_outside[static_cast<size_t>(b)].insert(e.src).second) kept[static_cast<size_t>(b)].add(e.bytes, share);
        input_bytes_of_op[static_cast<size_t>(e.dst)].add(e.bytes, share);
    }
    const double b = prog.micro_batch_size;
    for (size_t s = 0; s < prog.segments.size(); ++s) {
        SegmentMemory& m = out[s];
        const CostModel& cost = cost_of(static_cast<int>(s));
        const bool per_layer = prog.recomputesPerLayer(static_cast<int>(s));
        std::map<int, RankBytes> selective, rebuilt;  // by layer: attention cores, wholly recomputed layers
        for (int op : prog.segments[s].ops) {
            const size_t i = static_cast<size_t>(op);
            const Op& o = g.ops[i];
            const double share = cost.rankShare(op);
            const bool one_block_at_a_time = prog.recomputedInBlock(op);
            const bool whole_layer = prog.recomputedWithLayer(op);
            // What backward keeps of an op (Op::keptBytes), whether stashed or rebuilt.
            if (one_block_at_a_time) selective[o.layer].add(o.keptBytes(), share);
            else if (whole_layer) rebuilt[o.layer].add(o.keptBytes(), share);
            // A checkpoint (a recomputed layer's output another layer reads) is stashed as well,
            // whole: the rebuild starts from it.
            const bool checkpoint = per_layer && whole_layer && read_by_other_layer[i];
            const bool stashed = !prog.recomputed(op) || checkpoint;
            const int64_t stash = checkpoint ? o.output_bytes : o.keptBytes();
            if (stashed) kept[s].add(stash, share);
            if (stashed && read_outside[i] && !read_inside[i]) sent[s].add(stash, share);
            if (o.param_bytes > 0) weight_inputs[s].add(input_bytes_of_op[i]);
            m.temp = std::max(m.temp, cost.scaled(o.temp_bytes, b * share));
        }
        m.kept = kept[s].at(cost, b);
        RankBytes all;
        for (const auto& [layer, bytes] : rebuilt) all.add(bytes);
        if (split_backward[s]) {
            m.recomputed = addBytes(all.at(cost, b), largestLayer(selective, cost, b));
        } else {
            // A rebuild and a block's core are never live at once: each lives only inside the
            // backward of its own layers.
            m.recomputed = std::max(per_layer ? largestLayer(rebuilt, cost, b) : all.at(cost, b), largestLayer(selective, cost, b));
        }
        m.sent_outputs = sent[s].at(cost, b);
        m.weight_inputs = std::min(weight_inputs[s].at(cost, b), m.kept);
        (void)addBytes(m.kept, m.recomputed);  // freed together after backward (memoryCurves)
    }
    for (const Bucket& bk : prog.buckets)
        if (bk.tied_segment < 0) ++out[static_cast<size_t>(bk.segment)].buckets;  // a tied weight's sum splits no backward
    return out;
}

// Per group: node -> its members on that node.
std::vector<std::map<int, int>> groupNodes(const Program& prog, const Cluster& c) {
    std::vector<std::map<int, int>> nodes(prog.groups.size());
    for (size_t g = 0; g < prog.groups.size(); ++g)
        for (int d : prog.groups[g]) ++nodes[g][c.nodeOf(d)];
    return nodes;
}

// countedGroupSharing from each group's nodes; with `only`, of those groups alone (1 for the others).
std::vector<int> sharingOf(const std::vector<std::map<int, int>>& group_nodes, const std::vector<bool>* only = nullptr) {
    const auto counted = [&](size_t g) { return group_nodes[g].size() > 1 && (only == nullptr || (*only)[g]); };
    std::map<int, int> groups_on_node;
    for (size_t g = 0; g < group_nodes.size(); ++g)
        if (counted(g))
            for (const auto& [n, members] : group_nodes[g]) ++groups_on_node[n];
    std::vector<int> sharing(group_nodes.size(), 1);
    for (size_t g = 0; g < group_nodes.size(); ++g)
        if (counted(g))
            for (const auto& [n, members] : group_nodes[g]) sharing[g] = std::max(sharing[g], groups_on_node[n]);
    return sharing;
}

// A compute whose layers each wait for a collective run a layer ahead (ZeRO-3's gathers): how
// much longer than its layers' compute alone it lasts. Layer i's collective starts once layer
// i-1's has ended and layer i-2's compute has (its parameters freed: two buffers); layer i
// computes once its collective and layer i-1's compute have ended. One layer of no compute is
// a collective after the compute, whole (a TensorParallel instruction's).
template <class ComputeAt, class CollectiveAt>
double pipelinedExposure(size_t layers, ComputeAt compute, CollectiveAt collective) {
    double gather_end = 0, compute_end = 0, compute_before = 0, computed = 0;
    for (size_t i = 0; i < layers; ++i) {
        const double c = compute(i), g = collective(i);
        gather_end = std::max(gather_end, compute_before) + g;
        compute_before = compute_end;
        compute_end = std::max(compute_end, gather_end) + c;
        computed += c;
    }
    return std::max(0.0, compute_end - computed);
}

class Simulation {
public:
    // The costs are those of one rank of each segment's tensor parallelism (Program::tpOf),
    // whatever split the caller's cost model was made for.
    Simulation(const Program& prog, const Plan& plan, const CostModel& cost, const SimOptions& opt)
        : prog_(prog), plan_(plan), cost_(cost.graph(), cost.cluster(), splitOf(prog, prog.tp)), opt_(opt) {
        for (size_t seg = 0; seg < prog.segments.size(); ++seg)
            for (int d : prog.segment_devices[seg]) segment_of_device_.emplace(d, static_cast<int>(seg));
        const Cluster& c = cost_.cluster();
        node_of_.resize(static_cast<size_t>(c.deviceCount()));
        for (size_t n = 0, d = 0; n < c.nodes.size(); ++n)
            for (int k = 0; k < c.nodes[n].devices; ++k) node_of_[d++] = static_cast<int>(n);
        stream_of_device_.assign(node_of_.size(), 0);
        for (size_t s = 0; s < prog.devices.size(); ++s) stream_of_device_[static_cast<size_t>(prog.devices[s])] = s;
        mem_ = segmentMemory(prog, cost.graph(), [this](int segment) -> const CostModel& { return segmentCost(segment); });
        countPortSharing();
        if (opt_.repeat_symmetric_streams) representative_ = symmetricRepresentatives(prog_, cost_.cluster(), group_sharing_);
        // Where hosts are not shared, copies' shares are their representatives' (their ports'
        // times are copied too, sharePorts), so every run copies timings and the copies' flows
        // need not be listed.
        if (opt_.measure_port_sharing && findHotPorts()) listPortFlows(!representative_.empty() && !sharedHosts());
        timeGradAccumulation();
    }

    Trace run() {
        ExecutionDurations d;
        d.compute = [this](int s, const Instr& in) {
            const auto i = static_cast<size_t>(&in - prog_.streams[static_cast<size_t>(s)].data());
            const double t = computeTime(prog_.devices[static_cast<size_t>(s)], in) + accumulation_s_[static_cast<size_t>(s)][i];
            return compute_scale_.empty() ? t : t * compute_scale_[static_cast<size_t>(s)][i];
        };
        d.transfer = [this](const Instr& in, int from, int to) {
            return flowTime(stream_of_device_[static_cast<size_t>(from)], in, cost_.p2pTime(in.bytes, from, to));
        };
        d.collective = [this](int s, const Instr& in) { return flowTime(static_cast<size_t>(s), in, collectiveTime(in, 1.0)); };
        d.tensor_parallel = [this](int s, const Instr& in) {
            const auto key = std::make_tuple(in.group, in.count, in.bytes, in.sequence_parallel);
            auto it = tensor_parallel_s_.find(key);
            if (it == tensor_parallel_s_.end()) {
                const auto& group = prog_.groups[static_cast<size_t>(in.group)];
                it = tensor_parallel_s_.emplace(key, cost_.tensorParallelTime(in.bytes, in.count, group, in.sequence_parallel, group_sharing_[static_cast<size_t>(in.group)])).first;
            }
            return flowTime(static_cast<size_t>(s), in, it->second);
        };
        d.zero_gather = [this](int s, const Instr& in) {
            return flowTime(static_cast<size_t>(s), in, zeroGatherExposedTime(prog_.devices[static_cast<size_t>(s)], in));
        };
        ExecutionResult res = shareHostsAndPorts(d, executeOnce(d));

        Trace t;
        t.devices = prog_.devices;
        for (int dev : prog_.devices) t.capacity_bytes.push_back(cost_.cluster().device(dev).usableBytes());
        if (opt_.record_events) recordEvents(res, t);
        memoryCurves(res, t);
        metrics(res, t);
        return t;
    }

private:
    // Network ports are shared by what leaves a node at once. Cross-node sends, bucket
    // collectives (all-reduce, reduce-scatter, all-gather) and the collectives inside a
    // compute (tensor-parallel, ZeRO-3 gathers) are measured from the run's timeline
    // (sharePorts). Before that, and where no port can slow a flow, an in-compute collective
    // counts the multi-node groups with a member on its nodes (group_sharing_).
    void countPortSharing() {
        const Cluster& c = cost_.cluster();
        group_inline_.assign(prog_.groups.size(), false);
        for (size_t s = 0; s < prog_.streams.size(); ++s)
            for (const Instr& in : prog_.streams[s]) {
                if (isSend(in.kind) && in.peer >= 0 && nodeOf(prog_.devices[s]) != nodeOf(in.peer)) cross_pairs_.insert({prog_.devices[s], in.peer});
                if (isInline(in.kind) && in.group >= 0 && static_cast<size_t>(in.group) < group_inline_.size()) group_inline_[static_cast<size_t>(in.group)] = true;
            }
        group_nodes_ = groupNodes(prog_, c);
        group_sharing_ = sharingOf(group_nodes_);
        inline_sharing_ = sharingOf(group_nodes_, &group_inline_);
    }

    // Gradient accumulation (CostModel::gradAccumulationTime): a stream's weight-gradient
    // computes (Backward, its bucket parts, BackwardWeight) of a segment for any micro-batch
    // but the first whose gradients it computes add them into those already held. Under ZeRO
    // 2 and 3 the held gradient is the replica's shard.
    void timeGradAccumulation() {
        accumulation_s_.resize(prog_.streams.size());
        std::map<std::tuple<int, int, int>, double> by_ops;  // (segment, bucket, node) -> seconds
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            const int device = prog_.devices[s];
            const int shards = prog_.zero_stage >= 2 ? replicasOn(device) : 1;
            std::map<int, int> first_mb;  // segment -> micro-batch of its first weight gradients here
            accumulation_s_[s].assign(prog_.streams[s].size(), 0.0);
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                if (in.kind != InstrKind::Backward && in.kind != InstrKind::BackwardWeight) continue;
                if (first_mb.try_emplace(in.segment, in.mb).first->second == in.mb) continue;
                const int bucket = in.kind == InstrKind::Backward ? in.bucket : -1;
                const auto key = std::make_tuple(in.segment, bucket, nodeOf(device));
                auto it = by_ops.find(key);
                if (it == by_ops.end()) {
                    const auto& ops = bucket >= 0 ? prog_.buckets[static_cast<size_t>(bucket)].ops : prog_.segments[static_cast<size_t>(in.segment)].ops;
                    it = by_ops.emplace(key, segmentCost(in.segment).gradAccumulationTime(ops, device, shards)).first;
                }
                accumulation_s_[s][i] = it->second;
            }
        }
    }

    // Devices that time-share a host's cores (Node::compute_slots) compute slower while others
    // on the host use the cores too: each compute instruction takes its own time times
    // max(1, a / slots), a being the activities on the node's cores averaged over its span
    // (itself included). Computes and transfers both count: on such a host the kernel copies
    // every byte a rank sends or receives (loopback), and a collective copies and sums on
    // every member's cores. Transfers keep their own times (the links' share models them).
    //
    // Flows that leave a node share its network ports (sharePorts): each cross-node send and
    // collective gets its nodes' ports divided by the flows on them averaged over its span.
    //
    // Spans and shares depend on each other, so the program runs again with the factors the
    // last run gives, until no time moves by more than kSharingTolerance or after
    // kSharingRounds runs. Host factors are damped each run (geometric mean with the previous
    // ones), a port share only when it turns back. The first run gives every flow its whole
    // link (a share of 1), so a program whose flows do not meet runs once.
    static constexpr int kSharingRounds = 8;
    static constexpr double kSharingTolerance = 0.005;

    // One run of the program. Streams that repeat another's timing (representative_, from
    // symmetry.h) are copied from it instead of run, while the shares measured so far are the
    // same for both, instruction by instruction (host and port sharing are measured per
    // stream, and a node busier than another's breaks the symmetry): then the run of every
    // stream would give both the same timing.
    ExecutionResult executeOnce(const ExecutionDurations& d) const {
        std::vector<bool> runs;
        if (!representative_.empty() && measuredSharesRepeat()) {
            runs.resize(representative_.size());
            for (size_t s = 0; s < runs.size(); ++s) runs[s] = representative_[s] == s;
        }
        ExecutionResult res = execute(prog_, d, runs);
        if (!res.finished) throw Error("the program deadlocks: " + res.stuck.front());
        if (!runs.empty())
            for (size_t s = 0; s < runs.size(); ++s)
                if (!runs[s]) res.timing[s] = res.timing[representative_[s]];
        return res;
    }

    bool measuredSharesRepeat() const {
        for (size_t s = 0; s < representative_.size(); ++s) {
            const size_t r = representative_[s];
            if (r == s) continue;
            if (!compute_scale_.empty() && compute_scale_[s] != compute_scale_[r]) return false;
            if (!port_time_.empty() && port_time_[s] != port_time_[r]) return false;
        }
        return true;
    }

    ExecutionResult shareHostsAndPorts(const ExecutionDurations& d, ExecutionResult res) {
        const bool shared_hosts = sharedHosts();
        const bool shared_ports = !flows_.empty() || !inline_flows_.empty();
        if (!shared_hosts && !shared_ports) return res;
        double last_span = -1;
        bool ports_settled = false;
        for (int round = 0; round < kSharingRounds; ++round) {
            double moved = 0;
            if (shared_hosts) {
                std::vector<std::vector<double>> next = sharingFactors(res);
                for (size_t s = 0; s < next.size(); ++s)
                    for (size_t i = 0; i < next[s].size(); ++i) {
                        // The first run's factors are taken as they are (the run before had none).
                        const double previous = compute_scale_.empty() ? 1.0 : compute_scale_[s][i];
                        if (!compute_scale_.empty()) next[s][i] = std::sqrt(next[s][i] * previous);
                        moved = std::max(moved, std::abs(std::log(next[s][i] / previous)));
                    }
                compute_scale_ = std::move(next);
            }
            if (shared_ports) {
                // Flows that meet or not by a hair can swap places run after run, so the ports
                // have settled when no flow's time moves or when the step's length no longer does.
                const double flows_moved = sharePorts(res);
                const double span = makespan(res);
                if (last_span > 0 && std::abs(std::log(span / last_span)) <= kSharingTolerance) ports_settled = true;
                if (!ports_settled) moved = std::max(moved, flows_moved);
                last_span = span;
            }
            if (moved <= kSharingTolerance) break;
            res = executeOnce(d);
        }
        return res;
    }

    // Whether devices of the program time-share a host's cores (Node::compute_slots).
    bool sharedHosts() const {
        const Cluster& c = cost_.cluster();
        return std::any_of(prog_.devices.begin(), prog_.devices.end(),
                           [&](int dev) { return c.nodes[static_cast<size_t>(c.nodeOf(dev))].compute_slots > 0; });
    }

    static double makespan(const ExecutionResult& res) {
        double end = 0;
        for (const auto& stream : res.timing)
            for (const InstrTiming& t : stream) end = std::max(end, t.end);
        return end;
    }

    // The share of the ports beyond which a cross-node send slows: its nodes' ports over its
    // link's bandwidth (CostModel::p2pTime).
    double sendKnee(int from, int to) const {
        const Cluster& c = cost_.cluster();
        return std::min(c.egressBandwidth(nodeOf(from)), c.egressBandwidth(nodeOf(to))) / c.link(from, to).bandwidth_bytes_per_s;
    }

    // The same for each ring of a multi-node group's collective: the least of its nodes' ports
    // over their members' rings at the inter-node bandwidth (CostModel::ringCollectiveTime).
    double ringKnee(size_t group) const {
        const Cluster& c = cost_.cluster();
        double knee = std::numeric_limits<double>::infinity();
        for (const auto& [node, members] : group_nodes_[group]) knee = std::min(knee, c.egressBandwidth(node) / (members * c.inter.bandwidth_bytes_per_s));
        return knee;
    }

    // Ports are numbered node * 2 + direction (0 leaving the node, 1 entering it).
    //
    // The most flows a port can carry at once: a device sends to one peer at a time (the
    // executor's links) and runs one collective at a time, so at most the distinct cross-node
    // (from, to) pairs on the port plus the devices of its node in multi-node groups. A port is
    // hot when that many could slow one of its flows (Cluster::egressBandwidth below the
    // link's bandwidth for a send, the inter-node link's for each ring of a collective); the
    // ports are measured only where one is. Where none is, no flow can slow: every one runs
    // at its link's bandwidth.
    bool findHotPorts() {
        const Cluster& c = cost_.cluster();
        const size_t ports = 2 * c.nodes.size();
        std::vector<double> most(ports, 0.0), slows_above(ports, std::numeric_limits<double>::infinity());
        for (const auto& [from, to] : cross_pairs_) {
            const double binds = sendKnee(from, to);
            for (const int p : {2 * nodeOf(from), 2 * nodeOf(to) + 1}) {
                most[static_cast<size_t>(p)] += 1;
                slows_above[static_cast<size_t>(p)] = std::min(slows_above[static_cast<size_t>(p)], binds);
            }
        }
        // A device runs a bucket collective and, inside its compute, an in-compute one at once.
        std::vector<std::set<int>> in_groups(c.nodes.size()), in_inline_groups(c.nodes.size());
        for (size_t g = 0; g < prog_.groups.size(); ++g) {
            if (group_nodes_[g].size() < 2) continue;
            for (int d : prog_.groups[g]) {
                in_groups[static_cast<size_t>(nodeOf(d))].insert(d);
                if (group_inline_[g]) in_inline_groups[static_cast<size_t>(nodeOf(d))].insert(d);
            }
            const double binds = ringKnee(g);  // per ring
            for (const auto& [node, members] : group_nodes_[g])
                for (const int p : {2 * node, 2 * node + 1}) slows_above[static_cast<size_t>(p)] = std::min(slows_above[static_cast<size_t>(p)], binds * members);
        }
        port_hot_.assign(ports, false);
        bool any = false;
        for (size_t p = 0; p < ports; ++p) {
            port_hot_[p] = most[p] + static_cast<double>(in_groups[p / 2].size() + in_inline_groups[p / 2].size()) > slows_above[p];
            any = any || port_hot_[p];
        }
        return any;
    }

    // A flow's time at a share s of its ports (s >= 1): alone + slope * max(0, s - knee). A flow
    // has its link's bandwidth until its share of the ports falls below it (the knee), and from
    // there its bytes across nodes take longer in proportion (CostModel::p2pTime,
    // ringCollectiveTime).
    struct ShareCurve {
        double alone = 0, knee = 1, slope = 0;
        double time(double share) const { return alone + slope * std::max(0.0, share - knee); }
    };

    // A flow across node boundaries: a send, or one instance of a collective (found by its
    // group's first device's instruction; `members` lists every member's, that one included),
    // with its time at a share of the ports.
    struct PortFlow : ShareCurve {
        size_t stream = 0, index = 0;
        int from_node = -1, to_node = -1;      // a send's nodes (-1: a collective)
        size_t first_member = 0, members = 0;  // a collective's: in flow_members_, and nodes: in flow_nodes_
        size_t first_node = 0, nodes = 0;
        int ports = -1;  // the flow's ports and knee, numbered: flows of the same are counted alike (sharePorts)
        int copies = 0;  // flows of streams repeating this one's, not listed (findPortFlows)
    };

    // A collective inside a compute (tensor-parallel, ZeRO-3 gathers) over a multi-node group,
    // as layers: each a compute alone and a collective with its time at a share of the ports.
    // ZeRO-3's are the layers of its compute and their gathers, run a layer ahead; a
    // TensorParallel instruction's one layer of no compute and its collectives summed
    // (pipelinedExposure).
    struct InlineCurve {
        struct Layer {
            double compute = 0;
            ShareCurve collective;
        };
        std::vector<Layer> layers;
        // Seconds the collectives keep the ports busy.
        double busy(double share) const {
            double t = 0;
            for (const Layer& l : layers) t += l.collective.time(share);
            return t;
        }
        // How much longer than its compute alone the unit lasts.
        double exposed(double share) const {
            return pipelinedExposure(layers.size(), [&](size_t i) { return layers[i].compute; }, [&](size_t i) { return layers[i].collective.time(share); });
        }
    };

    // One instance of an in-compute collective over a multi-node group (the k-th of the group
    // on every member), found by its group's first device's instruction.
    struct InlineFlow {
        size_t stream = 0, index = 0;
        size_t compute = 0;      // the compute instruction its collectives belong to, on `stream`
        bool whole_unit = true;  // ZeroGather: its ports are busy from the compute's start
        size_t first_member = 0, members = 0;  // in flow_members_: every member's instruction
        size_t first_node = 0, nodes = 0;      // in flow_nodes_
        int curve = -1;                        // in inline_curves_
        double sharing = 1;                    // in-compute collectives on its nodes (inline_sharing_)
    };

    // A span of flows: start, end and the flows' ports (PortFlow::ports).
    struct SpanKey {
        double start, end;
        int ports;
        bool operator==(const SpanKey&) const = default;
    };
    struct SpanKeyHash {
        size_t operator()(const SpanKey& k) const {
            const size_t a = std::hash<double>{}(k.start), b = std::hash<double>{}(k.end);
            return (a * 0x9E3779B97F4A7C15ULL) ^ (b + 0x7F4A7C15ULL + (a << 6)) ^ static_cast<size_t>(k.ports);
        }
    };
    static constexpr size_t kNoSpan = static_cast<size_t>(-1);
    static constexpr size_t kNoMember = static_cast<size_t>(-1);

    // A flow's time curve from the cost model: `at(s)` its time at share s (s >= 1).
    template <class At>
    static void fitShareCurve(ShareCurve& f, double binds_above, At at) {
        f.alone = at(1.0);
        f.knee = std::max(1.0, binds_above);
        f.slope = at(2 * f.knee) - at(f.knee);
        f.slope /= f.knee;
    }

    // The flows of the program (findPortFlows), those of streams that repeat another's timing
    // counted on their twins where `skip_copies` and every one has a twin; all of them listed
    // otherwise.
    // Their shares start at a share of 1 (an in-compute flow's at its groups' count), their
    // times unmeasured (-1: the time alone, flowTime).
    void listPortFlows(bool skip_copies) {
        if (!skip_copies || !findPortFlows(true)) {
            flows_.clear();
            flow_members_.clear();
            flow_nodes_.clear();
            findPortFlows(false);
        }
        flow_share_.assign(flows_.size(), 1.0);
        flow_step_.assign(flows_.size(), 0.0);
        inline_share_.clear();
        for (const InlineFlow& f : inline_flows_) inline_share_.push_back(f.sharing);
        inline_step_.assign(inline_flows_.size(), 0.0);
        port_time_.resize(prog_.streams.size());
        for (size_t s = 0; s < prog_.streams.size(); ++s) port_time_[s].assign(prog_.streams[s].size(), -1.0);
    }

    // Every cross-node send and multi-node collective instance of the program. The k-th
    // collective of a group on each member's stream is one instance. With `skip_copies`, a
    // flow of a stream that repeats another's timing (representative_) is not listed but
    // counted on its twin, the same instruction's flow of that stream on the same ports
    // (PortFlow::copies); where one has no twin, nothing is listed and it returns false.
    bool findPortFlows(bool skip_copies) {
        const Cluster& c = cost_.cluster();
        // Each multi-node group's collective instances: the k-th of every member, flat
        // ([group][k * members + j]: stream and instruction of member j's k-th; kNoMember
        // where a malformed program's member posts fewer), members in stream order.
        std::vector<size_t> posted(prog_.groups.size() * prog_.streams.size(), 0);  // [group * streams + s]
        // In-compute collectives over multi-node groups: [group * streams + s] -> their instructions.
        std::vector<std::vector<size_t>> inline_posted(prog_.groups.size() * prog_.streams.size());
        // Streams whose flows are listed, and whose members' instructions the flows name: with
        // `skip_copies` the representatives alone (the others take their times, sharePorts).
        const auto listed = [&](size_t s) { return !skip_copies || representative_[s] == s; };
        size_t sends = 0;
        for (size_t s = 0; s < prog_.streams.size(); ++s)
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                if (isSend(in.kind) && in.peer >= 0 && nodeOf(prog_.devices[s]) != nodeOf(in.peer)) ++sends;
                if (in.group < 0 || group_nodes_[static_cast<size_t>(in.group)].size() < 2) continue;
                if (isCollective(in.kind) && listed(s)) ++posted[static_cast<size_t>(in.group) * prog_.streams.size() + s];
                else if (isInline(in.kind)) inline_posted[static_cast<size_t>(in.group) * prog_.streams.size() + s].push_back(i);
            }
        std::vector<std::vector<std::pair<size_t, size_t>>> instances(prog_.groups.size());
        std::vector<size_t> group_members(prog_.groups.size(), 0), member_index(prog_.groups.size() * prog_.streams.size(), 0);
        size_t collectives = 0, member_slots = 0;
        for (size_t g = 0; g < prog_.groups.size(); ++g) {
            size_t most = 0;
            for (size_t s = 0; s < prog_.streams.size(); ++s) {
                const size_t at = g * prog_.streams.size() + s;
                most = std::max(most, posted[at]);
                if (posted[at] > 0) member_index[at] = group_members[g]++;  // member j: the j-th stream posting to g
            }
            instances[g].assign(most * group_members[g], {kNoMember, 0});
            collectives += most;
            member_slots += most * group_members[g];
        }
        size_t inline_slots = 0;
        for (const auto& list : inline_posted) inline_slots += list.size();
        flows_.reserve(sends + collectives);
        flow_members_.reserve(member_slots + inline_slots);
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            if (!listed(s)) continue;
            std::vector<size_t> k(prog_.groups.size(), 0);
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                if (!isCollective(in.kind) || group_nodes_[static_cast<size_t>(in.group)].size() < 2) continue;
                const auto g = static_cast<size_t>(in.group);
                instances[g][k[g]++ * group_members[g] + member_index[g * prog_.streams.size() + s]] = {s, i};
            }
        }
        // PortFlow::ports: sends by (from node, to node, knee), collectives by (knee, nodes),
        // found once per group.
        int port_sets = 0;
        std::map<std::tuple<int, int, double>, int> send_ports;
        std::map<std::pair<double, std::vector<std::pair<int, int>>>, int> collective_ports;
        std::unordered_map<int, int> ports_of_group;
        const auto portsOfSend = [&](const PortFlow& f) {
            const auto [it, added] = send_ports.try_emplace({f.from_node, f.to_node, f.knee}, port_sets);
            if (added) ++port_sets;
            return it->second;
        };
        const auto portsOfCollective = [&](const PortFlow& f, int group) {
            if (const auto it = ports_of_group.find(group); it != ports_of_group.end()) return it->second;
            std::vector<std::pair<int, int>> on(flow_nodes_.begin() + static_cast<std::ptrdiff_t>(f.first_node),
                                                flow_nodes_.begin() + static_cast<std::ptrdiff_t>(f.first_node + f.nodes));
            const auto [it, added] = collective_ports.try_emplace({f.knee, std::move(on)}, port_sets);
            if (added) ++port_sets;
            return ports_of_group[group] = it->second;
        };
        std::vector<size_t> group_first_node(prog_.groups.size(), kNoMember);  // in flow_nodes_
        std::vector<size_t> stream_flows(prog_.streams.size() + 1, 0);       // where each stream's flows start in flows_
        std::map<std::tuple<int64_t, int, int>, PortFlow> send_curves;           // by (bytes, from, to)
        std::map<std::tuple<int, int, int>, PortFlow> collective_curves;         // by (kind, group, bucket)
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            std::vector<size_t> k(prog_.groups.size(), 0);  // collectives of each group so far
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                const bool multi_node = isCollective(in.kind) && group_nodes_[static_cast<size_t>(in.group)].size() > 1;
                const size_t instance = multi_node ? k[static_cast<size_t>(in.group)]++ : 0;
                PortFlow f;
                const int from = prog_.devices[s];
                if (isSend(in.kind) && in.peer >= 0 && nodeOf(from) != nodeOf(in.peer)) {
                    auto [it, added] = send_curves.try_emplace({in.bytes, from, in.peer});
                    if (added) fitShareCurve(it->second, sendKnee(from, in.peer), [&](double share) { return cost_.p2pTime(in.bytes, from, in.peer, share); });
                    f = it->second;
                    f.from_node = nodeOf(from);
                    f.to_node = nodeOf(in.peer);
                } else if (multi_node && prog_.groups[static_cast<size_t>(in.group)].front() == from) {
                    auto [it, added] = collective_curves.try_emplace({static_cast<int>(in.kind), in.group, in.bucket});
                    if (added) fitShareCurve(it->second, ringKnee(static_cast<size_t>(in.group)), [&](double share) { return collectiveTime(in, share); });
                    f = it->second;
                    const auto g = static_cast<size_t>(in.group);
                    // The group's nodes, listed once for all its instances.
                    if (group_first_node[g] == kNoMember) {
                        group_first_node[g] = flow_nodes_.size();
                        for (const auto& [node, members] : group_nodes_[g]) flow_nodes_.push_back({node, members});
                    }
                    f.first_node = group_first_node[g];
                    f.nodes = group_nodes_[g].size();
                } else {
                    continue;
                }
                f.stream = s;
                f.index = i;
                f.ports = f.from_node >= 0 ? portsOfSend(f) : portsOfCollective(f, in.group);
                if (skip_copies && representative_[s] != s) {
                    // Its twin: the flow of the same instruction of the stream it repeats.
                    const size_t r = representative_[s];
                    const auto first = flows_.begin() + static_cast<std::ptrdiff_t>(stream_flows[r]), last = flows_.begin() + static_cast<std::ptrdiff_t>(stream_flows[r + 1]);
                    const auto twin = std::lower_bound(first, last, i, [](const PortFlow& x, size_t index) { return x.index < index; });
                    if (twin == last || twin->index != i || twin->ports != f.ports) return false;
                    ++twin->copies;
                    continue;
                }
                if (f.from_node < 0) {
                    const auto g = static_cast<size_t>(in.group);
                    f.first_member = flow_members_.size();
                    for (size_t j = 0; j < group_members[g]; ++j)
                        if (instances[g][instance * group_members[g] + j].first != kNoMember) flow_members_.push_back(instances[g][instance * group_members[g] + j]);
                    f.members = flow_members_.size() - f.first_member;
                }
                flows_.push_back(f);
            }
            stream_flows[s + 1] = flows_.size();
        }
        copies_skipped_ = skip_copies;
        findInlineFlows(inline_posted);
        return true;
    }

    // Every in-compute collective instance over a multi-node group: the k-th of the group on
    // each member (as the executor pairs them), with its curve, found once per kind of unit on
    // a kind of node and group (its members on each node).
    // `posted`: [group * streams + stream] -> the stream's in-compute instructions of the group.
    void findInlineFlows(const std::vector<std::vector<size_t>>& posted) {
        const size_t streams = prog_.streams.size();
        // Curves by (kind, segment, compute kind, bucket, count, bytes, sequence parallel, node
        // of the first member, the group's members on each node, numbered).
        using CurveKey = std::tuple<int, int, int, int, int, int64_t, bool, int, int>;
        std::map<CurveKey, int> curves;
        std::map<std::vector<std::pair<int, int>>, int> spreads;
        for (size_t g = 0; g < prog_.groups.size(); ++g) {
            if (group_nodes_[g].size() < 2) continue;
            const std::vector<int>& devices = prog_.groups[g];
            std::vector<const std::vector<size_t>*> of_member;
            for (int d : devices) {
                const auto& list = posted[g * streams + stream_of_device_[static_cast<size_t>(d)]];
                of_member.push_back(list.empty() ? nullptr : &list);
            }
            if (of_member.front() == nullptr) continue;
            const std::vector<std::pair<int, int>> nodes(group_nodes_[g].begin(), group_nodes_[g].end());
            const int spread = spreads.try_emplace(nodes, static_cast<int>(spreads.size())).first->second;
            const size_t first_node = flow_nodes_.size();
            flow_nodes_.insert(flow_nodes_.end(), nodes.begin(), nodes.end());
            for (size_t k = 0; k < of_member.front()->size(); ++k) {
                InlineFlow f;
                f.stream = stream_of_device_[static_cast<size_t>(devices.front())];
                f.index = (*of_member.front())[k];
                const Instr& in = prog_.streams[f.stream][f.index];
                f.compute = f.index;
                while (f.compute > 0 && isInline(prog_.streams[f.stream][f.compute].kind)) --f.compute;
                f.whole_unit = isZeroGather(in.kind);
                f.sharing = inline_sharing_[g];
                f.first_member = flow_members_.size();
                for (size_t j = 0; j < devices.size(); ++j)
                    if (of_member[j] != nullptr && of_member[j]->size() > k)
                        flow_members_.push_back({stream_of_device_[static_cast<size_t>(devices[j])], (*of_member[j])[k]});
                f.members = flow_members_.size() - f.first_member;
                f.first_node = first_node;
                f.nodes = nodes.size();
                const int device = devices.front();
                const CurveKey key{static_cast<int>(in.kind), in.segment, static_cast<int>(in.of), in.bucket, in.count, in.bytes, in.sequence_parallel, nodeOf(device), spread};
                const auto [it, added] = curves.try_emplace(key, static_cast<int>(inline_curves_.size()));
                if (added) inline_curves_.push_back(inlineCurve(in, g, device));
                f.curve = it->second;
                inline_flows_.push_back(f);
            }
        }
    }

    // An in-compute collective's curve (InlineCurve) on `device`, over group g.
    InlineCurve inlineCurve(const Instr& in, size_t g, int device) {
        InlineCurve curve;
        const double knee = ringKnee(g);
        const auto& group = prog_.groups[g];
        const auto add = [&](double compute, auto at) {
            curve.layers.push_back({compute, {}});
            fitShareCurve(curve.layers.back().collective, knee, at);
        };
        if (isZeroGather(in.kind)) {
            // A pair, not a structured binding: clang 14 cannot capture those in a lambda.
            for (const std::pair<double, int64_t>& layer : zeroGatherLayers(device, in))
                add(layer.first, [&](double share) { return cost_.allGatherTime(layer.second, group, share); });
        } else {
            add(0.0, [&](double share) { return cost_.tensorParallelTime(in.bytes, in.count, group, in.sequence_parallel, share); });
        }
        return curve;
    }

    // Shares of the ports measured from `res`: each flow's flows on its busiest port, averaged
    // over its span, over its own flows there (1 alone). A send counts the sends on its source
    // node's leaving port and its peer's entering port; a collective's rings leave and enter
    // every node of its group. Returns how far the flows' times moved (the largest
    // |log(new / old)|).
    double sharePorts(const ExecutionResult& res) {
        const size_t nodes = cost_.cluster().nodes.size();
        // Flows of the same span on the same ports (the replicas' copies of one another) are
        // one, times their number: their edges go in once, weighted, and their share is found
        // once (the counts and so the integrals are the same). Where the copies are counted on
        // their twins already (copies_skipped_), the flows listed rarely meet one of the same
        // span: each is its own.
        std::unordered_map<SpanKey, size_t, SpanKeyHash> distinct;  // -> index into `spans`
        std::vector<std::pair<size_t, int>> spans;                   // (first flow, flows)
        std::vector<size_t> span_of(flows_.size(), kNoSpan);
        if (!copies_skipped_) distinct.reserve(flows_.size());
        spans.reserve(flows_.size());
        for (size_t k = 0; k < flows_.size(); ++k) {
            const InstrTiming& t = res.timing[flows_[k].stream][flows_[k].index];
            if (!(t.end > t.start)) continue;
            size_t span = spans.size();
            if (!copies_skipped_) span = distinct.try_emplace(SpanKey{t.start, t.end, flows_[k].ports}, spans.size()).first->second;
            if (span == spans.size()) spans.push_back({k, 0});
            spans[span].second += 1 + flows_[k].copies;
            span_of[k] = span;
        }
        // Sends by port; collectives by node (both directions alike).
        std::vector<std::vector<std::pair<double, double>>> send_edges(2 * nodes), collective_edges(nodes), inline_edges(nodes);
        for (const auto& [first, count] : spans) {
            const PortFlow& f = flows_[first];
            const InstrTiming& t = res.timing[f.stream][f.index];
            if (f.from_node >= 0) {
                for (const int p : {2 * f.from_node, 2 * f.to_node + 1}) {
                    if (!port_hot_[static_cast<size_t>(p)]) continue;
                    send_edges[static_cast<size_t>(p)].push_back({t.start, count});
                    send_edges[static_cast<size_t>(p)].push_back({t.end, -count});
                }
            } else {
                for (size_t n = f.first_node; n < f.first_node + f.nodes; ++n) {
                    const auto [node, members] = flow_nodes_[n];
                    if (!port_hot_[static_cast<size_t>(2 * node)] && !port_hot_[static_cast<size_t>(2 * node + 1)]) continue;
                    collective_edges[static_cast<size_t>(node)].push_back({t.start, members * count});
                    collective_edges[static_cast<size_t>(node)].push_back({t.end, -members * count});
                }
            }
        }
        // In-compute collectives over their units' spans, each ring weighted by the share of the
        // span its collectives keep the ports busy (InlineCurve::busy at its share so far).
        std::unordered_map<SpanKey, size_t, SpanKeyHash> distinct_inline;  // -> index into `inline_spans`
        std::vector<std::pair<size_t, int>> inline_spans;                  // (first flow, flows)
        std::vector<size_t> inline_span_of(inline_flows_.size(), kNoSpan);
        for (size_t k = 0; k < inline_flows_.size(); ++k) {
            const auto [start, end] = unitSpan(res, inline_flows_[k]);
            if (!(end > start)) continue;
            const auto [it, added] = distinct_inline.try_emplace(SpanKey{start, end, inline_flows_[k].curve}, inline_spans.size());
            if (added) inline_spans.push_back({k, 0});
            ++inline_spans[it->second].second;
            inline_span_of[k] = it->second;
        }
        for (const auto& [first, count] : inline_spans) {
            const InlineFlow& f = inline_flows_[first];
            const auto [start, end] = unitSpan(res, f);
            const double busy = std::min(1.0, inline_curves_[static_cast<size_t>(f.curve)].busy(inline_share_[first]) / (end - start));
            for (size_t n = f.first_node; n < f.first_node + f.nodes; ++n) {
                const auto [node, members] = flow_nodes_[n];
                if (!port_hot_[static_cast<size_t>(2 * node)] && !port_hot_[static_cast<size_t>(2 * node + 1)]) continue;
                inline_edges[static_cast<size_t>(node)].push_back({start, members * count * busy});
                inline_edges[static_cast<size_t>(node)].push_back({end, -members * count * busy});
            }
        }
        std::vector<std::optional<FlowIntegral>> sends(2 * nodes), collectives(nodes), inlines(nodes);
        for (size_t p = 0; p < 2 * nodes; ++p)
            if (!send_edges[p].empty()) sends[p].emplace(std::move(send_edges[p]));
        for (size_t n = 0; n < nodes; ++n) {
            if (!collective_edges[n].empty()) collectives[n].emplace(std::move(collective_edges[n]));
            if (!inline_edges[n].empty()) inlines[n].emplace(std::move(inline_edges[n]));
        }
        // Flows over [a, b], integrated: sends on port p, collectives and in-compute ones on
        // node p / 2; and the most at once, bounded.
        const auto seconds = [](const std::vector<std::optional<FlowIntegral>>& integrals, int i, double a, double b) {
            const auto& on = integrals[static_cast<size_t>(i)];
            return on ? on->over(a, b) : 0.0;
        };
        const auto sendSeconds = [&](int p, double a, double b) { return seconds(sends, p, a, b); };
        const auto collectiveSeconds = [&](int node, double a, double b) { return seconds(collectives, node, a, b); };
        const auto inlineSeconds = [&](int node, double a, double b) { return seconds(inlines, node, a, b); };
        const auto most = [&](int p) {
            const auto& on = sends[static_cast<size_t>(p)];
            const auto& all = collectives[static_cast<size_t>(p / 2)];
            const auto& in_compute = inlines[static_cast<size_t>(p / 2)];
            return (on ? on->most() : 0.0) + (all ? all->most() : 0.0) + (in_compute ? in_compute->most() : 0.0);
        };
        // Each distinct span's share: its flows on its busiest port averaged over the span,
        // over its own flows there.
        std::vector<double> span_share(spans.size(), 1.0);
        for (size_t i = 0; i < spans.size(); ++i) {
            const PortFlow& f = flows_[spans[i].first];
            const InstrTiming& t = res.timing[f.stream][f.index];
            double& share = span_share[i];
            // The flows on port p over the span, the node's collectives' `collective` seconds
            // among them (< 0: not yet integrated), over `own`.
            const auto consider = [&](int p, int own, double& collective) {
                if (most(p) / own <= f.knee) return;  // it cannot slow it
                if (collective < 0) collective = collectiveSeconds(p / 2, t.start, t.end) + inlineSeconds(p / 2, t.start, t.end);
                share = std::max(share, (collective + sendSeconds(p, t.start, t.end)) / (t.end - t.start) / own);
            };
            if (f.from_node >= 0) {
                double from_collectives = -1, to_collectives = -1;
                consider(2 * f.from_node, 1, from_collectives);
                consider(2 * f.to_node + 1, 1, to_collectives);
            } else {
                for (size_t n = f.first_node; n < f.first_node + f.nodes; ++n) {
                    double on_node = -1;
                    for (const int dir : {0, 1}) consider(2 * flow_nodes_[n].first + dir, flow_nodes_[n].second, on_node);
                }
            }
        }
        double moved = 0;
        for (size_t k = 0; k < flows_.size(); ++k) {
            if (span_of[k] == kNoSpan) continue;
            const PortFlow& f = flows_[k];
            const double before = flow_share_[k];
            const double share = flow_share_[k] = damped(span_share[span_of[k]], before, flow_step_[k]);
            const double old_time = f.time(before), new_time = f.time(share);
            moved = std::max(moved, std::abs(std::log(new_time / old_time)));
            if (f.members == 0) {
                port_time_[f.stream][f.index] = new_time;
            } else {
                for (size_t m = f.first_member; m < f.first_member + f.members; ++m) port_time_[flow_members_[m].first][flow_members_[m].second] = new_time;
            }
        }
        // Each in-compute collective's share: its group's and the other groups' in-compute
        // collectives on its nodes (InlineFlow::sharing: they run in step with it), and on
        // its busiest port, averaged over its unit, the other flows over its own rings there.
        std::vector<double> inline_span_share(inline_spans.size());
        for (size_t i = 0; i < inline_spans.size(); ++i) {
            const InlineFlow& f = inline_flows_[inline_spans[i].first];
            const auto [start, end] = unitSpan(res, f);
            double share = f.sharing;
            for (size_t n = f.first_node; n < f.first_node + f.nodes; ++n) {
                const auto [node, members] = flow_nodes_[n];
                const double collective = collectiveSeconds(node, start, end);
                for (const int p : {2 * node, 2 * node + 1})
                    if (port_hot_[static_cast<size_t>(p)]) share = std::max(share, f.sharing + (collective + sendSeconds(p, start, end)) / (end - start) / members);
            }
            inline_span_share[i] = share;
        }
        for (size_t k = 0; k < inline_flows_.size(); ++k) {
            if (inline_span_of[k] == kNoSpan) continue;
            const InlineFlow& f = inline_flows_[k];
            const InlineCurve& curve = inline_curves_[static_cast<size_t>(f.curve)];
            const double before = inline_share_[k];
            const double share = inline_share_[k] = damped(inline_span_share[inline_span_of[k]], before, inline_step_[k]);
            const double old_busy = curve.busy(before), new_busy = curve.busy(share);
            if (old_busy > 0 && new_busy > 0) moved = std::max(moved, std::abs(std::log(new_busy / old_busy)));
            const double exposed = curve.exposed(share);
            for (size_t m = f.first_member; m < f.first_member + f.members; ++m) port_time_[flow_members_[m].first][flow_members_[m].second] = exposed;
        }
        // The flows not listed have their twins' times, as their streams have their
        // representatives' timings.
        if (copies_skipped_)
            for (size_t s = 0; s < representative_.size(); ++s)
                if (representative_[s] != s) port_time_[s] = port_time_[representative_[s]];
        return moved;
    }

    // A flow's share measured anew (`share`), after `before`: damped where it turns back (it rose
    // last time and falls now, or the reverse) to the geometric mean with the one before.
    // `step`: the sign of its last change, updated.
    static double damped(double share, double before, double& step) {
        if (step * (share - before) < 0) share = std::sqrt(share * before);
        step = share > before ? 1.0 : share < before ? -1.0 : 0.0;
        return share;
    }

    // An in-compute collective's unit: from its compute's start (ZeRO-3: the gathers run
    // through the compute) or its own (tensor-parallel: the collectives after the compute) to
    // the unit's end.
    static std::pair<double, double> unitSpan(const ExecutionResult& res, const InlineFlow& f) {
        const auto& timing = res.timing[f.stream];
        return {timing[f.whole_unit ? f.compute : f.index].start, timing[f.index].end};
    }

    // The integral over time of a count that steps up and down at `edges` (time, change). A
    // change may be a fraction: an in-compute collective counts its ports' busy share of its unit.
    class FlowIntegral {
    public:
        explicit FlowIntegral(std::vector<std::pair<double, double>> edges) {
            // One stream's flows come in time order: nothing to sort.
            if (!std::is_sorted(edges.begin(), edges.end())) std::sort(edges.begin(), edges.end());
            double count = 0, acc = 0;
            for (size_t k = 0; k < edges.size();) {
                const double t = edges[k].first;
                if (!times_.empty()) acc += count * (t - times_.back());
                times_.push_back(t);
                area_.push_back(acc);
                for (; k < edges.size() && edges[k].first == t; ++k) count += edges[k].second;
                count_.push_back(count);
                most_ = std::max(most_, count);
            }
        }
        // The largest count at any time.
        double most() const { return most_; }
        // From `a` to `b`.
        double over(double a, double b) const { return at(b, after_b_) - at(a, after_a_); }

    private:
        // Up to `t`: the area at the last edge at or before it, plus the count since. `after`:
        // the edges at or before the time asked last (spans are mostly asked in time order, so
        // the search steps on from there before it bisects).
        double at(double t, size_t& after) const {
            size_t i = 0;
            if (after > 0 && after <= times_.size() && times_[after - 1] <= t) {
                i = after;
                for (int step = 0; i < times_.size() && times_[i] <= t; ++i)
                    if (++step == 8) {
                        i = static_cast<size_t>(std::upper_bound(times_.begin() + static_cast<std::ptrdiff_t>(i), times_.end(), t) - times_.begin());
                        break;
                    }
            } else {
                i = static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin());
            }
            after = i;
            return i == 0 ? 0.0 : area_[i - 1] + count_[i - 1] * (t - times_[i - 1]);
        }
        std::vector<double> times_, area_;
        std::vector<double> count_;  // from each edge time on
        double most_ = 0;
        mutable size_t after_a_ = 0, after_b_ = 0;  // at()'s `after` for each end of over()
    };

    static bool occupiesCores(InstrKind k) { return isCompute(k) || isSend(k) || isRecv(k) || isCollective(k); }

    // Per compute instruction: max(1, activities on its node's cores during it / the node's
    // compute slots), from the spans of `res`. 1 on nodes that do not share compute.
    std::vector<std::vector<double>> sharingFactors(const ExecutionResult& res) const {
        const Cluster& c = cost_.cluster();
        std::vector<std::vector<double>> factor(prog_.streams.size());
        std::map<int, std::vector<std::pair<double, double>>> edges;  // by node: (time, +1 start / -1 end)
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            factor[s].assign(prog_.streams[s].size(), 1.0);
            const int node = nodeOf(prog_.devices[s]);
            if (c.nodes[static_cast<size_t>(node)].compute_slots <= 0) continue;
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const InstrTiming& t = res.timing[s][i];
                if (!occupiesCores(prog_.streams[s][i].kind) || !(t.end > t.start)) continue;
                edges[node].push_back({t.start, +1});
                edges[node].push_back({t.end, -1});
            }
        }
        std::map<int, FlowIntegral> integral;  // by node: of the activity count
        for (auto& [node, e] : edges) integral.emplace(node, FlowIntegral(std::move(e)));
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            const int node = nodeOf(prog_.devices[s]);
            const double slots = c.nodes[static_cast<size_t>(node)].compute_slots;
            if (slots <= 0) continue;
            const FlowIntegral& activity = integral.at(node);
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const InstrTiming& t = res.timing[s][i];
                if (!isCompute(prog_.streams[s][i].kind) || !(t.end > t.start)) continue;
                factor[s][i] = std::max(1.0, activity.over(t.start, t.end) / (t.end - t.start) / slots);
            }
        }
        return factor;
    }

    // The time of a send, bucket collective or in-compute collective of stream `s`: measured
    // against the ports' sharing (sharePorts), else `alone`, with its whole link (an in-compute
    // one: its group_sharing_).
    double flowTime(size_t s, const Instr& in, double alone) const {
        if (port_time_.empty()) return alone;
        const double measured = port_time_[s][static_cast<size_t>(&in - prog_.streams[s].data())];
        return measured >= 0 ? measured : alone;
    }

    // A bucket collective's time at a share of the ports. It is the same every micro-batch
    // (ZeRO-2 reduce-scatters each one's) at the same share: timed once per (kind, bucket,
    // group, share).
    double collectiveTime(const Instr& in, double sharing) {
        const auto key = std::make_tuple(static_cast<int>(in.kind), in.group, in.bucket, sharing);
        if (auto it = collective_s_.find(key); it != collective_s_.end()) return it->second;
        const int64_t bytes = prog_.buckets[static_cast<size_t>(in.bucket)].bytes;
        const auto& group = prog_.groups[static_cast<size_t>(in.group)];
        double t = 0;
        switch (in.kind) {
        case InstrKind::ReduceScatter: t = cost_.reduceScatterTime(bytes, group, sharing); break;
        case InstrKind::AllGather: t = cost_.allGatherTime(bytes, group, sharing); break;
        default:
            t = cost_.allReduceTime(bytes, group, sharing);
            // A data-parallel bucket is flattened first (the engine's GradBuckets).
            if (dataParallelBucket(in.bucket)) t += cost_.bucketPackTime(bytes, group.front());
            break;
        }
        return collective_s_[key] = t;
    }

    double computeTime(int device, const Instr& in) {
        const Segment& seg = prog_.segments[static_cast<size_t>(std::max(in.segment, 0))];
        const CostModel& cost = in.segment >= 0 ? segmentCost(in.segment) : deviceCost(device);
        const double b = prog_.micro_batch_size;
        switch (in.kind) {
        case InstrKind::Forward: return cached(fwd_, in.segment, device, [&] { return cost.fwdTime(seg.ops, b, device); });
        case InstrKind::Backward:
            if (in.bucket >= 0)
                return cached(bwd_bucket_, in.bucket, device, [&] { return cost.bwdTime(prog_.buckets[static_cast<size_t>(in.bucket)].ops, b, device); });
            return cached(bwd_, in.segment, device, [&] { return cost.bwdTime(seg.ops, b, device); });
        case InstrKind::BackwardWeight:
            return cached(bwd_w_, in.segment, device, [&] { return cost.bwdWeightTime(seg.ops, b, device); });
        case InstrKind::BackwardInput:
            return cached(bwd_, in.segment, device, [&] { return cost.bwdTime(seg.ops, b, device); }) -
                   cached(bwd_w_, in.segment, device, [&] { return cost.bwdWeightTime(seg.ops, b, device); });
        case InstrKind::Recompute:
            return cached(recompute_, in.segment, device, [&] {
                std::vector<int> ops;
                for (int op : seg.ops)
                    if (prog_.recomputed(op)) ops.push_back(op);
                return cost.fwdTime(ops, b, device);
            });
        case InstrKind::OptimizerStep:
            // The step first averages its data-parallel buckets and copies them back.
            return cost.optimizerTime(paramCount(device), plan_.optimizer, device) +
                   cost.bucketUnpackTime(allReducedBucketBytes(device), device);
        default: return 0.0;
        }
    }

    // Devices of one node share their spec: a segment's (or a bucket's) times are the same on
    // each (tensor-parallel ranks and replicas), so they are kept per (segment, node).
    template <class F>
    double cached(std::unordered_map<uint64_t, double>& cache, int segment, int device, F f) {
        const uint64_t key = (static_cast<uint64_t>(segment) << 32) | static_cast<uint32_t>(nodeOf(device));
        if (auto it = cache.find(key); it != cache.end()) return it->second;
        return cache[key] = f();
    }

    // Cluster::nodeOf from a table: it is asked for every compute instruction.
    int nodeOf(int device) const {
        return device >= 0 && static_cast<size_t>(device) < node_of_.size() ? node_of_[static_cast<size_t>(device)] : cost_.cluster().nodeOf(device);
    }

    // The data-parallel replicas of the device's segments: the program's pipelines, or with
    // per-stage replication its stage's.
    int replicasOn(int device) const {
        if (!prog_.round_robin) return prog_.pipelines;
        for (size_t s = 0; s < prog_.segments.size(); ++s) {
            const auto& devs = prog_.segment_devices[s];
            if (std::find(devs.begin(), devs.end(), device) != devs.end()) return prog_.replicasOf(static_cast<int>(s));
        }
        return 1;
    }

    std::vector<int> hostedOps(int device) const {
        std::vector<int> ops;
        for (size_t s = 0; s < prog_.segments.size(); ++s) {
            const auto& devs = prog_.segment_devices[s];
            if (std::find(devs.begin(), devs.end(), device) != devs.end())
                ops.insert(ops.end(), prog_.segments[s].ops.begin(), prog_.segments[s].ops.end());
        }
        return ops;
    }

    // A gradient bucket of data parallelism (not a tied weight's sum, which is added in place).
    bool dataParallelBucket(int bucket) const { return prog_.buckets[static_cast<size_t>(bucket)].tied_segment < 0; }

    // Bytes of the data-parallel buckets the device all-reduces, each once: every device's
    // found in one pass over the program, the first time one is asked for.
    int64_t allReducedBucketBytes(int device) {
        if (!all_reduced_bytes_) {
            std::set<std::pair<int, int>> seen;  // (device, bucket)
            all_reduced_bytes_.emplace();
            for (size_t s = 0; s < prog_.streams.size(); ++s)
                for (const Instr& in : prog_.streams[s])
                    if (in.kind == InstrKind::AllReduce && dataParallelBucket(in.bucket) && seen.insert({prog_.devices[s], in.bucket}).second)
                        (*all_reduced_bytes_)[prog_.devices[s]] += prog_.buckets[static_cast<size_t>(in.bucket)].bytes;
        }
        const auto it = all_reduced_bytes_->find(device);
        return it == all_reduced_bytes_->end() ? 0 : it->second;
    }

    // Parameters the device's optimizer step updates (one tensor-parallel rank's): under ZeRO,
    // its shard only.
    int64_t paramCount(int device) const {
        int64_t bytes = 0;
        const CostModel& cost = deviceCost(device);
        for (int op : hostedOps(device)) bytes += cost.rankParamBytes(op);
        const int64_t count = bytes / activationElementBytes(cost_.precision());
        return prog_.zero_stage > 0 ? (count + prog_.pipelines - 1) / prog_.pipelines : count;
    }

    // ZeRO-3: the most whole parameters stream s holds at once: two layers' (the one a compute
    // uses and the next, prefetched) of its largest gathering.
    // Every micro-batch repeats its segment's gatherings: each distinct one is read once.
    int64_t gatheredBytes(size_t s) const {
        int64_t most = 0;
        std::set<std::tuple<int, InstrKind, int>> seen;  // (segment, compute kind, bucket)
        for (const Instr& in : prog_.streams[s])
            if (isZeroGather(in.kind) && seen.insert({in.segment, in.of, in.bucket}).second)
                most = std::max(most, zeroGatherHeldBytes(prog_, gatheredBuckets(in)));
        return most;
    }

    // The buckets a ZeroGather instruction gathers (those of its compute instruction); the same
    // on every device and micro-batch, so found once per (segment, compute kind, bucket).
    const std::vector<int>& gatheredBuckets(const Instr& zero_gather) const {
        const auto key = std::make_tuple(zero_gather.segment, static_cast<int>(zero_gather.of), zero_gather.bucket);
        if (auto it = gathered_buckets_.find(key); it != gathered_buckets_.end()) return it->second;
        Instr compute = zero_gather;
        compute.kind = zero_gather.of;
        return gathered_buckets_[key] = zeroGatheredBuckets(prog_, cost_.graph(), compute);
    }

    // ZeRO-3: the layers a ZeroGather instruction's compute runs, in order, each as its compute
    // alone and the bytes of the parameters gathered for it.
    std::vector<std::pair<double, int64_t>> zeroGatherLayers(int device, const Instr& in) {
        const double b = prog_.micro_batch_size;
        std::vector<std::pair<double, int64_t>> layers;
        for (int bucket : gatheredBuckets(in)) {
            const Bucket& bk = prog_.buckets[static_cast<size_t>(bucket)];
            std::vector<int> ops;
            for (int op : bk.ops)
                if (in.of != InstrKind::Recompute || prog_.recomputed(op)) ops.push_back(op);
            double c = 0;
            switch (in.of) {
            case InstrKind::Forward:
            case InstrKind::Recompute: c = segmentCost(in.segment).fwdTime(ops, b, device); break;
            case InstrKind::BackwardInput:
                c = segmentCost(in.segment).bwdTime(ops, b, device) - segmentCost(in.segment).bwdWeightTime(ops, b, device);
                break;
            default: c = segmentCost(in.segment).bwdTime(ops, b, device); break;
            }
            layers.emplace_back(c, bk.bytes);
        }
        return layers;
    }

    // ZeRO-3: how much longer a compute lasts for its per-layer gathers (pipelinedExposure),
    // its group's in-compute collectives counted on its ports (group_sharing_); what the
    // compute would take alone is already the compute instruction's time.
    double zeroGatherExposedTime(int device, const Instr& in) {
        const auto key = std::make_tuple(in.segment, static_cast<int>(in.of), in.bucket, nodeOf(device), in.group);
        if (auto it = zero_gather_s_.find(key); it != zero_gather_s_.end()) return it->second;
        const auto& group = prog_.groups[static_cast<size_t>(in.group)];
        const int sharing = group_sharing_[static_cast<size_t>(in.group)];
        const auto layers = zeroGatherLayers(device, in);
        return zero_gather_s_[key] = pipelinedExposure(
                   layers.size(), [&](size_t i) { return layers[i].first; }, [&](size_t i) { return cost_.allGatherTime(layers[i].second, group, sharing); });
    }

    void recordEvents(const ExecutionResult& res, Trace& t) const {
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                TraceEvent e;
                e.device = prog_.devices[s];
                e.start_s = res.timing[s][i].start;
                e.end_s = res.timing[s][i].end;
                e.kind = in.kind;
                e.stage = isCollective(in.kind) ? prog_.buckets[static_cast<size_t>(in.bucket)].segment : in.segment;
                e.mb = in.mb;
                e.peer = in.peer;
                e.bytes = isCollective(in.kind) ? prog_.buckets[static_cast<size_t>(in.bucket)].bytes : in.bytes;
                t.events.push_back(e);
            }
        }
    }

    // Allocations and frees per device over time, then the running total.
    void memoryCurves(const ExecutionResult& res, Trace& t) const {
        const bool release_sent = prog_.schedule == ScheduleKind::Hippie;
        t.metrics.peak_memory_bytes.assign(prog_.streams.size(), 0);
        t.memory.resize(prog_.streams.size());
        std::vector<int> slot_of(mem_.size(), -1), slots;  // by segment: its slot in the stream's segments
        std::vector<std::pair<double, int64_t>> deltas;      // one stream's, reused
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            for (int segment : slots) slot_of[static_cast<size_t>(segment)] = -1;
            const int dev = prog_.devices[s];
            deltas.clear();
            deltas.reserve(3 * prog_.streams[s].size() + 1);
            int64_t grad_recv_buffer = 0;
            for (const Instr& in : prog_.streams[s])
                if (in.kind == InstrKind::RecvGrad) grad_recv_buffer = std::max(grad_recv_buffer, in.bytes);
            const auto ops = hostedOps(dev);
            deltas.emplace_back(0.0, deviceCost(dev).staticMemory(ops, plan_.optimizer, replicasOn(dev), plan_.bucket_bytes, grad_recv_buffer,
                                                        prog_.zero_stage, gatheredBytes(s))
                                         .total());
            // By (segment of this stream, micro-batch): backward parts done, end of the latest send.
            // A placement's stream holds thousands of segments: each has its slot by index.
            slots.clear();  // this stream's segments
            int mbs = 0;
            for (const Instr& in : prog_.streams[s]) {
                if (in.segment < 0) continue;
                mbs = std::max(mbs, in.mb + 1);
                int& slot = slot_of[static_cast<size_t>(in.segment)];
                if (slot < 0) {
                    slot = static_cast<int>(slots.size());
                    slots.push_back(in.segment);
                }
            }
            const auto at = [&](int segment, int mb) {
                return static_cast<size_t>(slot_of[static_cast<size_t>(segment)]) * static_cast<size_t>(mbs) + static_cast<size_t>(mb);
            };
            std::vector<int> parts(slots.size() * static_cast<size_t>(mbs), 0);
            std::vector<double> last_send(release_sent ? parts.size() : 0, -1.0);
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const Instr& in = prog_.streams[s][i];
                const InstrTiming& tm = res.timing[s][i];
                if (in.segment < 0) continue;
                const SegmentMemory& m = mem_[static_cast<size_t>(in.segment)];
                const int64_t released = release_sent ? m.sent_outputs : 0;
                // Each compute's deltas at its start before those at its end: compute runs in
                // program order, so they come sorted and need no sort below.
                if (isCompute(in.kind)) deltas.emplace_back(tm.start, m.temp);
                if (in.kind == InstrKind::Forward) deltas.emplace_back(tm.start, m.kept);
                if (in.kind == InstrKind::Recompute) deltas.emplace_back(tm.start, m.recomputed);
                if (isCompute(in.kind)) deltas.emplace_back(tm.end, -m.temp);
                switch (in.kind) {
                case InstrKind::SendActivation:
                    if (release_sent) last_send[at(in.segment, in.mb)] = std::max(last_send[at(in.segment, in.mb)], tm.end);
                    break;
                case InstrKind::Backward:
                    if (in.bucket < 0 || ++parts[at(in.segment, in.mb)] == m.buckets) deltas.emplace_back(tm.end, -(m.kept + m.recomputed - released));
                    break;
                case InstrKind::BackwardInput:
                    deltas.emplace_back(tm.end, -(m.kept + m.recomputed - released - m.weight_inputs));
                    break;
                case InstrKind::BackwardWeight: deltas.emplace_back(tm.end, -m.weight_inputs); break;
                default: break;
                }
            }
            // The compute instructions run one after another, so their deltas come in time order;
            // the sends' are ordered apart and merged in.
            const auto sends = static_cast<std::ptrdiff_t>(deltas.size());
            for (size_t k = 0; k < last_send.size(); ++k)
                if (last_send[k] >= 0) deltas.emplace_back(last_send[k], -mem_[static_cast<size_t>(slots[k / static_cast<size_t>(mbs)])].sent_outputs);
            const auto by_time = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) { return a.first < b.first; };
            if (!std::is_sorted(deltas.begin(), deltas.begin() + sends, by_time)) std::sort(deltas.begin(), deltas.begin() + sends, by_time);
            std::sort(deltas.begin() + sends, deltas.end(), by_time);
            std::inplace_merge(deltas.begin(), deltas.begin() + sends, deltas.end(), by_time);
            // The frees and allocations of one instant settle together (a buffer handed back can
            // be reused at once): the total is read after the last delta of each instant.
            int64_t cur = 0, peak = 0;
            auto& curve = t.memory[s];
            // Without events (planners' inner loop) only the peak is wanted, not the curve.
            if (opt_.record_events) curve.reserve(deltas.size());
            for (size_t k = 0; k < deltas.size(); ++k) {
                cur = addBytes(cur, deltas[k].second);
                if (k + 1 < deltas.size() && deltas[k + 1].first == deltas[k].first) continue;
                peak = std::max(peak, cur);
                if (opt_.record_events) curve.push_back({deltas[k].first, cur});
            }
            t.metrics.peak_memory_bytes[s] = peak;
        }
    }

    void metrics(const ExecutionResult& res, Trace& t) const {
        TraceMetrics& m = t.metrics;
        const double end = makespan(res);
        double window = 0;
        for (size_t s = 0; s < prog_.streams.size(); ++s)
            for (size_t i = 0; i < prog_.streams[s].size(); ++i)
                if (isModelCompute(prog_.streams[s][i].kind)) window = std::max(window, res.timing[s][i].end);
        m.iteration_time_s = end;
        const double samples = prog_.micro_batch_size * prog_.micro_batches * prog_.pipelines;
        m.throughput_samples_per_s = end > 0 ? samples / end : 0;
        m.max_peak_memory_bytes = m.peak_memory_bytes.empty() ? 0 : *std::max_element(m.peak_memory_bytes.begin(), m.peak_memory_bytes.end());
        m.memory_efficiency = memoryEfficiency(m.throughput_samples_per_s, m.max_peak_memory_bytes);
        m.fits_memory = true;
        for (size_t s = 0; s < m.peak_memory_bytes.size(); ++s)
            if (static_cast<double>(m.peak_memory_bytes[s]) > static_cast<double>(t.capacity_bytes[s]) * (1.0 - opt_.memory_headroom))
                m.fits_memory = false;

        double idle = 0, ar_total = 0, ar_hidden = 0;
        std::vector<InstrTiming> busy, reduce;
        for (size_t s = 0; s < prog_.streams.size(); ++s) {
            busy.clear();
            reduce.clear();
            for (size_t i = 0; i < prog_.streams[s].size(); ++i) {
                const InstrKind k = prog_.streams[s][i].kind;
                if (isModelCompute(k)) busy.push_back(res.timing[s][i]);
                else if (isCollective(k)) reduce.push_back(res.timing[s][i]);
            }
            double busy_s = 0;
            for (const auto& b : busy) busy_s += b.end - b.start;
            idle += window > 0 ? 1.0 - busy_s / window : 0.0;
            for (const auto& r : reduce) {
                ar_total += r.end - r.start;
                ar_hidden += overlap(r, busy);
            }
        }
        m.bubble_fraction = prog_.streams.empty() ? 0 : idle / static_cast<double>(prog_.streams.size());
        m.allreduce_hidden_fraction = ar_total > 0 ? ar_hidden / ar_total : 1.0;
    }

    static bool isModelCompute(InstrKind k) { return isCompute(k) && k != InstrKind::OptimizerStep; }

    // Time of `r` covered by the (sorted, disjoint) intervals of `busy`.
    static double overlap(const InstrTiming& r, const std::vector<InstrTiming>& busy) {
        double sum = 0;
        auto it = std::lower_bound(busy.begin(), busy.end(), r.start, [](const InstrTiming& b, double x) { return b.end < x; });
        for (; it != busy.end() && it->start < r.end; ++it) sum += std::max(0.0, std::min(r.end, it->end) - std::max(r.start, it->start));
        return sum;
    }

    // One rank's split at tensor-parallel degree `tp` of the program.
    static TensorSplit splitOf(const Program& prog, int tp) { return TensorSplit{std::max(tp, 1), tp > 1 && prog.sequence_parallel}; }
    // The cost model of a segment's degree (made on first use; std::map keeps each in place).
    const CostModel& segmentCost(int segment) const {
        const int t = prog_.tpOf(segment);
        if (t == std::max(prog_.tp, 1)) return cost_;
        auto it = degree_costs_.find(t);
        if (it == degree_costs_.end()) it = degree_costs_.try_emplace(t, cost_.graph(), cost_.cluster(), splitOf(prog_, t)).first;
        return it->second;
    }
    // The device's segments share one degree (lowering refuses more with per-stage degrees).
    const CostModel& deviceCost(int device) const {
        const auto it = segment_of_device_.find(device);
        return it == segment_of_device_.end() ? cost_ : segmentCost(it->second);
    }

    const Program& prog_;
    const Plan& plan_;
    const CostModel cost_;  // the widest degree's (every segment's without per-stage degrees)
    mutable std::map<int, CostModel> degree_costs_;  // by tensor-parallel degree, the others
    std::unordered_map<int, int> segment_of_device_;  // a segment each device runs
    std::vector<int> node_of_;                         // by device of the cluster: its node
    const SimOptions& opt_;
    std::vector<SegmentMemory> mem_;
    std::set<std::pair<int, int>> cross_pairs_;        // (from, to) of the cross-node sends
    std::vector<int> group_sharing_;                   // per group: its inline collectives' count of flows on its ports
    std::vector<std::map<int, int>> group_nodes_;      // per group: node -> members on it
    std::vector<PortFlow> flows_;                      // cross-node sends and collective instances (findPortFlows)
    std::vector<bool> group_inline_;                   // per group: it runs in-compute collectives
    std::vector<int> inline_sharing_;                  // per group: group_sharing_ counting only such groups
    std::vector<InlineFlow> inline_flows_;             // in-compute collective instances over several nodes (findInlineFlows)
    std::vector<InlineCurve> inline_curves_;
    std::vector<double> inline_share_, inline_step_;   // by in-compute flow: as flow_share_, flow_step_
    bool copies_skipped_ = false;                      // flows_ leaves out the repeating streams' flows (findPortFlows)
    std::vector<bool> port_hot_;                       // by port (node * 2 + direction): may carry enough flows to slow one
    std::vector<std::pair<size_t, size_t>> flow_members_;  // a collective instance's members: (stream, instruction)
    std::vector<std::pair<int, int>> flow_nodes_;     // a collective flow's nodes: (node, members on it)
    std::vector<double> flow_share_, flow_step_;       // by flow: measured share of the ports, the sign of its last change
    std::vector<std::vector<double>> port_time_;       // [stream][instruction]: measured time of a flow (-1: none yet; empty: no flows)
    std::vector<size_t> stream_of_device_;             // by device of the cluster: its stream
    std::vector<size_t> representative_;               // by stream: the stream whose timing it repeats (empty: run all)
    std::unordered_map<uint64_t, double> fwd_, bwd_, bwd_w_, recompute_, bwd_bucket_;
    std::map<std::tuple<int, int, int, double>, double> collective_s_;  // by (kind, group, bucket, share of the ports)
    std::optional<std::unordered_map<int, int64_t>> all_reduced_bytes_;  // by device (allReducedBucketBytes)
    std::vector<std::vector<double>> compute_scale_;     // [stream][instruction]: host sharing (empty: none)
    std::vector<std::vector<double>> accumulation_s_;    // [stream][instruction]: gradient accumulation added
    std::map<std::tuple<int, int, int64_t, bool>, double> tensor_parallel_s_;  // by (group, count, bytes, sequence parallel)
    std::map<std::tuple<int, int, int, int, int>, double> zero_gather_s_;     // by (segment, compute kind, bucket, node, group)
    mutable std::map<std::tuple<int, int, int>, std::vector<int>> gathered_buckets_;  // by (segment, compute kind, bucket)
};

}  // namespace

std::vector<int> countedGroupSharing(const Program& prog, const Cluster& c) { return sharingOf(groupNodes(prog, c)); }

double memoryEfficiency(double throughput_samples_per_s, int64_t peak_bytes) {
    return peak_bytes > 0 ? throughput_samples_per_s / (static_cast<double>(peak_bytes) / kGiB) : 0.0;
}

Trace simulate(const Program& program, const Plan& plan, const CostModel& cost, const SimOptions& options) {
    Trace t = Simulation(program, plan, cost, options).run();
    // A metric that is not a number would be printed as "inf" or stored as null: say why instead.
    const TraceMetrics& m = t.metrics;
    for (const auto& [name, value] : {std::pair{"iteration time", m.iteration_time_s}, std::pair{"throughput", m.throughput_samples_per_s},
                                      std::pair{"bubble fraction", m.bubble_fraction},
                                      std::pair{"all-reduce hidden fraction", m.allreduce_hidden_fraction},
                                      std::pair{"memory efficiency", m.memory_efficiency}})
        if (!std::isfinite(value))
            throw Error(std::string("simulation: the ") + name +
                        " is not a finite number; the model's costs or the cluster's rates are out of range");
    return t;
}

}  // namespace hippie
