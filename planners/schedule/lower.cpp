#include "planners/schedule/lower.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/attention_core.h"
#include "planners/schedule/schedule_orders.h"
#include "planners/schedule/tied_weights.h"
#include "planners/schedule/zero_gathers.h"

namespace hippie {

namespace {

std::string planError(const std::string& field, const std::string& what) { return "plan: field '" + field + "': " + what; }

void checkStageTp(const Plan& plan, const Graph& graph);

// The stage of each layer, by layer.
std::vector<int> stageOfLayer(const Plan& plan, const Graph& graph) {
    std::vector<int> stage_of_layer(static_cast<size_t>(graph.layerCount()), 0);
    for (size_t s = 0; s < plan.stages.size(); ++s)
        for (int l = plan.stages[s].first_layer; l <= plan.stages[s].last_layer && l < graph.layerCount(); ++l)
            stage_of_layer[static_cast<size_t>(l)] = static_cast<int>(s);
    return stage_of_layer;
}

// A tied weight whose owner's and user's stages differ in a per-stage list (stage_replicas,
// stage_tp), and those two stages; the first found, if any.
struct TiedStages {
    TiedWeightUse use;
    int owner_stage = 0, user_stage = 0;
};
std::optional<TiedStages> tiedStagesThatDiffer(const Plan& plan, const Graph& graph, const std::vector<int>& per_stage) {
    const std::vector<int> stage_of_layer = stageOfLayer(plan, graph);
    for (const TiedWeightUse& u : tiedWeights(graph)) {
        const int a = stage_of_layer[static_cast<size_t>(u.owner_layer)], b = stage_of_layer[static_cast<size_t>(u.user_layer)];
        if (per_stage[static_cast<size_t>(a)] != per_stage[static_cast<size_t>(b)]) return TiedStages{u, a, b};
    }
    return std::nullopt;
}

// A per-stage list (stage_replicas, stage_tp): one count of at least 1 for each stage. Returns
// the largest.
int widestOfStages(const Plan& plan, const std::vector<int>& counts, const std::string& field, const std::string& each) {
    if (counts.size() != plan.stages.size())
        throw Error(planError(field, "has " + std::to_string(counts.size()) + " entries for " + std::to_string(plan.stages.size()) +
                                         " stages (one " + each + " per stage)"));
    for (size_t s = 0; s < counts.size(); ++s)
        if (counts[s] < 1) throw Error(planError(field + "[" + std::to_string(s) + "]", "must be at least 1"));
    return *std::max_element(counts.begin(), counts.end());
}

// Per-stage replication (Plan::stage_replicas): what the round-robin lowering supports.
void checkStageReplicas(const Plan& plan, const Graph& graph) {
    const auto& r = plan.stage_replicas;
    const std::string unsupported = " is not built with per-stage replication (stage_replicas); give every stage dp replicas";
    if (plan.tp != 1) throw Error(planError("tp", "tensor parallelism" + unsupported));
    if (plan.zero_stage != 0) throw Error(planError("zero_stage", "ZeRO sharding" + unsupported));
    if (plan.schedule != ScheduleKind::GPipe && plan.schedule != ScheduleKind::OneFOneB && plan.schedule != ScheduleKind::Hippie)
        throw Error(planError("schedule", std::string("the ") + toString(plan.schedule) + " schedule" + unsupported +
                                              ", or use gpipe, 1f1b or hippie"));
    const int widest = widestOfStages(plan, r, "stage_replicas", "replica count");
    if (plan.dp != widest)
        throw Error(planError("dp", "is " + std::to_string(plan.dp) + " but the widest stage has " + std::to_string(widest) +
                                        " replicas; with per-stage replication dp is the widest stage's"));
    const int64_t total = static_cast<int64_t>(plan.dp) * plan.micro_batches;
    for (size_t s = 0; s < r.size(); ++s)
        if (total % r[s] != 0)
            throw Error(planError("micro_batches", "the iteration's dp " + std::to_string(plan.dp) + " x " + std::to_string(plan.micro_batches) +
                                                       " micro-batches do not go round-robin evenly over stage " + std::to_string(s) + "'s " +
                                                       std::to_string(r[s]) + " replicas; use a multiple of " +
                                                       std::to_string(r[s] / std::gcd(r[s], plan.dp)) +
                                                       " micro-batches"));
    if (const auto tied = tiedStagesThatDiffer(plan, graph, r)) {
        const auto [t, a, b] = *tied;
        throw Error(planError("stage_replicas", "stages " + std::to_string(a) + " and " + std::to_string(b) + " share a tied weight (layer " +
                                                    std::to_string(t.owner_layer) + "'s, reused by layer " + std::to_string(t.user_layer) +
                                                    ") but have " + std::to_string(r[static_cast<size_t>(a)]) + " and " +
                                                    std::to_string(r[static_cast<size_t>(b)]) + " replicas; give them the same count"));
    }
}

void checkPipeline(const Plan& plan, const Graph& graph, int cluster_devices) {
    const int layers = graph.layerCount();
    if (plan.stages.empty()) throw Error(planError("stages", "a pipeline plan needs at least one stage"));
    if (plan.virtual_stages < 1) throw Error(planError("virtual_stages", "must be at least 1"));
    if (plan.stages.size() % static_cast<size_t>(plan.virtual_stages) != 0)
        throw Error(planError("stages", std::to_string(plan.stages.size()) + " stages is not a multiple of virtual_stages " +
                                            std::to_string(plan.virtual_stages)));
    int expected = 0;
    for (size_t i = 0; i < plan.stages.size(); ++i) {
        const StageRange& s = plan.stages[i];
        const std::string f = "stages[" + std::to_string(i) + "]";
        if (s.first_layer != expected)
            throw Error(planError(f, "starts at layer " + std::to_string(s.first_layer) + ", expected " + std::to_string(expected) +
                                         " (stages must cover the layers in order without gaps)"));
        if (s.last_layer < s.first_layer) throw Error(planError(f, "last_layer is before first_layer"));
        expected = s.last_layer + 1;
    }
    if (expected != layers)
        throw Error(planError("stages", "cover layers 0.." + std::to_string(expected - 1) + " but the model has " +
                                            std::to_string(layers) + " layers"));
    if (plan.dp < 1) throw Error(planError("dp", "must be at least 1"));
    const int pp = plan.pipelineDepth();
    if (plan.schedule == ScheduleKind::Interleaved) {
        if (plan.virtual_stages < 2) throw Error(planError("virtual_stages", "the interleaved schedule needs at least 2 chunks per device"));
        if (plan.micro_batches % pp != 0)
            throw Error(planError("micro_batches", "the interleaved schedule needs a multiple of the pipeline depth " +
                                                       std::to_string(pp) + ", got " + std::to_string(plan.micro_batches)));
    } else if (plan.virtual_stages != 1) {
        throw Error(planError("virtual_stages", "only the interleaved schedule runs several chunks per device"));
    }
    if (plan.perStageReplication()) checkStageReplicas(plan, graph);
    if (plan.perStageTp()) checkStageTp(plan, graph);
    if (!plan.device_map.empty()) {
        if (static_cast<int>(plan.device_map.size()) != pp)
            throw Error(planError("device_map", "has " + std::to_string(plan.device_map.size()) + " rows for " + std::to_string(pp) +
                                                    " pipeline stages"));
        std::set<int> seen;
        for (size_t s = 0; s < plan.device_map.size(); ++s) {
            if (plan.perStageReplication() && static_cast<int>(plan.device_map[s].size()) != plan.replicasOf(static_cast<int>(s)))
                throw Error(planError("device_map[" + std::to_string(s) + "]", "has " + std::to_string(plan.device_map[s].size()) +
                                                                                    " devices for the stage's " +
                                                                                    std::to_string(plan.replicasOf(static_cast<int>(s))) + " replicas"));
            const int t = plan.tpOf(static_cast<int>(s));
            if (!plan.perStageReplication() && static_cast<int64_t>(plan.device_map[s].size()) != static_cast<int64_t>(plan.dp) * t)
                throw Error(planError("device_map[" + std::to_string(s) + "]",
                                      "has " + std::to_string(plan.device_map[s].size()) + " devices, dp is " + std::to_string(plan.dp) +
                                          (t > 1 ? " and the stage's tp " + std::to_string(t) + " (dp x tp devices)" : std::string())));
            for (int d : plan.device_map[s]) {
                if (d < 0 || d >= cluster_devices)
                    throw Error(planError("device_map", "device " + std::to_string(d) + " is not in the cluster (0.." +
                                                            std::to_string(cluster_devices - 1) + ")"));
                if (!seen.insert(d).second) throw Error(planError("device_map", "device " + std::to_string(d) + " is used twice"));
            }
        }
    } else if ((plan.perStageReplication() || plan.perStageTp()) && plan.deviceCount() > cluster_devices) {
        throw Error("plan needs " + std::to_string(plan.deviceCount()) + " devices (" +
                    (plan.perStageTp() ? "dp " + std::to_string(plan.dp) + " x its stages' tp " + plan.tpText() : "its stages' replicas") +
                    ") but the cluster has " + std::to_string(cluster_devices));
    } else if (!plan.perStageReplication() && !plan.perStageTp() && static_cast<int64_t>(pp) * plan.dp * plan.tp > cluster_devices) {
        throw Error("plan needs " + std::to_string(static_cast<int64_t>(pp) * plan.dp * plan.tp) + " devices (pp " + std::to_string(pp) +
                    " x dp " + std::to_string(plan.dp) + (plan.tp > 1 ? " x tp " + std::to_string(plan.tp) : std::string()) +
                    ") but the cluster has " + std::to_string(cluster_devices));
    }
}

// An execution order must list every op once and put each producer before its consumers.
void checkPlacementOrder(const Plan& plan, const Graph& graph) {
    if (plan.placement_order.empty()) return;
    const size_t n = graph.ops.size();
    if (plan.placement_order.size() != n)
        throw Error(planError("placement_order", "has " + std::to_string(plan.placement_order.size()) + " entries for " +
                                                     std::to_string(n) + " ops"));
    std::vector<int> position(n, -1);
    for (size_t i = 0; i < n; ++i) {
        const int op = plan.placement_order[i];
        if (op < 0 || static_cast<size_t>(op) >= n || position[static_cast<size_t>(op)] >= 0)
            throw Error(planError("placement_order[" + std::to_string(i) + "]", "op " + std::to_string(op) +
                                                                                    " is not in the model or listed twice"));
        position[static_cast<size_t>(op)] = static_cast<int>(i);
    }
    for (const Edge& e : graph.edges)
        if (position[static_cast<size_t>(e.src)] > position[static_cast<size_t>(e.dst)])
            throw Error(planError("placement_order", "op " + std::to_string(e.dst) + " comes before its input op " +
                                                         std::to_string(e.src) + " (the order must be topological)"));
}

void checkPlacement(const Plan& plan, const Graph& graph, int cluster_devices) {
    if (plan.placement.size() != graph.ops.size())
        throw Error(planError("placement", "has " + std::to_string(plan.placement.size()) + " entries for " +
                                               std::to_string(graph.ops.size()) + " ops"));
    for (size_t i = 0; i < plan.placement.size(); ++i)
        if (plan.placement[i] < 0 || plan.placement[i] >= cluster_devices)
            throw Error(planError("placement[" + std::to_string(i) + "]", "device " + std::to_string(plan.placement[i]) +
                                                                              " is not in the cluster"));
    checkPlacementOrder(plan, graph);
    if (plan.dp != 1) throw Error(planError("dp", "placement plans have no data parallelism (dp must be 1)"));
    if (plan.schedule != ScheduleKind::GPipe && plan.schedule != ScheduleKind::OneFOneB)
        throw Error(planError("schedule", "placement plans run fill-drain micro-batches; use gpipe"));
}

// Segments and which device runs each one, per replica.
struct Layout {
    std::vector<Segment> segments;
    std::vector<std::vector<int>> devices;  // [segment][replica]
    std::vector<int> op_segment;            // op id -> segment
};

Layout pipelineLayout(const Plan& plan, const Graph& graph, const std::vector<std::vector<int>>& device_map) {
    Layout l;
    const int pp = plan.pipelineDepth();
    l.segments.resize(plan.stages.size());
    l.devices.resize(plan.stages.size());
    l.op_segment.assign(graph.ops.size(), -1);
    const std::vector<int> stage_of_layer = stageOfLayer(plan, graph);
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        l.segments[s].stage = static_cast<int>(s);
        l.devices[s] = device_map[s % static_cast<size_t>(pp)];
    }
    for (int op : graph.topologicalOrder()) {
        const int s = stage_of_layer[static_cast<size_t>(graph.ops[static_cast<size_t>(op)].layer)];
        l.segments[static_cast<size_t>(s)].ops.push_back(op);
        l.op_segment[static_cast<size_t>(op)] = s;
    }
    return l;
}

// Placement: maximal runs of the execution order (the plan's placement_order, else the
// graph's topological order) on one device. Edges between runs go forward in the order, so
// the segment graph is acyclic.
Layout placementLayout(const Plan& plan, const Graph& graph) {
    Layout l;
    l.op_segment.assign(graph.ops.size(), -1);
    int last_device = -1;
    const std::vector<int> order = plan.placement_order.empty() ? graph.topologicalOrder() : plan.placement_order;
    for (int op : order) {
        const int d = plan.placement[static_cast<size_t>(op)];
        if (d != last_device) {
            l.segments.emplace_back();
            l.devices.push_back({d});
            last_device = d;
        }
        l.segments.back().ops.push_back(op);
        l.op_segment[static_cast<size_t>(op)] = static_cast<int>(l.segments.size()) - 1;
    }
    return l;
}

// Buckets of each segment: ops taken from the last backwards into the open bucket, which is
// closed before an op when `closes(bucket, op)` says so; the remaining ops form the segment's
// last bucket. `param_bytes`: one tensor-parallel rank's parameter bytes of each op.
template <class Closes>
std::vector<std::vector<int>> cutBuckets(const std::vector<int64_t>& param_bytes, const Layout& l, std::vector<Bucket>& buckets,
                                         Closes closes) {
    std::vector<std::vector<int>> of_segment(l.segments.size());
    for (size_t s = 0; s < l.segments.size(); ++s) {
        Bucket cur;
        cur.segment = static_cast<int>(s);
        const auto& ops = l.segments[s].ops;
        for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
            if (!cur.ops.empty() && closes(cur, *it)) {
                of_segment[s].push_back(static_cast<int>(buckets.size()));
                buckets.push_back(cur);
                cur = Bucket{};
                cur.segment = static_cast<int>(s);
            }
            cur.ops.push_back(*it);
            cur.bytes += param_bytes[static_cast<size_t>(*it)];
        }
        of_segment[s].push_back(static_cast<int>(buckets.size()));
        buckets.push_back(cur);
    }
    return of_segment;
}

