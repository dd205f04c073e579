#include "planners/algorithms/placement/sgp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <span>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/placement/run_order.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/common/error.h"
#include "planners/schedule/lower.h"

namespace hippie::placement {

namespace {

// Rounds of "place, count the memory as the simulator does, shrink the budget of devices
// that overflow" (the same repair every placement planner's skeleton makes).
constexpr int kMemoryRounds = 4;
constexpr double kMemoryMargin = 0.005;

// The two latest arrivals from different devices: what a device waits for from the others is
// the latest, unless that one comes from itself.
struct LatestTwo {
    double first = 0, second = 0;
    int first_at = -1;
    void offer(double t, int at) {
        if (t > first) {
            if (at != first_at) second = first;
            first = t;
            first_at = at;
        } else if (at != first_at && t > second) {
            second = t;
        }
    }
    double besides(int device) const { return device == first_at ? second : first; }
};


// The graph's ops with their costs, in flat arrays: what SGP reads, built in one pass over
// ops and edges (no co-placement).
class OpModel {
public:
    OpModel(const Problem& p, const CostModel& cost)
        : graph_(&p.graph), n_(static_cast<int>(p.graph.ops.size())), d_(p.cluster.deviceCount()) {
        const Graph& g = p.graph;
        const auto n = static_cast<size_t>(n_);
        samples_ = static_cast<double>(p.global_batch) / kPlacementMicroBatches;
        // Arcs, compressed: predecessors and successors of each op.
        pred_off_.assign(n + 1, 0);
        succ_off_.assign(n + 1, 0);
        bool sorted = true;
        for (const Edge& e : g.edges) {
            ++pred_off_[static_cast<size_t>(e.dst) + 1];
            ++succ_off_[static_cast<size_t>(e.src) + 1];
            sorted = sorted && e.src < e.dst;
        }
        for (size_t i = 0; i < n; ++i) {
            pred_off_[i + 1] += pred_off_[i];
            succ_off_[i + 1] += succ_off_[i];
        }
        pred_.resize(g.edges.size());
        succ_.resize(g.edges.size());
        pred_raw_.resize(g.edges.size());
        succ_raw_.resize(g.edges.size());
        std::vector<int> pi(pred_off_.begin(), pred_off_.end() - 1), si(succ_off_.begin(), succ_off_.end() - 1);
        for (const Edge& e : g.edges) {
            const int64_t bytes = cost.scaled(e.bytes, samples_);
            const auto a = static_cast<size_t>(pi[static_cast<size_t>(e.dst)]++), b = static_cast<size_t>(si[static_cast<size_t>(e.src)]++);
            pred_[a] = {e.src, bytes};
            pred_raw_[a] = e.bytes;
            succ_[b] = {e.dst, bytes};
            succ_raw_[b] = e.bytes;
        }
        // Topological order: the ops' own when every edge goes forward (zoo graphs, the random
        // DAG), else Kahn's, smallest op first.
        topo_.resize(n);
        if (sorted) {
            std::iota(topo_.begin(), topo_.end(), 0);
        } else {
            std::vector<int> indegree(n);
            for (size_t i = 0; i < n; ++i) indegree[i] = pred_off_[i + 1] - pred_off_[i];
            std::priority_queue<int, std::vector<int>, std::greater<>> ready;
            for (size_t i = 0; i < n; ++i)
                if (indegree[i] == 0) ready.push(static_cast<int>(i));
            size_t k = 0;
            while (!ready.empty()) {
                const int u = ready.top();
                ready.pop();
                topo_[k++] = u;
                for (const Arc& a : succs(u))
                    if (--indegree[static_cast<size_t>(a.unit)] == 0) ready.push(a.unit);
            }
            if (k != n) throw Error("sgp: the graph has a cycle");
        }
        // Device types: computation is computed once per distinct device.
        class_.assign(static_cast<size_t>(d_), 0);
        std::vector<int> representative;
        for (int d = 0; d < d_; ++d) {
            int c = 0;
            while (c < static_cast<int>(representative.size()) && !(p.cluster.device(representative[static_cast<size_t>(c)]) == p.cluster.device(d))) ++c;
            if (c == static_cast<int>(representative.size())) representative.push_back(d);
            class_[static_cast<size_t>(d)] = c;
        }
        std::vector<int> per_class(representative.size(), 0);
        for (int c : class_) ++per_class[static_cast<size_t>(c)];
        compute_.assign(representative.size() * n, 0.0);
        mean_.assign(n, 0.0);
        static_.resize(n);
        kept_.resize(n);
        temp_.resize(n);
        params_.resize(n);
        largest_out_.assign(n, 0);
        kept_raw_.resize(n);
        temp_raw_.resize(n);
        for (size_t c = 0; c < representative.size(); ++c) {
            const int r = representative[c];
            const double share = static_cast<double>(per_class[c]) / d_;
            for (int op = 0; op < n_; ++op) {
                const double s = cost.fwdTime(op, samples_, r) + cost.bwdTime(op, samples_, r);
                compute_[c * n + static_cast<size_t>(op)] = s;
                mean_[static_cast<size_t>(op)] += share * s;
            }
        }
        prefix_.assign(representative.size() * (n + 1), 0.0);
        for (size_t c = 0; c < representative.size(); ++c)
            for (size_t i = 0; i < n; ++i) prefix_[c * (n + 1) + i + 1] = prefix_[c * (n + 1) + i] + compute_[c * n + static_cast<size_t>(topo_[i])];
        for (int op = 0; op < n_; ++op) {
            const auto o = static_cast<size_t>(op);
            params_[o] = cost.rankParamBytes(op);
            kept_raw_[o] = g.ops[o].keptBytes();
            temp_raw_[o] = g.ops[o].temp_bytes;
            static_[o] = cost.staticMemoryOfParams(params_[o], p.optimizer, 1, 0, 0).total();
            kept_[o] = cost.scaled(g.ops[o].keptBytes(), samples_) * kPlacementMicroBatches;
            temp_[o] = cost.scaled(g.ops[o].temp_bytes, samples_);
            for (const Arc& a : succs(op)) largest_out_[o] = std::max(largest_out_[o], a.bytes);
        }
        for (int dev = 1; dev < d_; ++dev) {
            const Link& l = p.cluster.link(0, dev);
            typical_latency_s_ += l.latency_s / (d_ - 1);
            typical_seconds_per_byte_ += 1.0 / l.bandwidth_bytes_per_s / (d_ - 1);
        }
    }

