#include "app/store/measured_trace.h"

#include <algorithm>
#include <map>

#include "planners/common/error.h"
#include "planners/sim/trace.h"
#include "planners/sim/trace_json.h"

namespace hippie::store {

using nlohmann::json;

namespace {

struct RankTrace {
    long long step = -1;
    Trace trace;
};

}  // namespace

json mergeRankTraces(const std::vector<json>& trace_events, const std::string& where) {
    std::map<int, RankTrace> by_rank;
    for (const json& ev : trace_events) {
        if (!ev.is_object() || !ev.contains("rank") || !ev["rank"].is_number_integer())
            throw Error(where + ": a trace event names no integer 'rank'");
        const int rank = ev["rank"].get<int>();
        const long long step = ev.contains("step") && ev["step"].is_number_integer() ? ev["step"].get<long long>() : 0;
        RankTrace& slot = by_rank[rank];
        if (step < slot.step) continue;
        if (!ev.contains("trace")) throw Error(where + ": the trace event of rank " + std::to_string(rank) + " has no 'trace'");
        slot.step = step;
        slot.trace = traceFromJson(ev["trace"], where + ": rank " + std::to_string(rank) + " trace");
    }
    if (by_rank.empty()) return nullptr;

    struct Row {
        int device;
        int64_t capacity;
        std::vector<MemorySample> memory;
        int64_t peak;
        int rank;
    };
    std::vector<Row> rows;
    Trace merged;
    TraceMetrics& m = merged.metrics;
    double bubble_sum = 0, hidden_sum = 0;
    bool first = true;
    for (const auto& [rank, rt] : by_rank) {
        const Trace& t = rt.trace;
        for (size_t r = 0; r < t.devices.size(); ++r)
            rows.push_back({t.devices[r], t.capacity_bytes[r], t.memory[r], t.metrics.peak_memory_bytes[r], rank});
        merged.events.insert(merged.events.end(), t.events.begin(), t.events.end());
        // The step ends when the slowest rank ends; its throughput is the job's.
        if (first || t.metrics.iteration_time_s > m.iteration_time_s) {
            m.iteration_time_s = t.metrics.iteration_time_s;
            m.throughput_samples_per_s = t.metrics.throughput_samples_per_s;
        }
        first = false;
        bubble_sum += t.metrics.bubble_fraction;
        hidden_sum += t.metrics.allreduce_hidden_fraction;
        m.fits_memory = m.fits_memory && t.metrics.fits_memory;
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.device < b.device; });
    for (size_t i = 1; i < rows.size(); ++i)
        if (rows[i].device == rows[i - 1].device)
            throw Error(where + ": ranks " + std::to_string(rows[i - 1].rank) + " and " + std::to_string(rows[i].rank) +
                        " both report device " + std::to_string(rows[i].device));
    for (Row& r : rows) {
        merged.devices.push_back(r.device);
        merged.capacity_bytes.push_back(r.capacity);
        merged.memory.push_back(std::move(r.memory));
        m.peak_memory_bytes.push_back(r.peak);
        m.max_peak_memory_bytes = std::max(m.max_peak_memory_bytes, r.peak);
    }
    std::stable_sort(merged.events.begin(), merged.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
        return a.start_s != b.start_s ? a.start_s < b.start_s : a.device < b.device;
    });
    const double ranks = static_cast<double>(by_rank.size());
    m.bubble_fraction = bubble_sum / ranks;
    m.allreduce_hidden_fraction = hidden_sum / ranks;
    m.memory_efficiency = memoryEfficiency(m.throughput_samples_per_s, m.max_peak_memory_bytes);
    return traceToJson(merged);
}

}  // namespace hippie::store
