#pragma once
// What a Gantt block waits on and what waits on it, read from the trace by the execution rules
// of planners/schedule/program.h (the Program the trace was simulated from follows them):
// - a compute instruction waits on the previous compute of its device, and on the transfer
//   that delivers its micro-batch's input (a send to its device, same micro-batch, activation
//   for forward work, gradient for backward work, ending before it starts);
// - a send waits on the compute of its device that produced it (same micro-batch, the last
//   one of that direction ending before the send starts);
// - an all-reduce waits on the compute just before it on its device; an optimizer step waits
//   on every all-reduce of its device that started before it.
// Plain functions on trace event indices, tested without a window.
#include <vector>

#include "planners/sim/trace.h"

namespace hippie::widgets {

struct EventDependencies {
    std::vector<int> waits_on;   // events this one waits for
    std::vector<int> waited_by;  // events that wait for this one
};

EventDependencies dependenciesOf(const Trace& trace, int event);

}  // namespace hippie::widgets
