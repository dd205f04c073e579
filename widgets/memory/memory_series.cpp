#include "widgets/memory/memory_series.h"

#include <algorithm>

#include "widgets/common/units.h"

namespace hippie::widgets {

std::vector<MemoryCurve> memoryCurves(const Trace& trace, double end_s) {
    std::vector<MemoryCurve> curves;
    curves.reserve(trace.devices.size());
    for (size_t row = 0; row < trace.devices.size(); ++row) {
        MemoryCurve c;
        c.device = trace.devices[row];
        if (row < trace.capacity_bytes.size()) c.capacity_gib = toGiB(trace.capacity_bytes[row]);
        if (row < trace.memory.size()) {
            for (const MemorySample& s : trace.memory[row]) {
                c.time_s.push_back(s.time_s);
                c.gib.push_back(toGiB(s.bytes));
                c.peak_gib = std::max(c.peak_gib, c.gib.back());
            }
        }
        if (!c.time_s.empty() && end_s > c.time_s.back()) {
            c.time_s.push_back(end_s);
            c.gib.push_back(c.gib.back());
        }
        curves.push_back(std::move(c));
    }
    return curves;
}

const MemoryCurve* curveOfDevice(const std::vector<MemoryCurve>& curves, int device) {
    for (const MemoryCurve& c : curves)
        if (c.device == device) return &c;
    return nullptr;
}

double memoryAt(const MemoryCurve& curve, double t_s) {
    const auto it = std::upper_bound(curve.time_s.begin(), curve.time_s.end(), t_s);
    if (it == curve.time_s.begin()) return 0.0;
    return curve.gib[static_cast<size_t>(std::distance(curve.time_s.begin(), it) - 1)];
}

MemoryCurve truncated(const MemoryCurve& curve, double t_s) {
    MemoryCurve c = curve;
    const auto it = std::upper_bound(c.time_s.begin(), c.time_s.end(), t_s);
    const auto n = static_cast<size_t>(std::distance(c.time_s.begin(), it));
    c.time_s.resize(n);
    c.gib.resize(n);
    if (n > 0 && c.time_s.back() < t_s) {
        c.time_s.push_back(t_s);
        c.gib.push_back(c.gib.back());
    }
    return c;
}

}  // namespace hippie::widgets
