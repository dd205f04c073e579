#pragma once
// What a lesson claims about its schedule, computed from the simulated traces: this lesson's
// iteration time, bubble and peak memory against the lesson it is compared with. Plain
// functions, tested without a window, so that the text never contradicts the chart.
#include <string>
#include <vector>

#include "planners/sim/trace.h"

namespace hippie::studio {

// A relation between this lesson's metrics and its baseline's that the lesson is about.
enum class LessonExpect {
    ShorterIteration,   // iteration time below the baseline's
    LongerIteration,    // iteration time above the baseline's
    SameIteration,      // within kSameIterationTolerance of the baseline's
    NoLongerIteration,  // not above the baseline's by more than kSameIterationTolerance (shorter is fine)
    SmallerBubble,      // bubble fraction below the baseline's
    LowerPeakMemory,    // max peak memory below the baseline's
    HiddenAllReduce,    // some all-reduce time overlaps compute (no baseline needed)
    BalancedStages,     // no device computes more than kBalanceTolerance above the mean
};

inline constexpr double kSameIterationTolerance = 0.05;
inline constexpr double kBalanceTolerance = 0.25;

struct LessonClaim {
    LessonExpect expect;
    bool holds = false;
    std::string text;  // "iteration 30.1 ms, 6% shorter than 1F1B's 32.0 ms"
};

// Busy compute seconds of each trace row.
std::vector<double> computeSecondsPerRow(const Trace& trace);

// Each expectation checked on `trace` against `baseline` (null when the lesson has none: the
// expectations that need one then do not hold). `baseline_title` names it in the text.
std::vector<LessonClaim> lessonClaims(const Trace& trace, const Trace* baseline, const std::string& baseline_title,
                                      const std::vector<LessonExpect>& expects);

// One paragraph: the claims joined, each as computed ("… shorter than …" or, where a
// relation does not hold, what the numbers are instead).
std::string claimsText(const std::vector<LessonClaim>& claims);

}  // namespace hippie::studio