// Buckets closed when their gradient bytes reach bucket_bytes.
std::vector<std::vector<int>> makeBuckets(const std::vector<int64_t>& param_bytes, const Layout& l, int64_t bucket_bytes,
                                          std::vector<Bucket>& buckets) {
    return cutBuckets(param_bytes, l, buckets, [&](const Bucket& cur, int) { return cur.bytes >= bucket_bytes; });
}

// ZeRO-3's buckets: one per layer of each segment (the unit FSDP wraps and gathers); ops of a
// layer without parameters join the bucket of the layer before them.
std::vector<std::vector<int>> makeLayerBuckets(const std::vector<int64_t>& param_bytes, const Layout& l, const Graph& graph,
                                               std::vector<Bucket>& buckets) {
    const auto layer = [&](int op) { return graph.ops[static_cast<size_t>(op)].layer; };
    return cutBuckets(param_bytes, l, buckets, [&](const Bucket& cur, int op) {
        // The layer whose parameters the bucket holds: that of its latest op with some.
        const auto held = std::find_if(cur.ops.rbegin(), cur.ops.rend(), [&](int o) { return param_bytes[static_cast<size_t>(o)] > 0; });
        return held != cur.ops.rend() && layer(*held) != layer(op);
    });
}

// Turns each device's compute order into its full stream: receives are posted before the
// compute that needs them, sends follow the compute that produced their tensor.
class CommunicationDeriver {
public:
    // `prog`: its segment_devices and round_robin say which device of a segment a micro-batch
    // meets (Program::deviceFor).
    CommunicationDeriver(const Graph& graph, const Layout& l, const Program& prog, double mb_scale, std::vector<double> tensor_share)
        : graph_(graph), l_(l), prog_(prog), scale_(mb_scale), tensor_share_(std::move(tensor_share)) {
        const size_t n = l.segments.size();
        producers_.resize(n);
        consumers_.resize(n);
        out_edges_.resize(n);
        for (size_t i = 0; i < graph.edges.size(); ++i) {
            const Edge& e = graph.edges[i];
            const int a = l.op_segment[static_cast<size_t>(e.src)];
            const int b = l.op_segment[static_cast<size_t>(e.dst)];
            if (a == b) continue;
            consumers_[static_cast<size_t>(a)].push_back(b);
            producers_[static_cast<size_t>(b)].push_back(a);
            out_edges_[static_cast<size_t>(a)].push_back(static_cast<int>(i));
        }
        for (auto* lists : {&producers_, &consumers_})
            for (std::vector<int>& v : *lists) {
                std::sort(v.begin(), v.end());
                v.erase(std::unique(v.begin(), v.end()), v.end());
            }
        for (size_t seg = 0; seg < prog.segment_devices.size(); ++seg)
            for (int d : prog.segment_devices[seg]) hosted_[d].push_back(static_cast<int>(seg));
    }

