#pragma once
// Trace: timed events per device, a memory curve per device and summary metrics. The
// simulator predicts one; the engine measures one; the same widgets draw both.
#include <cstdint>
#include <string>
#include <vector>

#include "planners/schedule/program.h"

namespace hippie {

struct TraceEvent {
    int device = 0;      // global device id
    double start_s = 0;
    double end_s = 0;
    InstrKind kind = InstrKind::Forward;
    int stage = -1;      // segment index
    int mb = -1;
    int peer = -1;
    int64_t bytes = 0;
};

struct MemorySample {
    double time_s = 0;
    int64_t bytes = 0;   // total allocated on the device from this time on
};

struct TraceMetrics {
    double iteration_time_s = 0;
    double throughput_samples_per_s = 0;
    std::vector<int64_t> peak_memory_bytes;  // per device, by position in Trace::devices
    int64_t max_peak_memory_bytes = 0;
    double bubble_fraction = 0;              // mean idle fraction of compute before the last backward
    double allreduce_hidden_fraction = 1;    // share of all-reduce time overlapped by compute (1 if none)
    double memory_efficiency = 0;            // throughput / max peak memory in GiB
    bool fits_memory = true;
    // Set by evaluateCandidate() (planners/algorithms/evaluate.h) for a plan of many micro-batches whose
    // first few already do not fit: only those were simulated, so max_peak_memory_bytes (and
    // peak_memory_bytes) are lower bounds of the plan's peak and the times are not the plan's
    // (zero). fits_memory is false.
    bool peak_is_lower_bound = false;
};

struct Trace {
    std::vector<int> devices;                       // global device ids, in row order
    std::vector<int64_t> capacity_bytes;            // per row: what tensors may take (DeviceSpec::usableBytes)
    std::vector<TraceEvent> events;
    std::vector<std::vector<MemorySample>> memory;  // per row, time-ordered
    TraceMetrics metrics;
};

// Fills metrics.memory_efficiency from throughput and peak: samples/s per GiB.
double memoryEfficiency(double throughput_samples_per_s, int64_t peak_bytes);

}  // namespace hippie
