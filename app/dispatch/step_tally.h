#pragma once
// What a rank's "step" events add up to, so that a run cancelled (or killed) before its ranks
// sent "done" keeps the metrics it plotted: the mean step time after the warm-up steps
// (planners/common/warmup.h, as the engine's own "done" reports it), samples/s from that
// mean, and the last loss.
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

namespace hippie::dispatch {

class StepTally {
public:
    // One engine "step" event ({"step","time_s","samples_per_s","loss"}); others are ignored.
    void add(const nlohmann::json& step_event);

    int steps() const { return static_cast<int>(steps_.size()); }
    std::optional<double> meanStepSeconds() const;  // steps after the warm-up (warmupStepsLeftOut)
    std::optional<double> samplesPerSecond() const;  // at that mean
    std::optional<double> lastLoss() const { return last_loss_; }
    // The "done" event the engine would have sent for these steps (mean_step_s, samples_per_s,
    // loss, steps), or null without any timed step.
    nlohmann::json asDoneEvent(int rank) const;

private:
    struct Step {
        double time_s = 0;
        double samples = 0;  // samples_per_s x time_s
    };
    std::span<const Step> timed() const;
    std::vector<Step> steps_;
    std::optional<double> last_loss_;
};

}  // namespace hippie::dispatch
