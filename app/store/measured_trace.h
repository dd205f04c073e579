#pragma once
// The measured Trace of a run: each engine rank prints its own trace (one row: its device) as
// {"event":"trace","rank","step","trace": Trace JSON}; this merges the ranks' rows into one Trace
// like the simulator's, so the predicted and measured Gantt charts are drawn alike.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hippie::store {

// `trace_events` are the run's "trace" events in any order; for each rank the one of the latest
// "step" (then the last given) counts. Rows are ordered by device. Metrics are those of the whole
// step: the slowest rank's iteration time and its throughput, per-device peaks, the mean bubble
// and hidden all-reduce fractions, memory efficiency from the throughput and the largest peak.
// Returns null for no trace events; throws hippie::Error naming `where` and the rank whose trace
// is malformed, or a device that two ranks both claim.
nlohmann::json mergeRankTraces(const std::vector<nlohmann::json>& trace_events, const std::string& where);

}  // namespace hippie::store