    // `lane`: the device's lane in the segments it runs (r * t + k). `tp_group` (>= 0): the
    // group its TensorParallel instructions take (the lane's replica's tensor-parallel group).
    std::vector<Instr> derive(const std::vector<Instr>& compute, int lane, int device, const std::vector<int>& parts_of_segment, int tp_group) {
        // A stream whose segments exchange no tensor with other segments (a plan of one stage)
        // receives and sends nothing: it is its compute as it is, which the loop below would
        // copy instruction by instruction, in the same order.
        if (std::all_of(compute.begin(), compute.end(), [&](const Instr& in) {
                return in.segment < 0 || (producers_[static_cast<size_t>(in.segment)].empty() && consumers_[static_cast<size_t>(in.segment)].empty());
            })) {
            std::vector<Instr> out = compute;
            if (tp_group >= 0)
                for (Instr& in : out)
                    if (in.kind == InstrKind::TensorParallel) in.group = tp_group;
            return out;
        }
        std::vector<Instr> out;
        out.reserve(compute.size() * 2);
        std::unordered_set<uint64_t> have_activation;         // (producer segment, mb)
        std::unordered_set<uint64_t> have_grad;               // (segment, mb, from device)
        std::unordered_map<uint64_t, int> parts_done;         // (segment, mb) -> backward parts done
        std::unordered_map<uint64_t, int> consumers_done;     // (producer, mb, device) -> consumers done here
        std::vector<int> targets;
        for (size_t i = 0; i < compute.size(); ++i) {
            const Instr& in = compute[i];
            if (in.kind == InstrKind::Forward) {
                for (int p : producers_[static_cast<size_t>(in.segment)]) {
                    const int from = prog_.deviceFor(p, in.segment, lane, in.mb);
                    if (from == device || !have_activation.insert(key(p, in.mb)).second) continue;
                    out.push_back(p2p(InstrKind::RecvActivation, p, in.mb, from, bytesTo(p, device)));
                }
            }
            const bool first_backward = startsBackward(in) && !parts_done.count(key(in.segment, in.mb));
            if (first_backward) {
                for (int c : consumers_[static_cast<size_t>(in.segment)]) {
                    const int from = prog_.deviceFor(c, in.segment, lane, in.mb);
                    if (from == device || !have_grad.insert(key(in.segment, in.mb, from)).second) continue;
                    out.push_back(p2p(InstrKind::RecvGrad, in.segment, in.mb, from, bytesTo(in.segment, from)));
                }
            }
            const auto emit = [&](const Instr& x) {
                out.push_back(x);
                if (tp_group >= 0 && x.kind == InstrKind::TensorParallel) out.back().group = tp_group;
            };
            emit(in);
            // The compute's tensor-parallel collectives and ZeRO-3 gathers are part of it: its
            // sends follow them.
            while (i + 1 < compute.size() && isInline(compute[i + 1].kind)) emit(compute[++i]);
            if (in.kind == InstrKind::Forward) {
                targets.clear();
                for (int c : consumers_[static_cast<size_t>(in.segment)])
                    for (int to : prog_.devicesServedBy(c, in.segment, lane, in.mb)) targets.push_back(to);
                std::sort(targets.begin(), targets.end());
                targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
                for (int to : targets)
                    if (to != device) out.push_back(p2p(InstrKind::SendActivation, in.segment, in.mb, to, bytesTo(in.segment, to)));
            }
            if (!completesInputGrad(in, parts_done, parts_of_segment)) continue;
            // This segment's input gradient for in.mb is complete: send each producer's
            // gradient once every consumer of that producer on this device is done.
            for (int p : producers_[static_cast<size_t>(in.segment)])
                for (int to : prog_.devicesServedBy(p, in.segment, lane, in.mb)) {
                    if (to == device) continue;
                    int& done = consumers_done[key(p, in.mb, to)];
                    ++done;
                    if (done == consumersOn(p, device, in.segment, lane, in.mb))
                        out.push_back(p2p(InstrKind::SendGrad, p, in.mb, to, bytesTo(p, device)));
                }
        }
        return out;
    }

