#pragma once
// Trace JSON ("format":"hippie-trace","version":1), schema in
// resources/schemas/trace.schema.json, and Chrome trace export (Perfetto opens it).
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planners/cluster/cluster.h"
#include "planners/sim/trace.h"

namespace hippie {

nlohmann::json metricsToJson(const TraceMetrics& m);  // the keys `hippie-plan simulate --json` prints
TraceMetrics metricsFromJson(const nlohmann::json& j, const std::string& where = "metrics");
nlohmann::json traceToJson(const Trace& t);
Trace traceFromJson(const nlohmann::json& j, const std::string& where = "trace");

// {"traceEvents":[...]}: one "X" event per TraceEvent (pid = node, tid = device) and one "C"
// counter series per device for memory. `device_names` labels the rows (may be empty).
// With a cluster, pid is the node of each device; without one every row is in pid 0.
nlohmann::json traceToChromeJson(const Trace& t, const std::vector<std::string>& device_names = {},
                                 const Cluster* cluster = nullptr);
void saveChromeTrace(const Trace& t, const std::string& path, const std::vector<std::string>& device_names = {},
                     const Cluster* cluster = nullptr);

}  // namespace hippie
