#pragma once
// Per-device memory curves of a Trace as plot-ready step series, without any widget.
#include <cstdint>
#include <vector>

#include "planners/sim/trace.h"

namespace hippie::widgets {

struct MemoryCurve {
    int device = 0;
    std::vector<double> time_s;  // sample times; the value holds until the next sample
    std::vector<double> gib;
    double capacity_gib = 0;
    double peak_gib = 0;
};

// One curve per trace row, in row order; the last value is held to `end_s` (when later than
// the last sample) so that every curve spans the whole iteration.
std::vector<MemoryCurve> memoryCurves(const Trace& trace, double end_s);

// The curve of `device`, or null: curves are in trace row order, which need not be the
// Gantt chart's row order (rows are grouped by node).
const MemoryCurve* curveOfDevice(const std::vector<MemoryCurve>& curves, int device);

// Allocated GiB at time t (the value of the last sample at or before t; 0 before the first).
double memoryAt(const MemoryCurve& curve, double t_s);

// The curve cut at t_s (teaching mode grows the curves as time advances).
MemoryCurve truncated(const MemoryCurve& curve, double t_s);

}  // namespace hippie::widgets