    int units() const { return n_; }
    int devices() const { return d_; }
    const std::vector<int>& topoOrder() const { return topo_; }
    std::span<const Arc> preds(int u) const { return {pred_.data() + pred_off_[static_cast<size_t>(u)], pred_.data() + pred_off_[static_cast<size_t>(u) + 1]}; }
    std::span<const Arc> succs(int u) const { return {succ_.data() + succ_off_[static_cast<size_t>(u)], succ_.data() + succ_off_[static_cast<size_t>(u) + 1]}; }
    // Edge bytes at the graph's batch size, parallel to preds / succs.
    std::span<const int64_t> predRaw(int u) const { return {pred_raw_.data() + pred_off_[static_cast<size_t>(u)], pred_raw_.data() + pred_off_[static_cast<size_t>(u) + 1]}; }
    std::span<const int64_t> succRaw(int u) const { return {succ_raw_.data() + succ_off_[static_cast<size_t>(u)], succ_raw_.data() + succ_off_[static_cast<size_t>(u) + 1]}; }
    double computeSeconds(int u, int d) const { return compute_[static_cast<size_t>(class_[static_cast<size_t>(d)]) * static_cast<size_t>(n_) + static_cast<size_t>(u)]; }
    // Computation on device d of the ops at topological positions [begin, end).
    double computeSeconds(int d, int begin, int end) const {
        const size_t base = static_cast<size_t>(class_[static_cast<size_t>(d)]) * (static_cast<size_t>(n_) + 1);
        return prefix_[base + static_cast<size_t>(end)] - prefix_[base + static_cast<size_t>(begin)];
    }
    double meanComputeSeconds(int u) const { return mean_[static_cast<size_t>(u)]; }
    double typicalCommSeconds(int64_t bytes) const { return 2.0 * (typical_latency_s_ + static_cast<double>(bytes) * typical_seconds_per_byte_); }
    int64_t staticBytes(int u) const { return static_[static_cast<size_t>(u)]; }
    int64_t activationBytes(int u) const { return kept_[static_cast<size_t>(u)]; }
    int64_t residentBytes(int u) const { return staticBytes(u) + activationBytes(u); }
    int64_t tempBytes(int u) const { return temp_[static_cast<size_t>(u)]; }
    int64_t largestOutput(int u) const { return largest_out_[static_cast<size_t>(u)]; }
    // At the graph's batch size, as placementMemory adds them up.
    int64_t keptRaw(int u) const { return kept_raw_[static_cast<size_t>(u)]; }
    int64_t tempRaw(int u) const { return temp_raw_[static_cast<size_t>(u)]; }
    int64_t paramBytes(int u) const { return params_[static_cast<size_t>(u)]; }
    const std::string& name(int u) const { return graph_->ops[static_cast<size_t>(u)].name; }

private:
    const Graph* graph_;
    int n_, d_;
    double samples_ = 1;
    std::vector<int> pred_off_, succ_off_, topo_, class_;
    std::vector<Arc> pred_, succ_;
    std::vector<int64_t> pred_raw_, succ_raw_, static_, kept_, temp_, params_, largest_out_, kept_raw_, temp_raw_;
    std::vector<double> compute_, mean_, prefix_;
    double typical_latency_s_ = 0, typical_seconds_per_byte_ = 0;
};

// What the simulator counts for a placement and execution order (placementMemory's count,
// without its sorts): per device, weights, gradients, master weights and optimizer state of
// its ops and the largest gradient it receives at once; per run of the order on one device
// (segment), its ops' kept outputs and the inputs it reads from other segments (each
// producer's tensor once, at its largest edge), added as the forwards run, with the running
// segment's workspace on top.
std::vector<int64_t> memoryAsSimulated(const OpModel& m, const Problem& p, const CostModel& cost, const std::vector<int>& device,
                                       const std::vector<int>& order) {
    const Graph& g = p.graph;
    const auto n = static_cast<size_t>(m.units());
    const auto devices = static_cast<size_t>(m.devices());
    const double samples = static_cast<double>(p.global_batch) / kPlacementMicroBatches, scale = samples / g.batch_size;
    std::vector<int> seg_of(n, -1), stamp(n, -1);
    std::vector<int64_t> counted(n, 0);
    std::vector<int64_t> params(devices, 0), buffer(devices, 0), live(devices, 0), peak(devices, 0);
    std::vector<char> used(devices, 0);
    std::vector<int64_t> received(devices, 0), largest(devices, -1);  // per consumer device
    std::vector<char> in_touched(devices, 0);
    std::vector<int> touched, sent_to;
    int segment = -1, current_device = -1;
    int64_t kept = 0, temp = 0;
    auto closeSegment = [&] {
        if (segment < 0) return;
        const auto d = static_cast<size_t>(current_device);
        live[d] += cost.scaled(kept, samples);
        peak[d] = std::max(peak[d], live[d] + cost.scaled(temp, samples));
    };
    // Segments' gradient buffers: per (segment, consumer device), one tensor per producing op.
    auto flushBuffers = [&] {
        for (int to : touched) {
            const auto d = static_cast<size_t>(current_device);
            buffer[d] = std::max(buffer[d], static_cast<int64_t>(static_cast<double>(received[static_cast<size_t>(to)]) * scale));
            received[static_cast<size_t>(to)] = 0;
            in_touched[static_cast<size_t>(to)] = 0;
        }
        touched.clear();
    };
    // First pass: segments, in order.
    {
        int s = -1, last = -1;
        for (int op : order) {
            const int d = device[static_cast<size_t>(op)];
            if (d != last) {
                ++s;
                last = d;
            }
            seg_of[static_cast<size_t>(op)] = s;
        }
    }
    for (int op : order) {
        const auto o = static_cast<size_t>(op);
        const int d = device[o];
        if (seg_of[o] != segment) {
            closeSegment();
            if (segment >= 0) flushBuffers();
            segment = seg_of[o];
            current_device = d;
            kept = temp = 0;
        }
        used[static_cast<size_t>(d)] = 1;
        params[static_cast<size_t>(d)] += m.paramBytes(op);
        kept += m.keptRaw(op);
        temp = std::max(temp, m.tempRaw(op));
        // Inputs from other segments, each producer once per segment at its largest edge.
        const auto preds = m.preds(op);
        const auto raw = m.predRaw(op);
        for (size_t k = 0; k < preds.size(); ++k) {
            const auto src = static_cast<size_t>(preds[k].unit);
            if (seg_of[src] == segment) continue;
            if (stamp[src] != segment) {
                stamp[src] = segment;
                counted[src] = raw[k];
                kept += raw[k];
            } else if (raw[k] > counted[src]) {
                kept += raw[k] - counted[src];
                counted[src] = raw[k];
            }
        }
        // Gradients this op's outputs get back from other devices: its largest edge to each.
        const auto succs = m.succs(op);
        const auto out_raw = m.succRaw(op);
        sent_to.clear();
        for (size_t k = 0; k < succs.size(); ++k) {
            const auto dst = static_cast<size_t>(succs[k].unit);
            const int to = device[dst];
            if (seg_of[dst] == segment || to == d) continue;
            const auto t = static_cast<size_t>(to);
            if (largest[t] < 0) {
                largest[t] = 0;
                sent_to.push_back(to);
            }
            largest[t] = std::max(largest[t], out_raw[k]);
        }
        for (int to : sent_to) {
            const auto t = static_cast<size_t>(to);
            if (!in_touched[t]) {
                in_touched[t] = 1;
                touched.push_back(to);
            }
            received[t] += largest[t];
            largest[t] = -1;
        }
    }
    closeSegment();
    flushBuffers();
    std::vector<int64_t> out(devices, 0);
    for (size_t d = 0; d < devices; ++d)
        if (used[d]) out[d] = cost.staticMemoryOfParams(params[d], p.optimizer, 1, 0, buffer[d]).total() + peak[d];
    return out;
}

// Per op: the transfer time of its largest output (forward and gradient, typical link), the
// cost of cutting right after it.
std::vector<double> outputCommSeconds(const OpModel& m) {
    std::vector<double> out(static_cast<size_t>(m.units()), 0.0);
    for (int u = 0; u < m.units(); ++u)
        if (!m.succs(u).empty()) out[static_cast<size_t>(u)] = m.typicalCommSeconds(m.largestOutput(u));
    return out;
}

// Bytes crossing a cut before each position of the topological order: every producer's
// largest output, from its position to its last consumer's.
std::vector<int64_t> crossingBytes(const OpModel& m, const std::vector<int>& position) {
    const auto& topo = m.topoOrder();
    const size_t n = topo.size();
    std::vector<int64_t> diff(n + 2, 0);
    for (size_t i = 0; i < n; ++i) {
        int last = static_cast<int>(i);
        for (const Arc& a : m.succs(topo[i])) last = std::max(last, position[static_cast<size_t>(a.unit)]);
        const int64_t largest = m.largestOutput(topo[i]);
        diff[i + 1] += largest;
        diff[static_cast<size_t>(last) + 1] -= largest;
    }
    std::vector<int64_t> crossing(n + 1, 0);
    for (size_t i = 1; i <= n; ++i) crossing[i] = crossing[i - 1] + diff[i];
    return crossing;
}

std::vector<int> devicesByCapacity(const std::vector<int64_t>& capacity) {
    std::vector<int> d(capacity.size());
    std::iota(d.begin(), d.end(), 0);
    std::stable_sort(d.begin(), d.end(), [&](int a, int b) { return capacity[static_cast<size_t>(a)] > capacity[static_cast<size_t>(b)]; });
    return d;
}

struct Homes {
    std::vector<int> device;      // by op
    std::vector<int> cuts;        // positions of the topological order where a segment starts (after the first)
    std::vector<int> of_segment;  // device of each segment
    int segments = 1;
    int by_devices = 1;
    int used = 1;
};

// Cut positions for `parts` parts of positions [lo, hi): at equal shares of `prefix`, each
// moved within `window` positions to the fewest crossing bytes (ties: nearest the share).
void cutAtShares(const std::vector<double>& prefix, const std::vector<int64_t>& crossing, int lo, int hi, int parts, int window,
                 std::vector<int>& cuts) {
    const auto lo_s = static_cast<size_t>(lo), hi_s = static_cast<size_t>(hi);
    int previous = lo;
    for (int k = 1; k < parts; ++k) {
        const double share = prefix[lo_s] + (prefix[hi_s] - prefix[lo_s]) * k / parts;
        const auto first = prefix.begin() + static_cast<std::ptrdiff_t>(lo_s), last = prefix.begin() + static_cast<std::ptrdiff_t>(hi_s) + 1;
        const int target = static_cast<int>(std::lower_bound(first, last, share) - prefix.begin());
        const int from = std::max(previous + 1, target - window), to = std::min(hi - (parts - k), target + window);
        if (from > to) continue;
        int best = std::clamp(target, from, to);
        for (int c = from; c <= to; ++c) {
            const auto cs = static_cast<size_t>(c), bs = static_cast<size_t>(best);
            if (crossing[cs] < crossing[bs] || (crossing[cs] == crossing[bs] && std::abs(c - target) < std::abs(best - target))) best = c;
        }
        cuts.push_back(best);
        previous = best;
    }
}

// Segments of the topological order, segments_per_device per device, cut at equal shares of
// the ops' comprehensive cost (share of all computation and output transfers plus share of
// all memory), each cut moved within its window to the fewest crossing bytes; each segment
// homed on the device where it would finish first among those with room in their home
// budget (memory_fill of the device, at most a quarter segment past an equal share of the
// model over the devices memory needs); a segment that fits no device's room is cut where
// the room ends and the rest is the next segment.
Homes homeSegments(const OpModel& m, const std::vector<int64_t>& capacity, const SgpOptions& o, const std::vector<int>& position,
                   const std::vector<double>& out_s) {
    const auto& topo = m.topoOrder();
    const int n = m.units();
    const auto un = static_cast<size_t>(n);
    std::vector<double> memory(un + 1, 0.0), work(un + 1, 0.0), cost(un + 1, 0.0);
    for (size_t i = 0; i < un; ++i) {
        const int u = topo[i];
        memory[i + 1] = memory[i] + static_cast<double>(m.residentBytes(u));
        work[i + 1] = work[i] + m.meanComputeSeconds(u) + out_s[static_cast<size_t>(u)];
    }
    const double total_memory = memory.back(), total_work = work.back();
    for (size_t i = 1; i <= un; ++i)
        cost[i] = (total_work > 0 ? work[i] / total_work : 0.0) + (total_memory > 0 ? memory[i] / total_memory : 0.0);
    const std::vector<int64_t> crossing = crossingBytes(m, position);
    const std::vector<int> by_capacity = devicesByCapacity(capacity);

    const auto devices = static_cast<size_t>(m.devices());
    std::vector<double> limit(devices);
    int needed = 0;
    double held = 0, needed_capacity = 0;
    while (needed < m.devices() && held < total_memory) {
        const auto d = static_cast<size_t>(by_capacity[static_cast<size_t>(needed++)]);
        held += o.memory_fill * static_cast<double>(capacity[d]);
        needed_capacity += static_cast<double>(capacity[d]);
    }
    const double fair = needed_capacity > 0 ? total_memory / needed_capacity : 0.0;
    for (size_t d = 0; d < devices; ++d) limit[d] = std::min(o.memory_fill, fair) * static_cast<double>(capacity[d]);

    Homes h;
    h.by_devices = std::max(1, std::min(n, o.segments_per_device * m.devices()));
    const int window = static_cast<int>(o.cut_window * n / h.by_devices);
    std::vector<int> coarse;
    cutAtShares(cost, crossing, 0, n, h.by_devices, window, coarse);
    coarse.push_back(n);
    h.by_devices = static_cast<int>(coarse.size());

    std::vector<int> segment_at(un, -1);
    std::vector<double> free_at(devices, 0.0), finish, arrive(devices), home_bytes(devices, 0.0), seconds(devices);
    auto slack = [&](size_t d, double bytes) {
        return std::min(o.memory_fill * static_cast<double>(capacity[d]), limit[d] + 0.25 * bytes) - home_bytes[d];
    };
    int begin = 0;
    for (size_t k = 0; k < coarse.size();) {
        int end = coarse[k];
        const int previous = h.of_segment.empty() ? by_capacity.front() : h.of_segment.back();
        double bytes = memory[static_cast<size_t>(end)] - memory[static_cast<size_t>(begin)];
        std::vector<int> candidates{previous};
        candidates.insert(candidates.end(), by_capacity.begin(), by_capacity.end());
        bool fits_somewhere = false;
        for (int d : candidates) fits_somewhere = fits_somewhere || bytes <= slack(static_cast<size_t>(d), bytes);
        if (!fits_somewhere) {
            int to = previous;
            if (limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)] <= 0)
                for (int d : by_capacity)
                    if (limit[static_cast<size_t>(d)] - home_bytes[static_cast<size_t>(d)] > limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)]) to = d;
            const double room = limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)];
            const auto from = memory.begin() + begin;
            const int fit = static_cast<int>(std::upper_bound(from, memory.begin() + end + 1, memory[static_cast<size_t>(begin)] + room) - memory.begin()) - 1;
            if (fit > begin && fit < end) {
                int cut = fit;
                for (int c = std::max(begin + 1, fit - window); c <= fit; ++c)
                    if (crossing[static_cast<size_t>(c)] < crossing[static_cast<size_t>(cut)]) cut = c;
                end = cut;
                bytes = memory[static_cast<size_t>(end)] - memory[static_cast<size_t>(begin)];
            }
        }
        // The segment's computation on each device (prefix sums per device type) and its
        // inputs' arrival there: from the latest producer on that device, or the latest
        // transfer from any other (the two latest transfers, from different devices, suffice).
        std::fill(arrive.begin(), arrive.end(), 0.0);
        for (size_t d = 0; d < devices; ++d) seconds[d] = m.computeSeconds(static_cast<int>(d), begin, end);
        LatestTwo latest;
        for (int i = begin; i < end; ++i) {
            for (const Arc& p : m.preds(topo[static_cast<size_t>(i)])) {
                const int ps = segment_at[static_cast<size_t>(position[static_cast<size_t>(p.unit)])];
                if (ps < 0) continue;
                const int at = h.of_segment[static_cast<size_t>(ps)];
                const double here = finish[static_cast<size_t>(ps)], there = here + m.typicalCommSeconds(p.bytes);
                arrive[static_cast<size_t>(at)] = std::max(arrive[static_cast<size_t>(at)], here);
                latest.offer(there, at);
            }
        }
        for (size_t d = 0; d < devices; ++d) arrive[d] = std::max(arrive[d], latest.besides(static_cast<int>(d)));
        int best = -1, roomiest = candidates.front();
        double best_score = std::numeric_limits<double>::infinity();
        for (int d : candidates) {
            const auto dd = static_cast<size_t>(d);
            if (slack(dd, bytes) > slack(static_cast<size_t>(roomiest), bytes)) roomiest = d;
            if (bytes > slack(dd, bytes)) continue;
            const double score = std::max(free_at[dd], arrive[dd]) + seconds[dd];
            if (score < best_score) {
                best_score = score;
                best = d;
            }
        }
        if (best < 0) best = roomiest;
        const auto bd = static_cast<size_t>(best);
        const int segment = static_cast<int>(h.of_segment.size());
        for (int i = begin; i < end; ++i) segment_at[static_cast<size_t>(i)] = segment;
        h.of_segment.push_back(best);
        home_bytes[bd] += bytes;
        finish.push_back(free_at[bd] = std::max(free_at[bd], arrive[bd]) + seconds[bd]);
        if (end < n) h.cuts.push_back(end);
        begin = end;
        if (end == coarse[k]) ++k;
    }
    h.segments = static_cast<int>(h.of_segment.size());
    h.device.assign(un, by_capacity.front());
    for (size_t i = 0; i < un; ++i) h.device[static_cast<size_t>(topo[i])] = h.of_segment[static_cast<size_t>(segment_at[i])];
    h.used = static_cast<int>(std::count_if(home_bytes.begin(), home_bytes.end(), [](double b) { return b > 0; }));
    return h;
}

