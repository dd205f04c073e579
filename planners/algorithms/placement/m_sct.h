#pragma once
// m-SCT (Baechi, Jeon et al., SoCC'20): m-ETF with favourite children from Hanen and
// Munier's small-communication-time (SCT) linear program. The LP relaxation, solved with
// GLPK, gives each edge a value x in [0, 1] (0: producer and consumer share a device, no
// transfer); rounded at 1/2, an op has at most one favourite child and is the favourite of
// at most one parent. Scheduling then runs a favourite child next on its parent's device
// when that device is still free for it, and charges other ops that would take a device
// reserved for a favourite child the transfer the child would then pay.
#include <optional>
#include <string>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct Favourites {
    std::vector<int> child;         // by unit: its favourite child, -1 if none
    std::vector<int> parent;        // by unit: the unit whose favourite it is, -1 if none
    std::vector<double> saved_s;    // by unit: transfer time to its favourite child
    bool solved = false;            // false: the LP was not solved to optimality (no favourites)
    // The relaxation's makespan: a lower bound for schedules in which every edge but the
    // favourite ones pays its transfer (not for co-locating more than that).
    double lp_makespan_s = 0;
    std::string note;
};

// Solves  min w  s.t.  s_j >= s_i + p_i + c_ij x_ij  for each edge,
//                      sum_j x_ij >= |succ(i)| - 1,  sum_i x_ij >= |pred(j)| - 1,
//                      w >= s_i + p_i,  0 <= x <= 1,  s >= 0
// and rounds x at 1/2. `time_limit_s` bounds the solver.
Favourites favouriteChildren(const PlacementModel& model, double time_limit_s);

class MSctPlanner final : public PlacementPlanner {
public:
    explicit MSctPlanner(PlacementOptions options = {});

protected:
    void begin() override { favourites_.reset(); }
    CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                      std::vector<std::string>& log) const override;

private:
    // The LP depends on the graph, not on memory budgets: solved once per plan().
    mutable std::optional<Favourites> favourites_;
};

}  // namespace hippie::placement
