#include "app/dispatch/step_tally.h"

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
    const double samples = numberAt(ev, "samples_per_s").value_or(0) * *time_s;
    if (!first_time_s_) {
        first_time_s_ = *time_s;
        first_samples_ = samples;
    } else {
        later_time_s_ += *time_s;
        later_samples_ += samples;
    }
    ++steps_;
    if (const auto loss = numberAt(ev, "loss")) last_loss_ = loss;
}

std::optional<double> StepTally::meanStepSeconds() const {
    if (steps_ == 0) return std::nullopt;
    // The first step warms up (allocations, first all-reduce): the engine leaves it out too.
    if (steps_ == 1) return *first_time_s_;
    return later_time_s_ / (steps_ - 1);
}

std::optional<double> StepTally::samplesPerSecond() const {
    if (steps_ == 0) return std::nullopt;
    if (steps_ == 1) return first_samples_ / *first_time_s_;
    return later_samples_ / later_time_s_;
}

json StepTally::asDoneEvent(int rank) const {
    const auto mean = meanStepSeconds();
    if (!mean) return nullptr;
    json done = {{"event", "done"}, {"rank", rank}, {"steps", steps_}, {"mean_step_s", *mean}, {"samples_per_s", *samplesPerSecond()}};
    done["loss"] = last_loss_ ? json(*last_loss_) : json(nullptr);
    return done;
}

}  // namespace hippie::dispatch