// The order of the balancing pass, as groups placed largest computation first. Wide graphs
// (on average at least one op per device in each depth level): the depth levels. Narrow ones:
// one op at a time by earliest possible start (longest computation path from an input).
struct PassOrder {
    std::vector<int> order;  // ops, group after group, each group largest computation first
    std::vector<int> begin;  // where each group starts in `order`, and its end
    int groups() const { return static_cast<int>(begin.size()) - 1; }
};

PassOrder passOrder(const OpModel& m, const std::vector<int>& depth, bool& wide) {
    const auto n = static_cast<size_t>(m.units());
    int deepest = 0;
    for (int d : depth) deepest = std::max(deepest, d);
    wide = static_cast<double>(m.units()) >= static_cast<double>(deepest + 1) * m.devices();
    PassOrder p;
    p.order.resize(n);
    if (wide) {
        // Counting sort by depth, topological within a level; then largest computation first.
        p.begin.assign(static_cast<size_t>(deepest) + 2, 0);
        for (int d : depth) ++p.begin[static_cast<size_t>(d) + 1];
        for (size_t l = 1; l < p.begin.size(); ++l) p.begin[l] += p.begin[l - 1];
        std::vector<int> next(p.begin.begin(), p.begin.end() - 1);
        for (int u : m.topoOrder()) p.order[static_cast<size_t>(next[static_cast<size_t>(depth[static_cast<size_t>(u)])]++)] = u;
        // Sorted as (computation, op) pairs: the comparisons read no scattered memory; ties
        // keep the topological order (ops are numbered in it when it is theirs).
        std::vector<std::pair<double, int>> keyed;
        for (size_t l = 0; l + 1 < p.begin.size(); ++l) {
            const auto lo = p.order.begin() + p.begin[l], hi = p.order.begin() + p.begin[l + 1];
            keyed.clear();
            for (auto it = lo; it != hi; ++it) keyed.emplace_back(m.meanComputeSeconds(*it), static_cast<int>(it - lo));
            std::sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
            std::vector<int> level(lo, hi);
            for (size_t k = 0; k < keyed.size(); ++k) lo[static_cast<std::ptrdiff_t>(k)] = level[static_cast<size_t>(keyed[k].second)];
        }
        return p;
    }
    std::vector<double> top(n, 0.0);
    for (int u : m.topoOrder())
        for (const Arc& a : m.succs(u))
            top[static_cast<size_t>(a.unit)] = std::max(top[static_cast<size_t>(a.unit)], top[static_cast<size_t>(u)] + m.meanComputeSeconds(u));
    p.order = m.topoOrder();
    std::stable_sort(p.order.begin(), p.order.end(), [&](int a, int b) { return top[static_cast<size_t>(a)] < top[static_cast<size_t>(b)]; });
    p.begin.resize(n + 1);
    std::iota(p.begin.begin(), p.begin.end(), 0);
    return p;
}