    // Where lane `lane` repeats lane `from`'s communication with its own devices: every
    // segment's devices of the two lanes correspond one to one, in the same order, each pair
    // hosting the same segments, so that the sends and receives derived for `lane` are those of `from` with
    // each peer replaced by its counterpart (and the same bytes). Returns the counterpart of
    // each device of `from`'s segments, or nothing (then each lane is derived on its own):
    // per-stage replication routes micro-batches round-robin and per-stage degrees mix lanes.
    // The same for every pipeline position: found once per pair of lanes.
    const std::optional<std::unordered_map<int, int>>& counterparts(int from, int lane) {
        const auto [it, added] = counterparts_.try_emplace({from, lane});
        if (added) it->second = findCounterparts(from, lane);
        return it->second;
    }

private:
    std::optional<std::unordered_map<int, int>> findCounterparts(int from, int lane) const {
        if (prog_.round_robin || !prog_.segment_tp.empty()) return std::nullopt;
        std::unordered_map<int, int> there, back;
        for (const auto& devs : prog_.segment_devices) {
            if (static_cast<size_t>(std::max(from, lane)) >= devs.size()) return std::nullopt;
            const int a = devs[static_cast<size_t>(from)], b = devs[static_cast<size_t>(lane)];
            if (there.try_emplace(a, b).first->second != b || back.try_emplace(b, a).first->second != a) return std::nullopt;
        }
        for (const auto& [a, b] : there) {
            const auto ha = hosted_.find(a), hb = hosted_.find(b);
            if (ha == hosted_.end() || hb == hosted_.end() || ha->second != hb->second) return std::nullopt;
        }
        // In the same order: a compute's sends to several devices go in the order of their ids.
        std::vector<std::pair<int, int>> pairs(there.begin(), there.end());
        std::sort(pairs.begin(), pairs.end());
        for (size_t i = 1; i < pairs.size(); ++i)
            if (pairs[i].second < pairs[i - 1].second) return std::nullopt;
        return there;
    }

    // A micro-batch's Recompute is part of its backward (the backward rebuilds each recomputed
    // layer just before that layer's backward): it waits for the output gradient as well.
    static bool startsBackward(const Instr& in) {
        return in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardInput || in.kind == InstrKind::Recompute;
    }

    // (segment, micro-batch[, device]) in 64 bits; 20 bits for a micro-batch or a device is far
    // beyond any program.
    static uint64_t key(int segment, int mb, int device = 0) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(segment)) << 40) | (static_cast<uint64_t>(static_cast<uint32_t>(mb) & 0xFFFFFu) << 20) |
               (static_cast<uint32_t>(device) & 0xFFFFFu);
    }

    static bool completesInputGrad(const Instr& in, std::unordered_map<uint64_t, int>& parts_done,
                                   const std::vector<int>& parts_of_segment) {
        if (in.kind == InstrKind::BackwardInput) return true;
        if (in.kind != InstrKind::Backward) return false;
        if (in.bucket < 0) return true;
        return ++parts_done[key(in.segment, in.mb)] == parts_of_segment[static_cast<size_t>(in.segment)];
    }

    // Consumers of `producer` that lane `lane` of `segment` (on `device`) runs micro-batch mb of.
    int consumersOn(int producer, int device, int segment, int lane, int mb) const {
        int n = 0;
        for (int c : consumers_[static_cast<size_t>(producer)]) n += prog_.deviceFor(c, segment, lane, mb) == device;
        return n;
    }

    bool hosts(int device, int segment) const {
        const auto it = hosted_.find(device);
        return it != hosted_.end() && std::binary_search(it->second.begin(), it->second.end(), segment);
    }

    // Bytes a producer segment sends to `device` (the segments it hosts read them): one tensor
    // per producing op, however many of the device's segments read it, times the share of it a
    // tensor-parallel rank sends. A device runs each segment it hosts for one lane, so this is
    // the same for every micro-batch.
    int64_t bytesTo(int producer, int device) {
        const uint64_t cached = key(producer, 0, device);
        if (auto it = bytes_cache_.find(cached); it != bytes_cache_.end()) return it->second;
        tensors_.clear();  // (producing op, bytes) of each edge to the device
        for (int i : out_edges_[static_cast<size_t>(producer)]) {
            const Edge& e = graph_.edges[static_cast<size_t>(i)];
            if (hosts(device, l_.op_segment[static_cast<size_t>(e.dst)])) tensors_.emplace_back(e.src, e.bytes);
        }
        std::sort(tensors_.begin(), tensors_.end());
        double sum = 0;
        for (size_t k = 0; k < tensors_.size(); ++k)  // the largest edge of each op: its last
            if (k + 1 == tensors_.size() || tensors_[k + 1].first != tensors_[k].first)
                sum += static_cast<double>(tensors_[k].second) * tensor_share_[static_cast<size_t>(tensors_[k].first)];
        const auto b = static_cast<int64_t>(sum * scale_);
        bytes_cache_.emplace(cached, b);
        return b;
    }

    static Instr p2p(InstrKind k, int segment, int mb, int peer, int64_t bytes) {
        Instr in;
        in.kind = k;
        in.segment = segment;
        in.mb = mb;
        in.peer = peer;
        in.bytes = bytes;
        return in;
    }

    const Graph& graph_;
    const Layout& l_;
    const Program& prog_;
    double scale_;
    std::vector<double> tensor_share_;  // by op: share of its output a tensor-parallel rank sends
    std::vector<std::vector<int>> producers_;  // by segment, ascending, each once
    std::vector<std::vector<int>> consumers_;
    std::vector<std::vector<int>> out_edges_;  // by segment: indices of the edges leaving it
    std::unordered_map<uint64_t, int64_t> bytes_cache_;  // key(producer, 0, device): same for every replica
    std::unordered_map<int, std::vector<int>> hosted_;    // device -> the segments it runs, ascending
    std::vector<std::pair<int, int64_t>> tensors_;       // bytesTo's scratch
    std::map<std::pair<int, int>, std::optional<std::unordered_map<int, int>>> counterparts_;  // by (from lane, lane)
};

