#pragma once
// The wall clock of the probe's and the profiler's measurements.
#include <algorithm>
#include <chrono>
#include <vector>

namespace hippie::engine::timing {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The upper median (0 for none): a few slow repetitions (a page fault, a preemption) do not move it.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace hippie::engine::timing