// Per op, what the balancing pass reads of its producers, kept together (the random DAG's
// producers are anywhere in memory: one cache line per producer instead of five).
struct Placed {
    double finish = 0;        // when it ends in the pass's timing
    int64_t largest_out = 0;  // its largest output's bytes
    uint64_t imported = 0;    // devices that hold its output already (devices 0-63)
    int device = -1;
};

// Memory of the ops placed so far on each device, as the simulator counts a device that runs
// them as one segment (what DeviceMemory counts for the other placement planners), in O(1)
// per op and predecessor: a producer's tensor counts once per importing device, at its
// largest output.
class OpMemory {
public:
    OpMemory(const OpModel& m, std::vector<Placed>& placed)
        : m_(m),
          d_(static_cast<size_t>(m.devices())),
          placed_(placed),
          static_(d_, 0),
          live_(d_, 0),
          temp_(d_, 0),
          grad_(d_, 0),
          wide_imported_(d_ > 64 ? static_cast<size_t>(m.units()) * d_ : 0, 0) {}

    int64_t used(size_t d) const { return static_[d] + live_[d] + temp_[d] + grad_[d]; }
    bool imported(int producer, size_t d) const {
        return d_ > 64 ? wide_imported_[static_cast<size_t>(producer) * d_ + d] != 0 : (placed_[static_cast<size_t>(producer)].imported >> d) & 1;
    }
    int64_t imports(int u, int d) const {
        int64_t bytes = 0;
        for (const Arc& p : m_.preds(u)) {
            const Placed& from = placed_[static_cast<size_t>(p.unit)];
            if (from.device < 0 || from.device == d || imported(p.unit, static_cast<size_t>(d))) continue;
            bytes += from.largest_out;
        }
        return bytes;
    }
    // Places u on d when it fits there (within capacity[d]); otherwise changes nothing.
    bool place(int u, int d, const std::vector<int64_t>& capacity) {
        const auto dd = static_cast<size_t>(d);
        const int64_t in = imports(u, d);
        const int64_t out = m_.largestOutput(u);
        const int64_t added = m_.residentBytes(u) + in + std::max<int64_t>(0, m_.tempBytes(u) - temp_[dd]) + std::max<int64_t>(0, out - grad_[dd]);
        if (used(dd) + added > capacity[dd]) return false;
        live_[dd] += in + m_.activationBytes(u);
        if (in > 0)
            for (const Arc& p : m_.preds(u)) {
                Placed& from = placed_[static_cast<size_t>(p.unit)];
                if (from.device < 0 || from.device == d) continue;
                if (d_ > 64) wide_imported_[static_cast<size_t>(p.unit) * d_ + dd] = 1;
                else from.imported |= uint64_t{1} << dd;
            }
        static_[dd] += m_.staticBytes(u);
        temp_[dd] = std::max(temp_[dd], m_.tempBytes(u));
        grad_[dd] = std::max(grad_[dd], out);
        placed_[static_cast<size_t>(u)].device = d;
        return true;
    }

private:
    const OpModel& m_;
    size_t d_;
    std::vector<Placed>& placed_;
    std::vector<int64_t> static_, live_, temp_, grad_;
    std::vector<char> wide_imported_;  // (producer, device) where there are more than 64 devices
};

