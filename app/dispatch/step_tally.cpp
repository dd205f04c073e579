#include "app/dispatch/step_tally.h"

#include "planners/common/warmup.h"

namespace hippie::dispatch {

using nlohmann::json;

namespace {
std::optional<double> numberAt(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}
}  // namespace

void StepTally::add(const json& ev) {
    if (!ev.is_object() || ev.value("event", std::string()) != "step") return;
    const std::optional<double> time_s = numberAt(ev, "time_s");
    if (!time_s || *time_s <= 0) return;
    steps_.push_back({*time_s, numberAt(ev, "samples_per_s").value_or(0) * *time_s});
    if (const auto loss = numberAt(ev, "loss")) last_loss_ = loss;
}

// The steps the mean counts: after the warm-up, as the engine's "done" counts them.
std::span<const StepTally::Step> StepTally::timed() const {
    return std::span<const Step>(steps_).subspan(static_cast<size_t>(warmupStepsLeftOut(steps())));
}

std::optional<double> StepTally::meanStepSeconds() const {
    if (steps_.empty()) return std::nullopt;
    const auto t = timed();
    double sum = 0;
    for (const Step& s : t) sum += s.time_s;
    return sum / static_cast<double>(t.size());
}

std::optional<double> StepTally::samplesPerSecond() const {
    if (steps_.empty()) return std::nullopt;
    double time = 0, samples = 0;
    for (const Step& s : timed()) {
        time += s.time_s;
        samples += s.samples;
    }
    return samples / time;
}

json StepTally::asDoneEvent(int rank) const {
    const auto mean = meanStepSeconds();
    if (!mean) return nullptr;
    json done = {{"event", "done"}, {"rank", rank}, {"steps", steps()}, {"warmup_steps", warmupStepsLeftOut(steps())}, {"mean_step_s", *mean}, {"samples_per_s", *samplesPerSecond()}};
    done["loss"] = last_loss_ ? json(*last_loss_) : json(nullptr);
    return done;
}

}  // namespace hippie::dispatch
