#pragma once
// List scheduling of placement units on devices under memory budgets, the core m-ETF, m-SCT
// and SGP share: repeatedly take, among ready units and devices with memory left, the pair
// with the earliest start (device free and inputs arrived, transfers modelled), ties to the
// unit with the longest path to the end. A rule adds what a particular planner decides on top
// (m-SCT's favourite children). Durations are forward plus backward; a transfer is the
// activation and its gradient.
#include <optional>
#include <string>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct ScheduleState {
    const std::vector<int>& device_of;       // by unit, -1 while unplaced
    const std::vector<int>& last_on_device;  // last unit placed on each device, -1 if none
};

class SchedulingRule {
public:
    virtual ~SchedulingRule() = default;
    // Candidates that go before every other one.
    virtual bool urgent(int /*unit*/, int /*device*/, const ScheduleState&) const { return false; }
    // Seconds added to a candidate's start time when ranking it.
    virtual double penalty(int /*unit*/, int /*device*/, const ScheduleState&) const { return 0.0; }
};

struct ListSchedule {
    Assignment assignment;  // order: by start time
    std::vector<double> start_s, finish_s;
    double makespan_s = 0;
};

struct ScheduleOutcome {
    std::optional<ListSchedule> schedule;
    std::string reason;  // why not: a unit fits no device, or stopped
};

// Schedules every unit. With `fixed_device` (by unit) only the order and times are chosen
// and memory is not checked (the placement was sized already); it then runs to the end without
// polling the context, being linear in the units.
ScheduleOutcome listSchedule(const PlacementModel& model, const std::vector<int64_t>& capacity, const SchedulingRule& rule,
                             PlanContext& context, const std::vector<int>& fixed_device = {});

}  // namespace hippie::placement
