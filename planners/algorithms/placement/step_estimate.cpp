#include "planners/algorithms/placement/step_estimate.h"

#include <algorithm>
#include <utility>

namespace hippie::placement {

namespace {

struct Segment {
    int device = 0;
    double fwd_s = 0, bwd_s = 0;
    int64_t kept = 0;  // activations and inputs from other segments
    int64_t temp = 0;
    std::vector<int> inputs;       // producer segments
    std::vector<int64_t> sent;     // bytes sent to each device
};

// The largest tensor one producing unit has contributed to a target so far: grow() returns
// the bytes to add for a new tensor (or a larger slice of the same one).
struct Stamp {
    int unit = -1;
    int64_t bytes = 0;
    int64_t grow(int u, int64_t b) {
        if (unit != u) {
            unit = u;
            bytes = b;
            return b;
        }
        const int64_t more = std::max<int64_t>(0, b - bytes);
        bytes = std::max(bytes, b);
        return more;
    }
};

class Estimator {
public:
    Estimator(const PlacementModel& m, const std::vector<int>& device, const std::vector<int>& order) : m_(m), device_(device) {
        cut(order);
        connect(order);
    }

    StepEstimate run() {
        StepEstimate e;
        e.busy_s.assign(static_cast<size_t>(m_.devices()), 0.0);
        e.memory = memory();
        std::vector<double> fwd_end(segs_.size()), bwd_end(segs_.size()), free_at(static_cast<size_t>(m_.devices()), 0.0);
        for (size_t s = 0; s < segs_.size(); ++s) {
            double start = free_at[dev(s)];
            for (int p : segs_[s].inputs) start = std::max(start, fwd_end[static_cast<size_t>(p)] + transfer(p, segs_[s].device, e));
            fwd_end[s] = free_at[dev(s)] = start + segs_[s].fwd_s;
            e.busy_s[dev(s)] += segs_[s].fwd_s + segs_[s].bwd_s;
        }
        std::vector<double> grads_in(segs_.size(), 0.0);  // latest gradient arrival
        for (size_t s = segs_.size(); s-- > 0;) {
            bwd_end[s] = free_at[dev(s)] = std::max(free_at[dev(s)], grads_in[s]) + segs_[s].bwd_s;
            for (int p : segs_[s].inputs) {
                const auto ps = static_cast<size_t>(p);
                grads_in[ps] = std::max(grads_in[ps], bwd_end[s] + transfer(p, segs_[s].device, e));
            }
            e.step_s = std::max(e.step_s, bwd_end[s]);
        }
        return e;
    }

private:
    size_t dev(size_t s) const { return static_cast<size_t>(segs_[s].device); }

    void cut(const std::vector<int>& order) {
        seg_of_.assign(static_cast<size_t>(m_.units()), -1);
        for (int u : order) {
            const int d = device_[static_cast<size_t>(u)];
            if (segs_.empty() || segs_.back().device != d) segs_.push_back(Segment{d, 0, 0, 0, 0, {}, std::vector<int64_t>(static_cast<size_t>(m_.devices()), 0)});
            Segment& s = segs_.back();
            s.fwd_s += m_.forwardSeconds(u, d);
            s.bwd_s += m_.computeSeconds(u, d) - m_.forwardSeconds(u, d);
            s.kept += m_.activationBytes(u);
            s.temp = std::max(s.temp, m_.tempBytes(u));
            seg_of_[static_cast<size_t>(u)] = static_cast<int>(segs_.size()) - 1;
        }
    }

    // Inputs between segments: each producing unit's tensor once per consumer segment (kept
    // there) and once per consumer device (sent there), its largest slice. Segments are runs
    // of the order, so stamps of the last unit or segment seen deduplicate without sets.
    void connect(const std::vector<int>& order) {
        std::vector<Stamp> kept(segs_.size()), sent(static_cast<size_t>(m_.devices()));
        std::vector<int> linked_to(segs_.size(), -1);
        for (int u : order) {
            const int su = seg_of_[static_cast<size_t>(u)];
            for (const Arc& a : m_.succs(u)) {
                const int sv = seg_of_[static_cast<size_t>(a.unit)];
                if (sv == su) continue;
                Segment& v = segs_[static_cast<size_t>(sv)];
                v.kept += kept[static_cast<size_t>(sv)].grow(u, a.bytes);
                if (std::exchange(linked_to[static_cast<size_t>(sv)], su) != su) v.inputs.push_back(su);
                const auto to = static_cast<size_t>(v.device);
                if (v.device != segs_[static_cast<size_t>(su)].device) segs_[static_cast<size_t>(su)].sent[to] += sent[to].grow(u, a.bytes);
            }
        }
    }

    // Seconds for segment p's tensors to reach `to` (0 on its own device).
    double transfer(int p, int to, StepEstimate& e) const {
        const Segment& s = segs_[static_cast<size_t>(p)];
        if (s.device == to) return 0.0;
        const double t = m_.cost().p2pTime(s.sent[static_cast<size_t>(to)], s.device, to);
        e.comm_s += t;
        return t;
    }

    std::vector<int64_t> memory() const {
        const auto devices = static_cast<size_t>(m_.devices());
        std::vector<int64_t> fixed(devices, 0), live(devices, 0), peak(devices, 0);
        for (int u = 0; u < m_.units(); ++u) fixed[static_cast<size_t>(device_[static_cast<size_t>(u)])] += m_.staticBytes(u);
        std::vector<int64_t> buffer(devices, 0);  // the largest gradient received
        for (size_t s = 0; s < segs_.size(); ++s)
            for (int64_t bytes : segs_[s].sent) buffer[dev(s)] = std::max(buffer[dev(s)], bytes);
        for (size_t s = 0; s < segs_.size(); ++s) {
            live[dev(s)] += segs_[s].kept;
            peak[dev(s)] = std::max(peak[dev(s)], live[dev(s)] + segs_[s].temp);
        }
        for (size_t d = 0; d < devices; ++d) fixed[d] += buffer[d] + peak[d];
        return fixed;
    }

    const PlacementModel& m_;
    const std::vector<int>& device_;
    std::vector<Segment> segs_;
    std::vector<int> seg_of_;
};

}  // namespace

StepEstimate estimateStep(const PlacementModel& model, const std::vector<int>& device, const std::vector<int>& order) {
    return Estimator(model, device, order).run();
}

}  // namespace hippie::placement
