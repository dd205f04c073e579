#include "planners/algorithms/comparison_caption.h"

#include <array>
#include <cstdio>

namespace hippie {

namespace {

std::string fixed(double value, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
    return buf.data();
}

}  // namespace

std::string objectiveText(Objective objective, double throughput_floor) {
    switch (objective) {
    case Objective::Throughput: return "objective throughput (most samples/s)";
    case Objective::MemoryEfficiency: return "objective me (most samples/s per GiB of peak memory)";
    case Objective::MemoryEfficiencyWithThroughputFloor:
        return "objective me-floor: within " + fixed(100 * (1 - throughput_floor), 0) +
               "% of the best throughput found, then the least memory (most ME)";
    }
    return {};
}

std::string objectiveCaption(Objective objective, double throughput_floor, double floor_samples_per_s) {
    std::string text = objectiveText(objective, throughput_floor);
    if (floor_samples_per_s > 0) text += ": every planner is held to " + fixed(floor_samples_per_s, 1) + " samples/s";
    return text + ".";
}

std::string referenceCaption(const PlannerResult* reference, double floor_samples_per_s, const std::string& times) {
    if (!reference) return times + " ref: no baseline found a plan that fits, so nothing to compare against.";
    const std::string which = reference->metrics.throughput_samples_per_s >= floor_samples_per_s
                                  ? "the best baseline under this objective"
                                  : "the fastest baseline (none reaches the floor)";
    return times + " ref: relative to " + reference->planner + ", " + which + ".";
}

std::string belowFloorNote() { return "*: below the floor, so not a candidate under this objective whatever its ME."; }

}  // namespace hippie