// Adds recomputation before each segment's first backward of a micro-batch, and the
// gradient collectives and optimizer step at the end (hippie: bucket by bucket during the
// last backward, so they overlap it). ZeRO (prog.zero_stage):
// - 1: all-reduce as stage 0, the step updates the shard, then an all-gather of every bucket.
// - 2: each micro-batch's gradients are reduce-scattered after its backward (so only the
//   shard accumulates), the step updates the shard, then an all-gather of every bucket.
// - 3: as 2, without the all-gather after the step: each compute gathers its layers'
//   parameters one by one and frees them after use (zeroGatherInstructions).
// Program::recompute_per_layer: per segment, checkpoints at every recomputed layer when that
// holds less than keeping the segment's inputs alone. With h micro-batches in flight at most,
// a layer at a time holds h x (the checkpoints) + (the largest layer's rebuild), the segment's
// inputs alone the rebuild of every recomputed layer (the inputs are kept either way).
// Which (segment, micro-batch) pairs of one compute order have been seen: a flat table over
// the order's own segments and micro-batches (a std::set of pairs allocated a node for each,
// thousands per program).
class SegmentMicroBatchFlags {
public:
    SegmentMicroBatchFlags(const std::vector<Instr>& order, size_t segments) : slot_(segments, -1) {
        int slots = 0;
        for (const Instr& in : order) {
            if (in.segment < 0) continue;
            int& slot = slot_[static_cast<size_t>(in.segment)];
            if (slot < 0) slot = slots++;
            mbs_ = std::max(mbs_, static_cast<size_t>(std::max(in.mb, 0)) + 1);
        }
        seen_.assign(static_cast<size_t>(slots) * mbs_, 0);
    }
    // Marks (segment, mb), both from the order; true if it was not marked yet.
    bool set(int segment, int mb) {
        char& f = seen_[static_cast<size_t>(slot_[static_cast<size_t>(segment)]) * mbs_ + static_cast<size_t>(mb)];
        const bool first = f == 0;
        f = 1;
        return first;
    }

private:
    std::vector<int> slot_;  // by segment: its row, -1 when not in the order
    size_t mbs_ = 0;
    std::vector<char> seen_;
};

std::vector<bool> checkpointGranularity(const Graph& graph, const Program& prog, const Layout& layout,
                                        const std::vector<std::vector<Instr>>& orders) {
    const size_t n = layout.segments.size();
    std::vector<int64_t> held(n, 0), in_flight(n, 0);
    std::vector<bool> split(n, false);
    for (const auto& order : orders) {
        SegmentMicroBatchFlags backward(order, n);
        for (const Instr& in : order) {
            const size_t s = static_cast<size_t>(in.segment);
            if (in.segment < 0) continue;
            if (in.kind == InstrKind::Forward) held[s] = std::max(held[s], ++in_flight[s]);
            if (in.kind == InstrKind::BackwardInput) split[s] = true;
            if ((in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardInput) && backward.set(in.segment, in.mb)) --in_flight[s];
        }
    }
    const std::vector<bool> read_by_other_layer = graph.readByAnotherLayer();
    std::vector<bool> per_layer(n, true);
    for (size_t s = 0; s < n; ++s) {
        if (prog.zero_stage >= 3) continue;
        std::map<int, int64_t> rebuild;  // by layer
        int64_t checkpoints = 0, all = 0;
        for (int op : layout.segments[s].ops) {
            const size_t i = static_cast<size_t>(op);
            if (!prog.recomputedWithLayer(op)) continue;
            const int64_t bytes = graph.ops[i].keptBytes();  // what the rebuilt forward keeps
            rebuild[graph.ops[i].layer] += bytes;
            all += bytes;
            if (read_by_other_layer[i]) checkpoints += graph.ops[i].output_bytes;  // the next layer's input, whole
        }
        if (rebuild.size() < 2) continue;  // one layer: the same either way
        int64_t largest = 0;
        for (const auto& [layer, bytes] : rebuild) largest = std::max(largest, bytes);
        per_layer[s] = Program::checkpointsEachLayer(static_cast<double>(held[s]), static_cast<double>(checkpoints),
                                                     static_cast<double>(split[s] ? all : largest), static_cast<double>(all));
    }
    return per_layer;
}

std::vector<Instr> finishComputeOrder(const std::vector<Instr>& order, const Plan& plan, const Program& prog,
                                      const std::vector<std::vector<int>>& buckets_of, const std::vector<int>& group_of_segment,
                                      const std::vector<bool>& segment_recomputes) {
    std::vector<Instr> out;
    out.reserve(order.size() * 2 + 1);
    std::vector<char> hosts(prog.segments.size(), 0);
    std::vector<int> last_backward_mb(prog.segments.size(), 0);  // by segment: mb of its last backward in this order
    for (const Instr& in : order) {
        hosts[static_cast<size_t>(in.segment)] = 1;
        if (in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardWeight) last_backward_mb[static_cast<size_t>(in.segment)] = in.mb;
    }
    std::vector<int> hosted;  // ascending
    for (size_t s = 0; s < hosts.size(); ++s)
        if (hosts[s]) hosted.push_back(static_cast<int>(s));
    // A segment's gradients are reduced over its replicas (with per-stage replication, a
    // segment of one replica has none to reduce with).
    const auto reduces = [&](int segment) { return prog.replicasOf(segment) > 1; };
    const bool hippie = plan.schedule == ScheduleKind::Hippie;
    const int zero = prog.zero_stage;
    const bool scatter = zero >= 2;
    SegmentMicroBatchFlags recomputed(order, prog.segments.size());
    auto collective = [&](InstrKind kind, int bucket, int mb) {
        Instr c;
        c.kind = kind;
        c.bucket = bucket;
        c.mb = mb;
        c.group = group_of_segment[static_cast<size_t>(prog.buckets[static_cast<size_t>(bucket)].segment)];
        return c;
    };
    auto hasBytes = [&](int b) { return prog.buckets[static_cast<size_t>(b)].bytes > 0; };
    for (const Instr& in : order) {
        const bool backward = in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardInput;
        if (backward && segment_recomputes[static_cast<size_t>(in.segment)] && recomputed.set(in.segment, in.mb)) {
            Instr r = in;
            r.kind = InstrKind::Recompute;
            out.push_back(r);
        }
        if (hippie && reduces(in.segment) && in.kind == InstrKind::Backward && in.mb == last_backward_mb[static_cast<size_t>(in.segment)]) {
            for (int b : buckets_of[static_cast<size_t>(in.segment)]) {
                Instr part = in;
                part.bucket = b;
                out.push_back(part);
                if (hasBytes(b)) out.push_back(scatter ? collective(InstrKind::ReduceScatter, b, in.mb) : collective(InstrKind::AllReduce, b, -1));
            }
            continue;
        }
        out.push_back(in);
        // ZeRO 2/3: the weight gradients of this micro-batch are complete; reduce-scatter them.
        const bool weights_done = (in.kind == InstrKind::Backward && in.bucket < 0) || in.kind == InstrKind::BackwardWeight;
        if (scatter && reduces(in.segment) && weights_done)
            for (int b : buckets_of[static_cast<size_t>(in.segment)])
                if (hasBytes(b)) out.push_back(collective(InstrKind::ReduceScatter, b, in.mb));
    }
    if (!hippie && !scatter) {
        for (int s : hosted)
            if (reduces(s))
                for (int b : buckets_of[static_cast<size_t>(s)])
                    if (hasBytes(b)) out.push_back(collective(InstrKind::AllReduce, b, -1));
    }
    Instr opt;
    opt.kind = InstrKind::OptimizerStep;
    out.push_back(opt);
    if (zero == 1 || zero == 2)
        for (int s : hosted)
            if (reduces(s))
                for (int b : buckets_of[static_cast<size_t>(s)])
                    if (hasBytes(b)) out.push_back(collective(InstrKind::AllGather, b, -1));
    return out;
}

