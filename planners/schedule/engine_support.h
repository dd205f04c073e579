#pragma once
// What hippie-engine cannot train yet although the planners plan it, said the same way by the
// engine when it loads a plan and by the studio's and the agent's checks before launching.
#include <string>

#include "planners/schedule/plan.h"

namespace hippie {

// "" when the engine trains the plan's parallelism; otherwise why not.
inline std::string untrainedParallelism(const Plan& p) {
    if (p.tp == 1 && !p.sequence_parallel) return "";
    return "tensor parallelism (tp " + std::to_string(p.tp) + (p.sequence_parallel ? ", sequence parallel" : "") +
           ") is planned, not yet trained by this engine; plan with tp 1 to train";
}

}  // namespace hippie
