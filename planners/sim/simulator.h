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
    // Run one stream of each class that repeats another's timing exactly (symmetry.h) and copy
    // it to the rest, while the host and port shares measured from the timeline are the same
    // for them too. false: run every stream (the tests compare the two).
    bool repeat_symmetric_streams = true;
};

// Per group of the program: the collectives inside a compute (tensor-parallel, ZeRO-3
// gathers), which the simulator does not time apart from it, share a node's network ports
// with every multi-node group that has a member on it: the count on the group's busiest node
// (1 for a group inside one node).
std::vector<int> countedGroupSharing(const Program& prog, const Cluster& cluster);

// Throws Error if the program deadlocks (validate() first to get every problem).
Trace simulate(const Program& program, const Plan& plan, const CostModel& cost, const SimOptions& options = {});

}  // namespace hippie