// ZeRO-3: a ZeroGather instruction right after each compute instruction that uses
// parameters, listing the per-layer gathers inside it (zero_gathers.h), over the segment's
// data-parallel group.
std::vector<Instr> zeroGatherInstructions(const std::vector<Instr>& in, const Program& prog, const Graph& graph,
                                          const std::vector<int>& group_of_segment) {
    std::vector<Instr> out;
    out.reserve(in.size() * 2);
    // Every micro-batch gathers what its compute's (segment, kind, bucket) does: read once.
    std::map<std::tuple<int, InstrKind, int>, std::pair<int, int64_t>> gathers;  // -> (count, bytes)
    for (const Instr& x : in) {
        out.push_back(x);
        if (!isCompute(x.kind)) continue;
        auto [it, added] = gathers.try_emplace({x.segment, x.kind, x.bucket});
        if (added) {
            const std::vector<int> buckets = zeroGatheredBuckets(prog, graph, x);
            it->second.first = static_cast<int>(buckets.size());
            for (int b : buckets) it->second.second += prog.buckets[static_cast<size_t>(b)].bytes;
        }
        if (it->second.first == 0) continue;
        Instr z;
        z.kind = InstrKind::ZeroGather;
        z.segment = x.segment;
        z.mb = x.mb;
        z.bucket = x.bucket;
        z.of = x.kind;
        z.group = group_of_segment[static_cast<size_t>(x.segment)];
        z.count = it->second.first;
        z.bytes = it->second.second;
        out.push_back(z);
    }
    return out;
}

// The devices of tensor-parallel rank k in a row of replica-major lanes (replica r, rank k at
// r * tp + k): one per replica.
std::vector<int> laneGroup(const std::vector<int>& lanes, int tp, int k) {
    std::vector<int> group;
    for (size_t i = static_cast<size_t>(k); i < lanes.size(); i += static_cast<size_t>(tp)) group.push_back(lanes[i]);
    return group;
}

// The TensorParallel instruction after each compute instruction with tensor-parallel
// collectives: a segment's forward all-reduces after Forward, those of its recomputed ops
// after Recompute, its backward ones after Backward (a bucket part: the part's ops) and
// BackwardInput. BackwardWeight has none.
class TensorParallelInstructions {
public:
    // Each segment's collectives over its own degree (Program::tpOf).
    TensorParallelInstructions(const Graph& graph, const Program& prog) : prog_(prog) {
        if (prog.tp <= 1) return;
        TensorParallelTrafficByDegree traffic(graph, prog.sequence_parallel, prog.micro_batch_size);
        auto sum = [&](int segment, const std::vector<int>& ops, bool backward, bool recomputed_only) {
            std::pair<int, int64_t> t{0, 0};
            if (prog.tpOf(segment) <= 1) return t;
            const std::vector<OpTensorParallelTraffic>& by_op = traffic.of(prog.tpOf(segment));
            for (int op : ops) {
                if (recomputed_only && !prog.recomputed(op)) continue;
                const OpTensorParallelTraffic& o = by_op[static_cast<size_t>(op)];
                t.first += backward ? o.backward : o.forward;
                t.second += backward ? o.backward_bytes : o.forward_bytes;
            }
            return t;
        };
        for (size_t s = 0; s < prog.segments.size(); ++s) {
            const auto& ops = prog.segments[s].ops;
            forward_.push_back(sum(static_cast<int>(s), ops, false, false));
            backward_.push_back(sum(static_cast<int>(s), ops, true, false));
            recompute_.push_back(sum(static_cast<int>(s), ops, false, true));
        }
        for (const Bucket& b : prog.buckets) bucket_backward_.push_back(sum(b.segment, b.ops, true, false));
    }

    // `order` with a TensorParallel instruction of group `group` after each compute that has some.
    std::vector<Instr> insert(const std::vector<Instr>& order, int group) const {
        std::vector<Instr> out;
        out.reserve(order.size() * 2);
        for (const Instr& in : order) {
            out.push_back(in);
            const auto [count, bytes] = collectivesOf(in);
            if (count == 0) continue;
            Instr t;
            t.kind = InstrKind::TensorParallel;
            t.segment = in.segment;
            t.mb = in.mb;
            t.group = group;
            t.bytes = bytes;
            t.count = count;
            t.of = in.kind;
            t.sequence_parallel = prog_.sequence_parallel;
            out.push_back(t);
        }
        return out;
    }

private:
    std::pair<int, int64_t> collectivesOf(const Instr& in) const {
        const auto seg = static_cast<size_t>(in.segment);
        switch (in.kind) {
        case InstrKind::Forward: return forward_[seg];
        case InstrKind::Recompute: return recompute_[seg];
        case InstrKind::Backward: return in.bucket >= 0 ? bucket_backward_[static_cast<size_t>(in.bucket)] : backward_[seg];
        case InstrKind::BackwardInput: return backward_[seg];
        default: return {0, 0};
        }
    }

    const Program& prog_;
    // (collectives, bytes) per segment, and per bucket for a backward split into bucket parts.
    std::vector<std::pair<int, int64_t>> forward_, backward_, recompute_, bucket_backward_;
};

}  // namespace

namespace {

std::string minMicroBatchText(const Graph& graph) {
    return graph.name + " needs at least " + std::to_string(graph.min_micro_batch) + " samples a micro-batch" +
           (graph.min_micro_batch_reason.empty() ? "" : " (" + graph.min_micro_batch_reason + ")");
}

}  // namespace

