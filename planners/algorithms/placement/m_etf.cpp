#include "planners/algorithms/placement/m_etf.h"

#include "planners/algorithms/placement/list_scheduler.h"
#include "planners/algorithms/placement/run_order.h"

namespace hippie::placement {

MEtfPlanner::MEtfPlanner(PlacementOptions options)
    : PlacementPlanner("m-etf", "Baechi's m-ETF: memory-constrained earliest-task-first list scheduling with modelled transfers",
                       std::move(options)) {}

CoreOutcome MEtfPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                               std::vector<std::string>& log) const {
    ScheduleOutcome s = listSchedule(model, capacity, SchedulingRule{}, context);
    if (!s.schedule) return {std::nullopt, s.reason, {}, {}};
    log.push_back("m-etf: estimated makespan " + std::to_string(s.schedule->makespan_s) + " s");
    OrderChoice c = chooseExecutionOrder(model, std::move(s.schedule->assignment), capacity);
    log.push_back(executionOrderLine("m-etf", c));
    return {std::move(c.assignment), {}, {}, {}};
}

}  // namespace hippie::placement
