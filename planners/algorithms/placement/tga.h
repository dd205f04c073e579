#pragma once
// TGA: a two-population genetic algorithm for op placement. A chromosome is a device per op.
// - Fitness (lower is better) from a cost model in three dimensions: the estimated step time
//   of the placement (compute and transfers, forward then backward), the total transfer
//   time, and the load imbalance between devices; placements that do not fit memory are
//   repaired (explorers) or penalised in proportion to the overflow (exploiters).
// - Explorers: a larger population, weak selection, one-point crossover along the
//   topological order and block mutations that move a whole run of ops to a random device.
// - Exploiters: a smaller population, strong selection, two-point crossover and boundary
//   mutations that move an op to a neighbour's device.
// - Every few generations each population sends its best individual to the other.
// Both populations start from random contiguous splits of the topological order and from
// Baechi's three placements (m-TOPO, m-ETF, m-SCT, planned as those planners plan them; m-SCT's
// LP within seed_budget_share of the budget). Seeded from Problem::seed; stops at the time
// budget, a generation limit or when the best stops improving; records the best fitness per
// generation. Of the three starting placements and the best few distinct individuals, the
// fastest that fits is returned, so TGA is never slower than the best of Baechi's three by
// the step estimate. Every individual runs its ops in one order (the order of the best
// seed by simulated step time; highest bottom level first without a seed), and fitness
// estimates the step the way the simulator runs such a plan (step_estimate.h), so fitness
// and simulated step time agree closely.
#include <cstdint>
#include <optional>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct TgaOptions {
    PlacementOptions placement;
    int explorers = 40;
    int exploiters = 16;
    int elites = 2;                   // kept unchanged in each population
    int migration_interval = 5;       // generations between exchanges of the best
    int max_generations = 5000;
    int stagnation_generations = 150;  // stop after this many without a better best
    double comm_weight = 0.1;         // per second of transfers, per device
    double balance_weight = 0.05;     // per second between the busiest and the mean device
    double overflow_penalty = 10.0;   // cost x (1 + penalty x overflow / total memory)
    int final_candidates = 3;         // compared at the end, besides the seeds
    double seed_budget_share = 0.25;  // of the time budget, for planning Baechi's three seeds
};

// A Baechi planner's placement and the step its own simulation gave it.
struct TgaSeed {
    Assignment placement;
    double step_s = 0;
};

class TgaPlanner final : public PlacementPlanner {
public:
    explicit TgaPlanner(TgaOptions options = {});

protected:
    CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                      std::vector<std::string>& log) const override;

    void begin() override { seeds_.reset(); }

private:
    // Baechi's placements, best simulated step first; planned once per plan().
    const std::vector<TgaSeed>& baechiSeeds(const PlacementModel& model, PlanContext& context, std::vector<std::string>& log) const;

    TgaOptions options_;
    mutable std::optional<std::vector<TgaSeed>> seeds_;
};

}  // namespace hippie::placement
