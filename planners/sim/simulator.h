#pragma once
// Simulator: executes a Program under the cost model with the semantics of program.h and
// produces a predicted Trace.
#include "planners/cost/cost_model.h"
#include "planners/schedule/program.h"
#include "planners/sim/trace.h"

namespace hippie {

struct SimOptions {
    bool record_events = true;  // false: metrics and peaks only (planners' inner loop)
    double memory_headroom = 0.0;  // fraction of device memory kept free when judging fits
    // Measure how cross-node sends and collectives share the nodes' network ports from the
    // run's timeline (the program runs again until the shares settle). false: each has its
    // whole link, one run; for callers that read only the memory (a memory probe).
    bool measure_port_sharing = true;
};

// Throws Error if the program deadlocks (validate() first to get every problem).
Trace simulate(const Program& program, const Plan& plan, const CostModel& cost, const SimOptions& options = {});

}  // namespace hippie
