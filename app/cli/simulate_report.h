#pragma once
// The readable report of `hippie-plan simulate`: the plan, where it runs, and the metrics.
#include <iosfwd>
#include <string>
#include <vector>

#include "app/cli/simulate_setup.h"
#include "planners/sim/trace.h"

namespace hippie::cli {

void printReport(std::ostream& out, const SimulationSetup& setup, const Trace& trace);

// Row labels for traces: "d5 stage 1 replica 1", by position in trace.devices.
std::vector<std::string> deviceNames(const Plan& plan, const Trace& trace);

}  // namespace hippie::cli
