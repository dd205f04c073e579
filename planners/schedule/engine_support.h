#pragma once
// What hippie-engine cannot train yet although the planners plan it, said the same way by the
// engine when it loads a plan and by the studio's and the agent's checks before launching.
#include <string>

#include "planners/model/architecture.h"
#include "planners/model/presets.h"
#include "planners/schedule/plan.h"

namespace hippie {

// "" when the engine trains the plan's parallelism; otherwise why not. Tensor parallelism is
// trained for the zoo's transformers (their attention, MLP, embedding and LM head split the
// Megatron way, with or without sequence parallelism); the engine also refuses a tp that
// does not divide the model's heads, MLP width or vocabulary, once it has resolved the sizes.
// ZeRO-3 under zb-h1 is refused: the engine's weight pass (W) runs autograd back through the
// layers again, so it would gather every layer's parameters a second time, which the program
// (where W needs no weights) does not list.
inline std::string untrainedParallelism(const Plan& p) {
    if (p.zero_stage >= 3 && p.dp > 1 && p.schedule == ScheduleKind::ZeroBubbleH1)
        return "ZeRO-3 under the zb-h1 schedule is not trained by this engine: its weight pass (W) runs back through the layers' "
               "weights, which ZeRO-3 would have to gather a second time; plan 1f1b, interleaved, gpipe or hippie with ZeRO-3, or "
               "zb-h1 with ZeRO-2";
    if (p.tp == 1 && !p.sequence_parallel) return "";
    const Architecture* arch = p.model.zoo.empty() ? nullptr : publishedArchitecture(expandPreset(p.model).zoo);
    const std::string family = arch ? familyOf(*arch) : "";
    const std::string what = "tensor parallelism (tp " + std::to_string(p.tp) + (p.sequence_parallel ? ", sequence parallel" : "") + ")";
    const std::string model = p.model.zoo.empty() ? "a model file" : "'" + p.model.zoo + "'";
    if (family != "gpt" && family != "bert" && family != "transformer")
        return what + " is trained by this engine for the zoo's transformer models (gpt, bert, transformer), not " + model +
               "; plan with tp 1 to train";
    return "";
}

}  // namespace hippie
