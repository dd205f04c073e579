#pragma once
// What a rank's "step" events add up to, so that a run cancelled (or killed) before its ranks
// sent "done" keeps the metrics it plotted: the mean step time after the first step (as the
// engine's own "done" reports it), samples/s from that mean, and the last loss.
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

namespace hippie::dispatch {

class StepTally {
public:
    // One engine "step" event ({"step","time_s","samples_per_s","loss"}); others are ignored.
    void add(const nlohmann::json& step_event);

    int steps() const { return steps_; }
    std::optional<double> meanStepSeconds() const;  // steps after the first (all, with one step)
    std::optional<double> samplesPerSecond() const;  // at that mean
    std::optional<double> lastLoss() const { return last_loss_; }
    // The "done" event the engine would have sent for these steps (mean_step_s, samples_per_s,
    // loss, steps), or null without any timed step.
    nlohmann::json asDoneEvent(int rank) const;

private:
    int steps_ = 0;
    std::optional<double> first_time_s_;
    double later_time_s_ = 0;
    double later_samples_ = 0;  // sum over later steps of samples_per_s x time_s
    double first_samples_ = 0;
    std::optional<double> last_loss_;
};

}  // namespace hippie::dispatch