struct Balanced {
    std::vector<int> device;  // by op; empty when an op fits nowhere
    std::string reason;
    int moved_for_parallelism = 0, moved_for_memory = 0;
    // The pass's timing: when each op's inputs are ready, whether its latest producer is on
    // another device, and the makespan.
    std::vector<double> ready;
    std::vector<int> remote;
    double makespan_s = 0;
};

// One pass over the groups, each largest computation first: each op goes to the device
// where it would finish first (device free, inputs arrived over a typical link, its
// computation there), plus, off its home, its output's transfer back; a device without room
// gives way to the next best.
Balanced balance(const OpModel& m, const std::vector<int64_t>& capacity, const PassOrder& groups, const Homes& homes,
                 const std::vector<double>& out_s, PlanContext& context) {
    const auto devices = static_cast<size_t>(m.devices());
    const auto n = static_cast<size_t>(m.units());
    std::vector<Placed> state(n);
    for (size_t u = 0; u < n; ++u) state[u].largest_out = m.largestOutput(static_cast<int>(u));
    OpMemory mem(m, state);
    Balanced b;
    b.ready.assign(n, 0.0);
    b.remote.assign(n, 0);
    std::vector<double> free_at(devices, 0.0), arrive(devices), score(devices);
    size_t placed = 0;
    for (int g = 0; g < groups.groups(); ++g) {
        for (int k = groups.begin[static_cast<size_t>(g)]; k < groups.begin[static_cast<size_t>(g) + 1]; ++k) {
            const int u = groups.order[static_cast<size_t>(k)];
            const auto uu = static_cast<size_t>(u);
            const int home = homes.device[uu];
            // Inputs' arrival on each device: the latest producer there, or the latest transfer
            // from any other device (the two latest transfers, from different devices, suffice);
            // and the latest producer (ready time, and whether it is remote once placed).
            std::fill(arrive.begin(), arrive.end(), 0.0);
            LatestTwo latest;
            double ready = 0;
            int ready_at = -1;
            for (const Arc& p : m.preds(u)) {
                const Placed& from = state[static_cast<size_t>(p.unit)];
                const double here = from.finish, there = here + m.typicalCommSeconds(p.bytes);
                const int at = from.device;
                arrive[static_cast<size_t>(at)] = std::max(arrive[static_cast<size_t>(at)], here);
                latest.offer(there, at);
                if (here >= ready) {
                    ready = here;
                    ready_at = at;
                }
            }
            for (size_t d = 0; d < devices; ++d) arrive[d] = std::max(arrive[d], latest.besides(static_cast<int>(d)));
            for (size_t d = 0; d < devices; ++d)
                score[d] = std::max(free_at[d], arrive[d]) + m.computeSeconds(u, static_cast<int>(d)) + (static_cast<int>(d) == home ? 0.0 : out_s[uu]);
            int best = -1;
            bool first = true;
            for (size_t tried = 0; tried < devices && best < 0; ++tried) {
                int pick = home;
                for (size_t d = 0; d < devices; ++d)
                    if (score[d] < score[static_cast<size_t>(pick)]) pick = static_cast<int>(d);
                if (mem.place(u, pick, capacity)) best = pick;
                else first = false;
                score[static_cast<size_t>(pick)] = std::numeric_limits<double>::infinity();
            }
            if (best < 0) {
                b.reason = "after placing " + std::to_string(placed) + " of " + std::to_string(m.units()) + " ops, '" + m.name(u) + "' (" +
                           gib(m.residentBytes(u)) + ") fits on no device";
                return b;
            }
            if (best != home) ++(first ? b.moved_for_parallelism : b.moved_for_memory);
            const auto bd = static_cast<size_t>(best);
            b.ready[uu] = ready;
            b.remote[uu] = ready_at >= 0 && ready_at != best;
            state[uu].finish = free_at[bd] = std::max(free_at[bd], arrive[bd]) + m.computeSeconds(u, best);
            b.makespan_s = std::max(b.makespan_s, state[uu].finish);
            ++placed;
        }
        if (context.cancelled()) {
            b.reason = "cancelled after placing " + std::to_string(placed) + " of " + std::to_string(m.units()) + " ops";
            return b;
        }
    }
    b.device.resize(n);
    for (size_t u = 0; u < n; ++u) b.device[u] = state[u].device;
    return b;
}