namespace {

// Per-stage tensor-parallel degrees (Plan::stage_tp): what their lowering supports.
void checkStageTp(const Plan& plan, const Graph& graph) {
    const auto& t = plan.stage_tp;
    const std::string unsupported = " is not built with per-stage tensor-parallel degrees (stage_tp); give every stage the same tp";
    if (plan.schedule == ScheduleKind::Interleaved) throw Error(planError("schedule", "the interleaved schedule" + unsupported));
    const int widest = widestOfStages(plan, t, "stage_tp", "tensor-parallel degree");
    if (plan.tp != widest)
        throw Error(planError("tp", "is " + std::to_string(plan.tp) + " but the widest stage of stage_tp has " + std::to_string(widest) +
                                        "; with per-stage degrees tp is the widest stage's"));
    if (plan.sequence_parallel)
        throw Error(planError("sequence_parallel", "sequence parallelism (stage boundaries carry 1/t of the sequence)" + unsupported));
    if (plan.perStageReplication()) throw Error(planError("stage_replicas", "per-stage replication" + unsupported));
    for (size_t s = 0; s < t.size(); ++s)
        if (t[s] > 1 && !graph.tensorParallelFits(t[s]))
            throw Error(planError("stage_tp[" + std::to_string(s) + "]", "is " + std::to_string(t[s]) + " but model '" + graph.name +
                                                                            "' splits only by divisors of " +
                                                                            std::to_string(graph.tensor_parallel_divisor) +
                                                                            " (its tensor_parallel_divisor: the attention heads)"));
    if (const auto tied = tiedStagesThatDiffer(plan, graph, t)) {
        const auto [u, a, b] = *tied;
        throw Error(planError("stage_tp", "stages " + std::to_string(a) + " and " + std::to_string(b) + " share a tied weight (layer " +
                                              std::to_string(u.owner_layer) + "'s, reused by layer " + std::to_string(u.user_layer) +
                                              ", split by vocabulary over the tp ranks) but have tp " + std::to_string(t[static_cast<size_t>(a)]) +
                                              " and " + std::to_string(t[static_cast<size_t>(b)]) + "; give them the same degree"));
    }
    const std::vector<int> stage_of_layer = stageOfLayer(plan, graph);
    const auto stageOf = [&](int op) { return stage_of_layer[static_cast<size_t>(graph.ops[static_cast<size_t>(op)].layer)]; };
    // A tensor crossing into a stage of another degree must be whole on every rank.
    for (const Edge& e : graph.edges) {
        const int a = stageOf(e.src), b = stageOf(e.dst);
        if (a == b || t[static_cast<size_t>(a)] == t[static_cast<size_t>(b)]) continue;
        const Op& producer = graph.ops[static_cast<size_t>(e.src)];
        if (sentShare(producer, TensorSplit{t[static_cast<size_t>(a)], false}) < 1.0)
            throw Error(planError("stage_tp", "op '" + producer.name + "' of stage " + std::to_string(a) + " (tp " +
                                                  std::to_string(t[static_cast<size_t>(a)]) + ") splits its output over its tp ranks, and stage " +
                                                  std::to_string(b) + " (tp " + std::to_string(t[static_cast<size_t>(b)]) +
                                                  ") reads it; cut the stages elsewhere or give them the same degree"));
    }
}

void checkTensorParallel(const Plan& plan, const Graph& graph) {
    if (plan.perStageTp() && plan.isPlacement()) throw Error(planError("stage_tp", "is set but placement plans have no pipeline stages"));
    if (plan.tp < 1) throw Error(planError("tp", "is " + std::to_string(plan.tp) + "; the tensor-parallel degree must be at least 1"));
    if (plan.sequence_parallel && plan.tp == 1)
        throw Error(planError("sequence_parallel", "needs tp > 1: sequence parallelism splits over the tensor-parallel ranks"));
    if (plan.tp != 1 && plan.isPlacement())
        throw Error(planError("tp", "placement plans place whole ops on one device each; use 1"));
    if (plan.tp == 1 || graph.tensorParallelFits(plan.tp) || plan.perStageTp()) return;
    const bool splits = std::any_of(graph.ops.begin(), graph.ops.end(), [](const Op& o) { return o.tensor_parallel != TensorParallel::Replicated; });
    if (!splits)
        throw Error(planError("tp", "is " + std::to_string(plan.tp) + " but model '" + graph.name +
                                        "' marks no op as split by tensor parallelism (ops' tensor_parallel); use 1"));
    throw Error(planError("tp", "is " + std::to_string(plan.tp) + " but model '" + graph.name + "' splits only by divisors of " +
                                    std::to_string(graph.tensor_parallel_divisor) +
                                    " (its tensor_parallel_divisor: the attention heads); use one of those"));
}

}  // namespace

void requireTrainableBatch(const Graph& graph, int global_batch) {
    if (global_batch < graph.min_micro_batch)
        throw Error("the global batch of " + std::to_string(global_batch) + " samples is too small: " + minMicroBatchText(graph) +
                    "; raise the global batch");
}

void checkPlan(const Plan& plan, const Graph& graph, int cluster_devices) {
    if (graph.ops.empty()) throw Error("plan: the model has no operators");
    if (plan.micro_batches < 1) throw Error(planError("micro_batches", "must be at least 1"));
    if (plan.global_batch < 1) throw Error(planError("global_batch", "must be at least 1"));
    if (plan.isPlacement()) checkPlacement(plan, graph, cluster_devices);
    else checkPipeline(plan, graph, cluster_devices);
    // int64: dp 65536 x 65536 micro-batches wraps an int to 0 (and then divides by it).
    if (plan.global_batch % (static_cast<int64_t>(plan.dp) * plan.micro_batches) != 0)
        throw Error(planError("global_batch", std::to_string(plan.global_batch) + " samples do not split into dp " +
                                                  std::to_string(plan.dp) + " x " + std::to_string(plan.micro_batches) +
                                                  " equal micro-batches"));
    const int64_t samples = plan.global_batch / (static_cast<int64_t>(plan.dp) * plan.micro_batches);
    if (samples < graph.min_micro_batch)
        throw Error(planError("micro_batches", "micro-batches of " + std::to_string(samples) + " samples (global batch " +
                                                   std::to_string(plan.global_batch) + " / dp " + std::to_string(plan.dp) + " / " +
                                                   std::to_string(plan.micro_batches) + " micro-batches) are too small: " +
                                                   minMicroBatchText(graph) + "; use fewer micro-batches, a smaller dp or a larger global batch"));
    const int layers = graph.layerCount();
    for (int layer : plan.recompute_layers)
        if (layer < 0 || layer >= layers)
            throw Error(planError("recompute_layers", "layer " + std::to_string(layer) + " is not in the model (0.." +
                                                          std::to_string(layers - 1) + ")"));
    if (plan.selective_recompute && attentionCores(graph).empty())
        throw Error(planError("selective_recompute", "model '" + graph.name +
                                                         "' has no attention core (ops <prefix>_scores and <prefix>_softmax) to recompute; "
                                                         "use recompute_layers (full recomputation) instead"));
    if (plan.bucket_bytes <= 0) throw Error(planError("bucket_bytes", "must be positive"));
    if (plan.zero_stage < 0 || plan.zero_stage > kMaxZeroStage)
        throw Error(planError("zero_stage", "is " + std::to_string(plan.zero_stage) +
                                                "; ZeRO stages are 0 (none), 1 (optimizer state), 2 (+ gradients) and 3 (+ parameters)"));
    if (plan.zero_stage != 0 && plan.isPlacement())
        throw Error(planError("zero_stage", "placement plans have no data-parallel replicas to shard over; use 0"));
    checkTensorParallel(plan, graph);
}

