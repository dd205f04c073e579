#include "app/studio/lesson_claims.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace hippie::studio {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string ms(double seconds) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(seconds < 0.01 ? 2 : 1);
    s << seconds * 1e3 << " ms";
    return s.str();
}

std::string percent(double fraction) {
    std::ostringstream s;
    s << static_cast<int>(std::lround(fraction * 100)) << "%";
    return s.str();
}

std::string gib(int64_t bytes) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(2);
    s << static_cast<double>(bytes) / kBytesPerGiB << " GiB";
    return s.str();
}

LessonClaim compareIteration(const TraceMetrics& m, const TraceMetrics& b, const std::string& title, LessonExpect x) {
    const double ratio = b.iteration_time_s > 0 ? m.iteration_time_s / b.iteration_time_s : 1.0;
    LessonClaim c{x, false, {}};
    switch (x) {
    case LessonExpect::ShorterIteration: c.holds = ratio < 1.0; break;
    case LessonExpect::LongerIteration: c.holds = ratio > 1.0; break;
    case LessonExpect::SameIteration: c.holds = std::abs(ratio - 1.0) <= kSameIterationTolerance; break;
    case LessonExpect::NoLongerIteration: c.holds = ratio <= 1.0 + kSameIterationTolerance; break;
    default: break;
    }
    std::ostringstream s;
    s << "Iteration " << ms(m.iteration_time_s) << ", ";
    if (std::abs(ratio - 1.0) < 0.005) s << "the same as";
    else s << percent(std::abs(1.0 - ratio)) << (ratio < 1.0 ? " shorter than" : " longer than");
    s << " " << title << "'s " << ms(b.iteration_time_s) << ".";
    c.text = s.str();
    return c;
}

}  // namespace

std::vector<double> computeSecondsPerRow(const Trace& trace) {
    std::vector<double> busy(trace.devices.size(), 0.0);
    for (const TraceEvent& e : trace.events) {
        if (!isCompute(e.kind)) continue;
        const auto it = std::find(trace.devices.begin(), trace.devices.end(), e.device);
        if (it != trace.devices.end()) busy[static_cast<size_t>(it - trace.devices.begin())] += e.end_s - e.start_s;
    }
    return busy;
}

std::vector<LessonClaim> lessonClaims(const Trace& trace, const Trace* baseline, const std::string& baseline_title,
                                      const std::vector<LessonExpect>& expects) {
    std::vector<LessonClaim> claims;
    const TraceMetrics& m = trace.metrics;
    for (LessonExpect x : expects) {
        LessonClaim c{x, false, {}};
        std::ostringstream s;
        switch (x) {
        case LessonExpect::ShorterIteration:
        case LessonExpect::LongerIteration:
        case LessonExpect::SameIteration:
        case LessonExpect::NoLongerIteration:
            if (baseline) c = compareIteration(m, baseline->metrics, baseline_title, x);
            break;
        case LessonExpect::SmallerBubble:
            if (!baseline) break;
            c.holds = m.bubble_fraction < baseline->metrics.bubble_fraction;
            s << "Bubble " << percent(m.bubble_fraction) << " of the iteration against " << percent(baseline->metrics.bubble_fraction)
              << " in " << baseline_title << ".";
            c.text = s.str();
            break;
        case LessonExpect::LowerPeakMemory:
            if (!baseline) break;
            c.holds = m.max_peak_memory_bytes < baseline->metrics.max_peak_memory_bytes;
            s << "Peak memory " << gib(m.max_peak_memory_bytes) << (c.holds ? " against " : ", not below ")
              << gib(baseline->metrics.max_peak_memory_bytes) << " in " << baseline_title << ".";
            c.text = s.str();
            break;
        case LessonExpect::HiddenAllReduce:
            c.holds = m.allreduce_hidden_fraction > 0 && m.allreduce_hidden_fraction <= 1.0;
            s << percent(m.allreduce_hidden_fraction) << " of the all-reduce time runs while some GPU still computes.";
            c.text = s.str();
            break;
        case LessonExpect::BalancedStages: {
            const std::vector<double> busy = computeSecondsPerRow(trace);
            if (busy.empty()) break;
            const double mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
            const double most = *std::max_element(busy.begin(), busy.end());
            c.holds = mean > 0 && most <= mean * (1.0 + kBalanceTolerance);
            s << "Stages are balanced: the busiest GPU computes " << ms(most) << ", the mean is " << ms(mean) << ".";
            if (!c.holds) s << " (Not balanced: the busiest GPU sets the pace.)";
            c.text = s.str();
            break;
        }
        }
        if (c.text.empty()) c.text = "(no lesson to compare with)";
        claims.push_back(c);
    }
    return claims;
}

std::string claimsText(const std::vector<LessonClaim>& claims) {
    std::string out;
    for (const LessonClaim& c : claims) out += (out.empty() ? "" : " ") + c.text;
    return out;
}

}  // namespace hippie::studio
