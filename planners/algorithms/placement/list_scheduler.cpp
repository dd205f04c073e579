#include "planners/algorithms/placement/list_scheduler.h"

#include <algorithm>
#include <limits>

namespace hippie::placement {

namespace {

// How often (in placed units) the scheduler polls for cancellation and reports progress.
constexpr int kPollEvery = 256;
// Share of the planner's progress bar the scheduling takes, after co-placement.
constexpr double kProgressStart = 0.05;
constexpr double kProgressSpan = 0.85;

struct Pick {
    int unit = -1;
    int device = -1;
    bool urgent = false;
    double key = std::numeric_limits<double>::infinity();
    double start = 0;
    double priority = 0;

    // Urgent first, then the smallest key, then the higher priority.
    bool worseThan(bool u, double k, double p) const {
        if (u != urgent) return u;
        if (k != key) return k < key;
        return p > priority;
    }
};

class ListScheduler {
public:
    ListScheduler(const PlacementModel& model, const std::vector<int64_t>& capacity, const SchedulingRule& rule,
                  const std::vector<int>& fixed)
        : m_(model), capacity_(capacity), rule_(rule), fixed_(fixed), mem_(model), priority_(bottomLevels(model)) {
        const auto n = static_cast<size_t>(model.units());
        const auto d = static_cast<size_t>(model.devices());
        device_of_.assign(n, -1);
        last_on_device_.assign(d, -1);
        free_at_.assign(d, 0.0);
        start_.assign(n, 0.0);
        finish_.assign(n, 0.0);
        data_ready_.assign(n * d, 0.0);
        waiting_.assign(n, 0);
        for (size_t u = 0; u < n; ++u) {
            waiting_[u] = static_cast<int>(model.preds(static_cast<int>(u)).size());
            if (waiting_[u] == 0) ready_.push_back(static_cast<int>(u));
        }
    }

    ScheduleOutcome run(PlanContext& context) {
        const int n = m_.units();
        for (int placed = 0; placed < n; ++placed) {
            if (placed % kPollEvery == 0 && fixed_.empty()) {
                if (context.shouldStop()) return {std::nullopt, stoppedReason(placed, context)};
                context.progress(kProgressStart + kProgressSpan * placed / n, "scheduling op " + std::to_string(placed) + " of " + std::to_string(n));
            }
            const Pick p = best();
            if (p.unit < 0) return {std::nullopt, noRoomReason(placed)};
            place(p);
        }
        ListSchedule s;
        s.assignment.device = device_of_;
        s.assignment.order = orderBy(m_, start_);
        s.start_s = start_;
        s.finish_s = finish_;
        s.makespan_s = *std::max_element(finish_.begin(), finish_.end());
        return {std::move(s), {}};
    }

private:
    Pick best() const {
        Pick best;
        const ScheduleState state{device_of_, last_on_device_};
        for (int u : ready_) {
            const double prio = priority_[static_cast<size_t>(u)];
            const int first = fixed_.empty() ? 0 : fixed_[static_cast<size_t>(u)];
            const int last = fixed_.empty() ? m_.devices() - 1 : first;
            for (int d = first; d <= last; ++d) {
                const double start = std::max(free_at_[static_cast<size_t>(d)], dataReady(u, d));
                const bool urgent = rule_.urgent(u, d, state);
                const double key = start + rule_.penalty(u, d, state);
                if (!best.worseThan(urgent, key, prio)) continue;
                if (fixed_.empty() && !mem_.fits(u, d, capacity_)) continue;
                best = Pick{u, d, urgent, key, start, prio};
            }
        }
        return best;
    }

    double dataReady(int u, int d) const {
        return data_ready_[static_cast<size_t>(u) * static_cast<size_t>(m_.devices()) + static_cast<size_t>(d)];
    }

    void place(const Pick& p) {
        const auto u = static_cast<size_t>(p.unit);
        const auto d = static_cast<size_t>(p.device);
        mem_.place(p.unit, p.device);
        device_of_[u] = p.device;
        last_on_device_[d] = p.unit;
        start_[u] = p.start;
        finish_[u] = p.start + m_.computeSeconds(p.unit, p.device);
        free_at_[d] = finish_[u];
        ready_.erase(std::find(ready_.begin(), ready_.end(), p.unit));
        for (const Arc& s : m_.succs(p.unit))
            if (--waiting_[static_cast<size_t>(s.unit)] == 0) becomeReady(s.unit);
    }

    // Arrival of every input on every device, fixed once the unit's producers are placed.
    void becomeReady(int u) {
        for (int d = 0; d < m_.devices(); ++d) {
            double t = 0;
            for (const Arc& p : m_.preds(u)) {
                const int from = device_of_[static_cast<size_t>(p.unit)];
                t = std::max(t, finish_[static_cast<size_t>(p.unit)] + m_.commSeconds(p.bytes, from, d));
            }
            data_ready_[static_cast<size_t>(u) * static_cast<size_t>(m_.devices()) + static_cast<size_t>(d)] = t;
        }
        ready_.push_back(u);
    }

    std::string noRoomReason(int placed) const {
        int largest = ready_.front();
        for (int u : ready_)
            if (m_.residentBytes(u) > m_.residentBytes(largest)) largest = u;
        return "after placing " + std::to_string(placed) + " of " + std::to_string(m_.units()) + " ops, '" + m_.unitName(largest) +
               "' (" + gib(m_.residentBytes(largest)) + ") fits on no device";
    }

    std::string stoppedReason(int placed, const PlanContext& context) const {
        return std::string(context.cancelled() ? "cancelled" : "out of time") + " after placing " + std::to_string(placed) + " of " +
               std::to_string(m_.units()) + " ops";
    }

    const PlacementModel& m_;
    const std::vector<int64_t>& capacity_;
    const SchedulingRule& rule_;
    const std::vector<int>& fixed_;
    DeviceMemory mem_;
    std::vector<double> priority_;
    std::vector<int> device_of_, last_on_device_, waiting_, ready_;
    std::vector<double> free_at_, start_, finish_, data_ready_;
};

}  // namespace

ScheduleOutcome listSchedule(const PlacementModel& model, const std::vector<int64_t>& capacity, const SchedulingRule& rule,
                             PlanContext& context, const std::vector<int>& fixed_device) {
    return ListScheduler(model, capacity, rule, fixed_device).run(context);
}

}  // namespace hippie::placement