Program lower(const Plan& plan, const Graph& graph, const LowerOptions& options) {
    Program prog;
    prog.schedule = plan.schedule;
    prog.micro_batches = plan.micro_batches;
    prog.pipelines = plan.dp;
    prog.micro_batch_size = plan.microBatchSize();
    // ZeRO shards over the replicas of a stage: with one replica there is nothing to shard.
    prog.zero_stage = plan.dp > 1 && !plan.isPlacement() ? plan.zero_stage : 0;

    const bool placement = plan.isPlacement();
    const int tp = placement ? 1 : std::max(plan.tp, 1);
    prog.tp = tp;
    prog.sequence_parallel = tp > 1 && plan.sequence_parallel;
    const auto device_map = plan.device_map.empty() ? defaultDeviceMap(plan) : plan.device_map;
    prog.round_robin = !placement && plan.perStageReplication();
    const Layout layout = placement ? placementLayout(plan, graph) : pipelineLayout(plan, graph, device_map);
    prog.segments = layout.segments;
    prog.segment_devices = layout.devices;
    if (!placement && plan.perStageTp()) prog.segment_tp = plan.stage_tp;
    // Each segment's split: its own degree.
    const auto splitOf = [&](int segment) { return TensorSplit{prog.tpOf(segment), prog.sequence_parallel}; };

    prog.recompute_op.assign(graph.ops.size(), false);
    std::set<int> recompute_layers(plan.recompute_layers.begin(), plan.recompute_layers.end());
    std::vector<bool> segment_recomputes(layout.segments.size(), false);
    for (size_t op = 0; op < graph.ops.size(); ++op) {
        if (!recompute_layers.count(graph.ops[op].layer)) continue;
        prog.recompute_op[op] = true;
        segment_recomputes[static_cast<size_t>(layout.op_segment[op])] = true;
    }
    prog.selective_op.assign(graph.ops.size(), false);
    if (plan.selective_recompute)
        for (const AttentionCore& core : attentionCores(graph))
            for (const int op : core.ops()) {
                if (recompute_layers.count(graph.ops[static_cast<size_t>(op)].layer)) continue;  // recomputed whole already
                prog.recompute_op[static_cast<size_t>(op)] = true;
                prog.selective_op[static_cast<size_t>(op)] = true;
                segment_recomputes[static_cast<size_t>(layout.op_segment[static_cast<size_t>(op)])] = true;
            }

    std::vector<int64_t> param_bytes(graph.ops.size());
    for (size_t op = 0; op < graph.ops.size(); ++op) param_bytes[op] = rankParamBytes(graph, splitOf(layout.op_segment[op]), static_cast<int>(op));
    const auto buckets_of = prog.zero_stage >= 3 ? makeLayerBuckets(param_bytes, layout, graph, prog.buckets)
                                                 : makeBuckets(param_bytes, layout, plan.bucket_bytes, prog.buckets);
    std::vector<int> parts_of_segment(layout.segments.size());
    for (size_t s = 0; s < layout.segments.size(); ++s) parts_of_segment[s] = static_cast<int>(buckets_of[s].size());
    // Data-parallel groups, one per (segment, tensor-parallel rank k): the replicas' rank k
    // (-1 for the ranks beyond a segment's degree).
    std::vector<std::vector<int>> group_of_segment(static_cast<size_t>(tp), std::vector<int>(layout.segments.size(), -1));
    for (size_t s = 0; s < layout.segments.size(); ++s)
        for (int k = 0; k < prog.tpOf(static_cast<int>(s)); ++k) {
            group_of_segment[static_cast<size_t>(k)][s] = static_cast<int>(prog.groups.size());
            prog.groups.push_back(laneGroup(layout.devices[s], prog.tpOf(static_cast<int>(s)), k));
        }

    // Compute order of each pipeline position (or each device of a placement).
    std::vector<std::vector<Instr>> orders;
    std::vector<std::vector<int>> position_devices;  // [position][replica * t + k]
    std::vector<int> position_tp;                    // [position]: t, the degree of its segments
    if (placement) {
        std::map<int, std::vector<int>> segments_of_device;
        for (size_t s = 0; s < layout.segments.size(); ++s) segments_of_device[layout.devices[s][0]].push_back(static_cast<int>(s));
        for (const auto& [device, segs] : segments_of_device) {
            orders.push_back(fillDrainOrder(segs, plan.micro_batches));
            position_devices.push_back({device});
            position_tp.push_back(1);
        }
    } else if (prog.round_robin) {
        // One order per (stage, replica), each its own position of one lane.
        const auto by_stage = roundRobinOrders(plan.schedule, plan.stage_replicas, plan.dp * plan.micro_batches);
        for (size_t s = 0; s < by_stage.size(); ++s)
            for (size_t j = 0; j < by_stage[s].size(); ++j) {
                orders.push_back(by_stage[s][j]);
                position_devices.push_back({device_map[s][j]});
                position_tp.push_back(1);
            }
    } else {
        orders = pipelineOrders(plan.schedule, plan.pipelineDepth(), plan.virtual_stages, plan.micro_batches);
        position_devices = device_map;
        for (size_t pos = 0; pos < position_devices.size(); ++pos) position_tp.push_back(plan.tpOf(static_cast<int>(pos)));
    }
    // Tensor-parallel groups, one per (position, replica), after the data-parallel ones.
    std::vector<std::vector<int>> tp_group_of(position_devices.size());  // [position][replica]
    for (size_t pos = 0; pos < position_devices.size(); ++pos) {
        const int t = position_tp[pos];
        if (t <= 1) continue;
        for (size_t r = 0; r * static_cast<size_t>(t) < position_devices[pos].size(); ++r) {
            tp_group_of[pos].push_back(static_cast<int>(prog.groups.size()));
            const auto first = position_devices[pos].begin() + static_cast<std::ptrdiff_t>(r) * t;
            prog.groups.emplace_back(first, first + t);
        }
    }
    const TensorParallelInstructions tp_instructions(graph, prog);
    prog.recompute_per_layer = checkpointGranularity(graph, prog, layout, orders);

    std::vector<double> tensor_share(graph.ops.size(), 1.0);
    for (size_t op = 0; op < graph.ops.size(); ++op) tensor_share[op] = sentShare(graph.ops[op], splitOf(layout.op_segment[op]));
    CommunicationDeriver deriver(graph, layout, prog, prog.micro_batch_size / graph.batch_size, std::move(tensor_share));
    for (size_t pos = 0; pos < orders.size(); ++pos) {
        // Each tensor-parallel rank's order: the same instructions, with its own data-parallel groups.
        const int t = position_tp[pos];
        std::vector<std::vector<Instr>> full(static_cast<size_t>(t));
        for (int k = 0; k < t; ++k) {
            const auto& groups = group_of_segment[static_cast<size_t>(k)];
            full[static_cast<size_t>(k)] = finishComputeOrder(orders[pos], plan, prog, buckets_of, groups, segment_recomputes);
            if (prog.zero_stage >= 3) full[static_cast<size_t>(k)] = zeroGatherInstructions(full[static_cast<size_t>(k)], prog, graph, groups);
        }
        // Rank k's order with its TensorParallel instructions is the same for every replica but
        // for their group (the replica's tp group): made once per rank and given each replica's
        // group as the communication is derived, rather than rebuilt for every lane.
        if (t > 1)
            for (size_t k = 0; k < full.size(); ++k) full[k] = tp_instructions.insert(full[k], -1);
        // Replica r > 0 mostly repeats replica 0's stream of its rank with its own devices:
        // copied with its peers and tensor-parallel group replaced, rather than derived again.
        std::vector<size_t> replica_zero(static_cast<size_t>(t));  // [k]: the stream of lane k
        for (size_t lane = 0; lane < position_devices[pos].size(); ++lane) {
            const size_t r = lane / static_cast<size_t>(t), k = lane % static_cast<size_t>(t);
            const int device = position_devices[pos][lane];
            prog.devices.push_back(device);
            const std::unordered_map<int, int>* counterpart = nullptr;
            if (r > 0 && options.copy_replica_communication)
                if (const auto& found = deriver.counterparts(static_cast<int>(k), static_cast<int>(lane))) counterpart = &*found;
            if (counterpart == nullptr) {
                if (r == 0) replica_zero[k] = prog.streams.size();
                prog.streams.push_back(deriver.derive(full[k], static_cast<int>(lane), device, parts_of_segment, t > 1 ? tp_group_of[pos][r] : -1));
                continue;
            }
            std::vector<Instr> stream = prog.streams[replica_zero[k]];
            for (Instr& in : stream) {
                if (in.peer >= 0) in.peer = counterpart->at(in.peer);
                if (in.kind == InstrKind::TensorParallel) in.group = tp_group_of[pos][r];
            }
            prog.streams.push_back(std::move(stream));
        }
    }
    if (!placement) addTiedWeightReductions(prog, graph);
    return prog;
}

}  // namespace hippie