// A wide graph's order: level by level, as the pass balanced them, each level's ops grouped by
// device (they do not depend on each other), so that a device runs each level as one run.
std::vector<int> levelOrder(const PassOrder& groups, const std::vector<int>& device, int devices) {
    std::vector<int> order(groups.order.size());
    std::vector<int> count(static_cast<size_t>(devices) + 1);
    for (int g = 0; g < groups.groups(); ++g) {
        const int lo = groups.begin[static_cast<size_t>(g)], hi = groups.begin[static_cast<size_t>(g) + 1];
        std::fill(count.begin(), count.end(), 0);
        for (int k = lo; k < hi; ++k) ++count[static_cast<size_t>(device[static_cast<size_t>(groups.order[static_cast<size_t>(k)])]) + 1];
        count[0] = lo;
        for (size_t d = 1; d < count.size(); ++d) count[d] += count[d - 1];
        for (int k = lo; k < hi; ++k) {
            const int u = groups.order[static_cast<size_t>(k)];
            order[static_cast<size_t>(count[static_cast<size_t>(device[static_cast<size_t>(u)])]++)] = u;
        }
    }
    return order;
}

}  // namespace

std::string SgpPlanner::description() const {
    return "SGP: per-op compute/communication/memory costs; segments of the topological order, a few per device, cut where "
           "little crosses and homed on devices by earliest finish under memory budgets; parallel branches spread by one "
           "earliest-finish load-balancing pass; no co-placement, no search";
}

