#pragma once
// The shape of a pipeline plan in a few characters, as the compare table (CLI and studio)
// shows it: "4x8 t2 sp z1" is pp 4 x dp 8 ("3x(8,16,8)" with per-stage replication), tensor parallelism 2 ("t(2,1,2)" per stage) with sequence parallelism,
// ZeRO stage 1; " sel" ends it when the attention cores are recomputed (selective
// recomputation). Parts at their default (tp 1, no sequence parallelism, stage 0, no
// selective recomputation) are left out.
#include <string>

#include "planners/schedule/plan.h"

namespace hippie {

inline std::string pipelineShapeText(const Plan& p, const std::string& times = "x") {
    return std::to_string(p.pipelineDepth()) + times + p.dpText() + (p.tp > 1 ? " t" + p.tpText() : "") +
           (p.sequence_parallel ? " sp" : "") + (p.zero_stage > 0 ? " z" + std::to_string(p.zero_stage) : "") + (p.selective_recompute ? " sel" : "");
}

}  // namespace hippie
