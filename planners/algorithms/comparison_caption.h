#pragma once
// The words under a comparison's table: what the objective asks and what "× ref" is relative
// to. `hippie-plan compare` prints them under its table and the studio shows them over its
// own, so both say the same.
#include <string>

#include "planners/algorithms/planner.h"

namespace hippie {

// "objective me-floor: within 10% of the best throughput found, then the least memory (most ME)"
std::string objectiveText(Objective objective, double throughput_floor);

// objectiveText, then under me-floor the floor every planner is held to (comparisonFloor, in
// samples/s; 0: none), and a full stop.
std::string objectiveCaption(Objective objective, double throughput_floor, double floor_samples_per_s);

// What the "× ref" columns divide by: "x ref: relative to data-parallel, the best baseline under
// this objective." (referenceResult), the fastest baseline where none reaches the floor, or
// that there is none. `times` is the table's multiplication sign ("x" in a terminal, "×").
std::string referenceCaption(const PlannerResult* reference, double floor_samples_per_s, const std::string& times = "x");

// The footnote of a "ME × ref" marked with '*': the row runs below the floor.
std::string belowFloorNote();

}  // namespace hippie