std::vector<int64_t> sgpMemory(const Problem& problem, const std::vector<int>& device, const std::vector<int>& order) {
    const CostModel cost(problem.graph, problem.cluster);
    const OpModel m(problem, cost);
    return memoryAsSimulated(m, problem, cost, device, order);
}

PlannerResult SgpPlanner::plan(const Problem& problem, PlanContext& context) {
    const std::string name = "sgp";
    if (problem.graph.ops.empty()) throw Error(name + ": the model has no operators");
    if (problem.cluster.deviceCount() < 1) throw Error(name + ": the cluster has no devices");
    // One device: nothing to place; the skeleton plans it as every placement planner does.
    if (problem.cluster.deviceCount() == 1)
        return runPlacementPlanner(name, {}, [](const PlacementModel&, const std::vector<int64_t>&, PlanContext&, std::vector<std::string>&) {
            return CoreOutcome{};
        }, problem, context);
    requireTrainableBatch(problem.graph, problem.global_batch);
    context.progress(0.0, "costs per op");
    const CostModel cost(problem.graph, problem.cluster);
    const OpModel m(problem, cost);
    const int devices = m.devices();
    const std::vector<int64_t> capacity = capacities(problem);
    {
        std::vector<int64_t> resident(static_cast<size_t>(m.units())), temp(static_cast<size_t>(m.units()));
        for (int u = 0; u < m.units(); ++u) {
            resident[static_cast<size_t>(u)] = m.residentBytes(u);
            temp[static_cast<size_t>(u)] = m.tempBytes(u);
        }
        if (auto reason = impossibleReason(problem, resident, temp)) return infeasibleResult(name, *reason, context);
    }
    const double core_started = threadCpuSeconds();
    std::vector<std::string> log{"placing " + std::to_string(m.units()) + " ops on " + std::to_string(devices) + " devices (no co-placement)"};
    const auto n = static_cast<size_t>(m.units());
    std::vector<int> position(n), depth(n, 0);
    for (size_t i = 0; i < n; ++i) position[static_cast<size_t>(m.topoOrder()[i])] = static_cast<int>(i);
    for (int u : m.topoOrder())
        for (const Arc& a : m.succs(u)) depth[static_cast<size_t>(a.unit)] = std::max(depth[static_cast<size_t>(a.unit)], depth[static_cast<size_t>(u)] + 1);
    const std::vector<double> out_s = outputCommSeconds(m);
    bool wide = false;
    const auto groups = passOrder(m, depth, wide);

    auto budget = capacity;
    std::optional<Plan> plan;
    std::vector<std::string> notes;
    std::string reason;
    for (int round = 0; round < kMemoryRounds; ++round) {
        context.progress(0.1, "cutting segments");
        const Homes homes = homeSegments(m, budget, options_, position, out_s);
        if (round == 0) {
            std::string cuts, homed;
            for (int c : homes.cuts) cuts += (cuts.empty() ? "" : ", ") + std::to_string(c);
            for (int d : homes.of_segment) homed += (homed.empty() ? "" : " ") + std::to_string(d);
            log.push_back("sgp: " + std::to_string(homes.segments) + " segment(s) (" + std::to_string(homes.by_devices) + " for " +
                          std::to_string(devices) + " devices, " + std::to_string(homes.segments - homes.by_devices) + " more for memory), homed on " +
                          std::to_string(homes.used) + " device(s) (" + homed + ")" + (cuts.empty() ? "" : ", cut before positions " + cuts));
        }
        context.progress(0.3, "balancing parallel branches");
        const Balanced b = balance(m, budget, groups, homes, out_s, context);
        if (b.device.empty()) {
            reason = b.reason;
            break;
        }
        log.push_back(std::string("sgp: ") +
                      (wide ? "wide graph, balanced by depth level (" + std::to_string(groups.groups()) + " levels)" : "narrow graph, ops by earliest start") +
                      "; " + std::to_string(b.moved_for_parallelism) + " ops off their home for parallel branches, " +
                      std::to_string(b.moved_for_memory) + " for memory");
        log.push_back(std::string(kSgpEstimatePrefix) + std::to_string(b.makespan_s) + " s");
        context.progress(0.8, "ordering");
        // Narrow graphs in the run-aware order; wide ones level by level, as the pass balanced
        // them (on the 20,000-op DAG the run-aware order's priority queue took about 2.5 ms, a
        // third of the plan, and its memory overflowed on 4 GPUs; its step there was 3-4%
        // shorter). Where the order's memory, as the simulator counts it, overflows: the
        // ready-time order, the topological order, then the home segments alone.
        std::vector<int> device = b.device;
        std::vector<int> order = wide ? levelOrder(groups, device, devices) : runAwareOrderOf(m, device, b.ready, depth, b.remote, position);
        std::vector<int64_t> loads = memoryAsSimulated(m, problem, cost, device, order);
        if (!fitsCapacity(loads, capacity)) {
            const std::pair<const char*, std::pair<std::vector<int>, std::vector<int>>> fallbacks[] = {
                {"the ready-time order", {device, readyOrderOf(m.topoOrder(), b.ready, depth, b.remote)}},
                {"the topological order", {device, m.topoOrder()}},
                {"the home segments alone in the topological order", {homes.device, m.topoOrder()}}};
            for (const auto& [what, fallback] : fallbacks) {
                std::vector<int64_t> l = memoryAsSimulated(m, problem, cost, fallback.first, fallback.second);
                if (!fitsCapacity(l, capacity)) continue;
                const std::string note = std::string("the ") + (wide ? "level" : "run-aware") + " order needs more memory than the devices have: " + what + " taken instead";
                if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
                log.push_back("sgp: " + note);
                device = fallback.first;
                order = fallback.second;
                loads = std::move(l);
                break;
            }
        }
        Plan p = basePlan(problem, name);
        p.placement = std::move(device);
        p.placement_order = std::move(order);
        p.dp = 1;
        p.micro_batches = kPlacementMicroBatches;
        p.schedule = ScheduleKind::GPipe;
        plan = std::move(p);
        const auto over = overflow(loads, capacity);
        if (std::all_of(over.begin(), over.end(), [](int64_t x) { return x == 0; })) {
            reason.clear();
            break;
        }
        // Shrink the budgets of overflowing devices and place again (as the skeleton does
        // for every placement planner); after the last round the simulator judges.
        reason = "no placement found that fits memory after " + std::to_string(kMemoryRounds) + " rounds";
        for (size_t d = 0; d < over.size(); ++d) {
            if (over[d] == 0) continue;
            budget[d] -= over[d] + static_cast<int64_t>(kMemoryMargin * static_cast<double>(capacity[d]));
            log.push_back("device " + std::to_string(d) + " overflows by " + gib(over[d]) + " as the simulator counts it; budget now " + gib(budget[d]));
        }
        if (context.shouldStop()) break;
    }
    log.push_back(coreTimeLine(threadCpuSeconds() - core_started));

    if (!plan) {
        PlannerResult r = infeasibleResult(name, reason, context);
        r.notes = notes;
        r.log = std::move(log);
        return r;
    }
    return placementResult(name, problem, std::move(*plan), std::move(notes), std::move(log), {}, reason, context);
}

}  // namespace hippie::placement
