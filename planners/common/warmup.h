#pragma once
// Which training steps a measured step time leaves out. A run's first steps warm up: the first
// touches the memory every later step reuses (on a virtual machine each new 4 KiB page costs
// ~16 us, so gpt2-small's first step takes 3-4x a later one), and a pipeline's ranks, started
// apart, take a few more steps to fall into step with each other (mlp pp2 on this project's
// 2-core VM: steps 1-2 at 2-6x the later ones). The engine's "done" event and the studio's
// tally of a cancelled run both report the mean of the steps after these.
#include <algorithm>

namespace hippie {

inline constexpr int kWarmupSteps = 3;

// Of `steps` steps run, how many the mean leaves out: the first kWarmupSteps, but always
// keeping at least the last step.
constexpr int warmupStepsLeftOut(int steps) { return steps <= 1 ? 0 : std::min(kWarmupSteps, steps - 1); }

}  // namespace hippie
