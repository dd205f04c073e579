#pragma once
// `exhaustive`: the oracle. It simulates every plan of the adaptive planner's space
// (hybrid_candidates.h) for small problems and returns the best under the objective, so
// tests can check that `hippie` finds the optimum. The space, exactly:
// - every tensor-parallel degree tp, a power of two up to the smallest node's devices that
//   the model splits by (1 for models without split ops), with sequence parallelism when > 1;
// - every pipeline depth pp from 1 to min(layers, devices / tp);
// - every data-parallel degree dp dividing the global batch with pp * dp * tp <= devices;
// - every micro-batch count m dividing the per-replica batch (global batch / dp);
// - every split of the layers into pp contiguous non-empty stages (C(layers - 1, pp - 1));
// - per stage of two or more layers, no recomputation or recomputation of all its layers
//   but the last (2^(such stages));
// - the hippie schedule, the default gradient bucket and mapDevices()'s device map.
// Problems beyond kMaxLayers layers or kMaxDevices devices are refused as infeasible.
#include "planners/algorithms/planner.h"

namespace hippie {

class ExhaustivePlanner : public Planner {
public:
    static constexpr const char* kName = "exhaustive";
    static constexpr const char* kDescription =
        "oracle for small models (<= 12 layers, <= 8 devices): simulates every tensor-parallel degree, pipeline depth, data "
        "parallelism, micro-batch count, stage split and per-stage recomputation under the hippie schedule";
    // Beyond these the space outgrows a test's patience: 12 layers on 8 devices is already
    // about a hundred thousand plans.
    static constexpr int kMaxLayers = 12;
    static constexpr int kMaxDevices = 8;

    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
