#include "app/cli/simulate_report.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <ostream>
#include <utility>

#include "app/cli/format.h"
#include "app/cli/table.h"

namespace hippie::cli {

namespace {

struct DevicePlace {
    int stage = -1;  // pipeline position
    int replica = -1;
    int rank = 0;    // tensor-parallel rank
};

// The plan's device map: device_map[stage][replica * tp + rank] (placement plans: one stage
// group per device).
std::vector<std::vector<int>> deviceRows(const Plan& plan) {
    if (plan.isPlacement()) return plan.stageGroups();
    return plan.device_map.empty() ? defaultDeviceMap(plan) : plan.device_map;
}

std::map<int, DevicePlace> devicePlaces(const Plan& plan) {
    std::map<int, DevicePlace> places;
    const std::vector<std::vector<int>> map = deviceRows(plan);
    const size_t tp = plan.isPlacement() ? 1 : static_cast<size_t>(std::max(plan.tp, 1));
    for (size_t s = 0; s < map.size(); ++s)
        for (size_t i = 0; i < map[s].size(); ++i)
            places[map[s][i]] = {static_cast<int>(s), static_cast<int>(i / tp), static_cast<int>(i % tp)};
    return places;
}

// A stage's devices by replica: "[0 1 2 3]", or with tensor parallelism each replica's ranks,
// "[0 1] [4 5]".
std::string replicaDevices(const std::vector<int>& row, int tp) {
    if (tp <= 1) return deviceList(row);
    std::vector<std::string> groups;
    for (size_t r = 0; r < row.size(); r += static_cast<size_t>(tp))
        groups.push_back(deviceList(std::vector<int>(row.begin() + static_cast<std::ptrdiff_t>(r),
                                                     row.begin() + static_cast<std::ptrdiff_t>(std::min(row.size(), r + static_cast<size_t>(tp))))));
    return joined(groups, " ");
}

// Layer ranges held by pipeline position `position`: one, or one per interleaved chunk.
std::string positionLayers(const Plan& plan, int position) {
    const size_t pp = static_cast<size_t>(plan.pipelineDepth());
    std::vector<std::string> ranges;
    for (size_t s = static_cast<size_t>(position); s < plan.stages.size(); s += pp) ranges.push_back(layerRange(plan.stages[s]));
    return joined(ranges, ", ");
}

std::string modelLabel(const Graph& g) {
    const ModelSpec& m = g.source;
    std::string label = g.name + (m.zoo.empty() ? " from " + m.file : "");
    label += std::string(" (") + toString(m.precision);
    if (m.seq_len > 0) label += ", seq " + std::to_string(m.seq_len);
    return label + ")";
}

void printPlanSummary(std::ostream& out, const SimulationSetup& s) {
    const Plan& p = s.plan;
    std::vector<std::string> stages;
    for (const StageRange& r : p.stages) stages.push_back(layerRange(r));
    const std::string chunks = p.virtual_stages > 1 ? " x " + std::to_string(p.virtual_stages) + " chunks" : "";
    const std::string tensor = p.tp > 1 ? " x tp " + p.tpText() + (p.perStageTp() ? " (per stage)" : "") +
                                              (p.sequence_parallel ? " (sequence parallel)" : "")
                                        : "";
    std::string replicas = std::to_string(p.dp);
    if (p.perStageReplication()) {
        std::vector<std::string> each;
        for (int r : p.stage_replicas) each.push_back(std::to_string(r));
        replicas = joined(each, "-") + " (per stage, micro-batches round-robin)";
    }
    out << "plan: " << modelLabel(s.graph) << " on " << p.cluster << ": pp " << p.pipelineDepth() << chunks << " x dp "
        << replicas << tensor << ", " << p.micro_batches << " micro-batches x " << fixed(p.microBatchSize(), 0) << " samples"
        << (p.perStageReplication() ? " per replica of the widest stage" : "") << ", " << toString(p.schedule) << ", stages "
        << joined(stages, " | ") << '\n';
    out << "      global batch " << p.global_batch << ", optimizer " << toString(p.optimizer) << ", recompute "
        << (p.recompute_layers.empty() ? std::string(p.selective_recompute ? "" : "none") : std::to_string(p.recompute_layers.size()) + " layers")
        << (p.selective_recompute ? std::string(p.recompute_layers.empty() ? "" : " + ") + "selective (attention cores)" : std::string())
        << (p.zero_stage > 0 ? ", ZeRO " + std::to_string(p.zero_stage) + " (" + zeroStageMeaning(p.zero_stage) + ")" : std::string())
        << ", planner " << p.planner << '\n';
}

void printDeviceMapping(std::ostream& out, const SimulationSetup& s) {
    const Plan& p = s.plan;
    const std::vector<std::vector<int>> rows = deviceRows(p);
    const int tp = p.isPlacement() ? 1 : p.tp;
    printHeading(out, "Device mapping");
    Table t({{"stage", Align::Right}, {"layers"}, {tp > 1 ? "devices by replica (tp ranks)" : "devices by replica"}, {"nodes"}});
    for (size_t stage = 0; stage < rows.size(); ++stage) {
        std::vector<int> nodes;
        for (int d : rows[stage]) nodes.push_back(s.cluster.nodeOf(d));
        const int t_stage = p.isPlacement() ? 1 : p.tpOf(static_cast<int>(stage));
        t.addRow({std::to_string(stage), positionLayers(p, static_cast<int>(stage)), replicaDevices(rows[stage], t_stage),
                  replicaDevices(nodes, t_stage)});
    }
    t.print(out);
    const std::vector<std::vector<int>> groups = p.stageGroups();

    printHeading(out, "Process groups");
    const auto groupList = [](const std::vector<std::vector<int>>& gs) {
        std::vector<std::string> parts;
        for (const auto& g : gs) parts.push_back(deviceList(g));
        return joined(parts, " ");
    };
    std::vector<std::pair<std::string, std::string>> fields;
    // Per-stage replication has no fixed pipelines: each micro-batch meets its replica of every stage.
    if (!p.perStageReplication()) fields.emplace_back("pipelines", groupList(p.pipelineGroups()));
    fields.emplace_back("stage groups", groupList(groups));
    if (tp > 1) fields.emplace_back("tensor groups", groupList(p.tpGroups()));
    printFields(out, fields);
}

// Trace rows in device id order.
std::vector<size_t> rowsByDevice(const Trace& t) {
    std::vector<size_t> rows(t.devices.size());
    std::iota(rows.begin(), rows.end(), size_t{0});
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return t.devices[a] < t.devices[b]; });
    return rows;
}

