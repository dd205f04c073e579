#pragma once
// What is happening in a schedule at a moment, in a few plain sentences: which phase each
// device is in (warm-up, steady 1F1B, cool-down), where the bubble is, whether an
// all-reduce is hidden behind compute. Plain functions, tested without a window.
#include <string>
#include <vector>

#include "planners/sim/trace.h"

namespace hippie::studio {

enum class Phase { Waiting, Compute, WarmUp, Steady, CoolDown, Finishing, Done };
const char* toString(Phase p);

// The phase of trace row `row` at time t.
Phase phaseAt(const Trace& trace, int row, double t_s);

// Two to five sentences about time t.
std::string explainMoment(const Trace& trace, double t_s);

// The next time after t at which some compute event starts or ends (end of trace if none).
double nextEventTime(const Trace& trace, double t_s);
double previousEventTime(const Trace& trace, double t_s);

}  // namespace hippie::studio
