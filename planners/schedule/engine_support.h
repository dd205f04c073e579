#pragma once
// What hippie-engine cannot train yet although the planners plan it, said the same way by the
// engine when it loads a plan and by the studio's and the agent's checks before launching.
#include <string>

#include "planners/model/architecture.h"
#include "planners/schedule/plan.h"

namespace hippie {

// The model's zoo family ("gpt", "bert", ...), or "" for a model file.
inline std::string zooFamily(const ModelSpec& model) {
    const Architecture* arch = model.zoo.empty() ? nullptr : publishedArchitecture(model.zoo);
    return arch ? familyOf(*arch) : "";
}

// Whether the planners plan sequence parallelism for `model`. The engine trains it for the GPT
// and BERT models, and tensor parallelism without it for the Transformer (its encoder and
// decoder run two sequences, its decoder blocks read the encoder's output: not built split
// along the sequence): there the planners keep tp alone, so that every plan they recommend can
// be trained. The simulator still times sequence parallelism for any model
// (hippie-plan simulate --sequence-parallel). Graphs the engine splits in no way (model files
// have no split ops; in-memory test graphs) are planned as the simulator models them.
inline bool plansSequenceParallel(const ModelSpec& model) { return zooFamily(model) != "transformer"; }

// "" when the engine trains the plan's parallelism; otherwise why not. Tensor parallelism is
// trained for the zoo's transformers (their attention, MLP, embedding and LM head split the
// Megatron way), sequence parallelism for the GPT and BERT models; the engine also refuses a tp that
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
    const std::string family = zooFamily(p.model);
    const std::string what = "tensor parallelism (tp " + std::to_string(p.tp) + (p.sequence_parallel ? ", sequence parallel" : "") + ")";
    const std::string model = p.model.zoo.empty() ? "a model file" : "'" + p.model.zoo + "'";
    if (family != "gpt" && family != "bert" && family != "transformer")
        return what + " is trained by this engine for the zoo's transformer models (gpt, bert, transformer), not " + model +
               "; plan with tp 1 to train";
    if (p.sequence_parallel && family != "gpt" && family != "bert")
        return what + ": sequence parallelism is trained by this engine for the GPT and BERT models, not " + model +
               "; plan without it (tp alone) to train";
    return "";
}

}  // namespace hippie