void printMemory(std::ostream& out, const SimulationSetup& s, const Trace& t) {
    const std::map<int, DevicePlace> places = devicePlaces(s.plan);
    const bool ranks = !s.plan.isPlacement() && s.plan.tp > 1;
    printHeading(out, "Peak memory");
    std::vector<Column> columns{{"device", Align::Right}, {"node", Align::Right}, {"stage", Align::Right}, {"replica", Align::Right}};
    if (ranks) columns.push_back({"tp rank", Align::Right});
    columns.insert(columns.end(), {{"peak GiB", Align::Right}, {"for tensors GiB", Align::Right}, {""}});
    Table table(columns);
    for (size_t row : rowsByDevice(t)) {
        const int d = t.devices[row];
        const auto place = places.find(d);
        const bool over = t.metrics.peak_memory_bytes[row] > t.capacity_bytes[row];
        std::vector<std::string> cells{std::to_string(d), std::to_string(s.cluster.nodeOf(d)),
                                       place == places.end() ? "-" : std::to_string(place->second.stage),
                                       place == places.end() ? "-" : std::to_string(place->second.replica)};
        if (ranks) cells.push_back(place == places.end() ? "-" : std::to_string(place->second.rank));
        cells.insert(cells.end(), {gib(t.metrics.peak_memory_bytes[row]), gib(t.capacity_bytes[row]), over ? "OVER" : ""});
        table.addRow(cells);
    }
    table.print(out);
}

void printMetrics(std::ostream& out, const TraceMetrics& m) {
    printHeading(out, "Metrics");
    printFields(out, {{"iteration time", milliseconds(m.iteration_time_s)},
                      {"throughput", fixed(m.throughput_samples_per_s, 1) + " samples/s"},
                      {"max peak memory", gib(m.max_peak_memory_bytes) + " GiB"},
                      {"bubble", percent(m.bubble_fraction)},
                      {"all-reduce hidden", percent(m.allreduce_hidden_fraction)},
                      {"memory efficiency", fixed(m.memory_efficiency, 2) + " samples/s/GiB"},
                      {"fits memory", m.fits_memory ? "yes" : "no"}});
}

}  // namespace

void printReport(std::ostream& out, const SimulationSetup& setup, const Trace& trace) {
    printPlanSummary(out, setup);
    printDeviceMapping(out, setup);
    printMemory(out, setup, trace);
    printMetrics(out, trace.metrics);
}

std::vector<std::string> deviceNames(const Plan& plan, const Trace& trace) {
    const std::map<int, DevicePlace> places = devicePlaces(plan);
    std::vector<std::string> names;
    for (int d : trace.devices) {
        const auto place = places.find(d);
        std::string name = "d" + std::to_string(d);
        if (place != places.end()) {
            name += " stage " + std::to_string(place->second.stage) + " replica " + std::to_string(place->second.replica);
            if (!plan.isPlacement() && plan.tp > 1) name += " tp " + std::to_string(place->second.rank);
        }
        names.push_back(std::move(name));
    }
    return names;
}

}  // namespace hippie::cli
