#include "planners/algorithms/placement/tga.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

#include "planners/algorithms/placement/list_scheduler.h"
#include "planners/algorithms/placement/m_etf.h"
#include "planners/algorithms/placement/m_sct.h"
#include "planners/algorithms/placement/m_topo.h"
#include "planners/algorithms/placement/step_estimate.h"

namespace hippie::placement {

namespace {

using Rng = std::mt19937_64;
using Genes = std::vector<int>;

// Explorers' mutation: probability of a block move and of a point mutation per child.
constexpr double kBlockMutationRate = 0.5;
constexpr double kPointMutationRate = 0.3;
// Exploiters' mutation: up to this many boundary moves per child, found among this many tries.
constexpr int kBoundaryMoves = 3;
constexpr int kBoundaryTries = 32;
// Share of the random initial splits that use every device (the others use 1..all).
constexpr double kAllDevicesShare = 0.5;
// Rounds of the explorers' repair (each moves ops off every overflowing device).
constexpr int kRepairRounds = 4;
// A generation improves on the best by at least this share, or counts towards stagnation.
constexpr double kImprovement = 1e-6;
// Distinct streams for the two populations from one seed (splitmix64's increment).
constexpr uint64_t kStreamStep = 0x9E3779B97F4A7C15ULL;

int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p; }

struct Score {
    double cost = std::numeric_limits<double>::infinity();
    double step_s = 0;
    int64_t overflow = 0;
};

struct Individual {
    Genes genes;
    Score score;
};

bool better(const Individual& a, const Individual& b) { return a.score.cost < b.score.cost; }

// Units by decreasing bottom level (a topological order: the list schedulers' priority), ties
// in topological order: the execution order of every individual.
std::vector<int> highestLevelFirst(const PlacementModel& m) {
    std::vector<double> key = bottomLevels(m);
    for (double& k : key) k = -k;
    return orderBy(m, key);
}

// The multi-dimensional cost: estimated step time, transfer time and load imbalance, with
// overflowing placements penalised.
class Fitness {
public:
    Fitness(const PlacementModel& m, const std::vector<int64_t>& capacity, const TgaOptions& o, std::vector<int> order)
        : m_(m), capacity_(capacity), o_(o), order_(std::move(order)) {
        for (int64_t c : capacity) total_capacity_ += static_cast<double>(c);
    }

    Score operator()(const Genes& g) const {
        const StepEstimate e = estimateStep(m_, g, order_);
        const double mean = std::accumulate(e.busy_s.begin(), e.busy_s.end(), 0.0) / static_cast<double>(e.busy_s.size());
        const double busiest = *std::max_element(e.busy_s.begin(), e.busy_s.end());
        Score s;
        s.step_s = e.step_s;
        s.cost = e.step_s + o_.comm_weight * e.comm_s / m_.devices() + o_.balance_weight * (busiest - mean);
        for (int64_t b : overflow(e.memory, capacity_)) s.overflow += b;
        if (s.overflow > 0) s.cost *= 1.0 + o_.overflow_penalty * static_cast<double>(s.overflow) / total_capacity_;
        return s;
    }

    const std::vector<int>& order() const { return order_; }

private:
    const PlacementModel& m_;
    const std::vector<int64_t>& capacity_;
    const TgaOptions& o_;
    std::vector<int> order_;
    double total_capacity_ = 0;
};

enum class Crossover { OnePoint, TwoPoint };
enum class Mutation { Block, Boundary };

struct Strategy {
    int size = 0;
    int tournament = 2;
    double crossover_rate = 0.9;
    Crossover crossover = Crossover::OnePoint;
    Mutation mutation = Mutation::Block;
    bool repair = true;  // else penalised only
};

// Explorers: weak selection (binary tournaments), frequent one-point crossover, block
// mutations, repaired. Exploiters: strong selection, less crossover, boundary moves,
// penalised.
Strategy explorerStrategy(const TgaOptions& o) { return {o.explorers, 2, 0.9, Crossover::OnePoint, Mutation::Block, true}; }
Strategy exploiterStrategy(const TgaOptions& o) { return {o.exploiters, 4, 0.6, Crossover::TwoPoint, Mutation::Boundary, false}; }

// Moves ops off overflowing devices, ops at a device boundary first, each to a neighbour's
// device with room, else to the device with the most room.
class Repairer {
public:
    Repairer(const PlacementModel& m, const std::vector<int64_t>& capacity, const std::vector<int>& order)
        : m_(m), capacity_(capacity), order_(order) {}

    void operator()(Genes& g, Rng& rng) const {
        for (int round = 0; round < kRepairRounds; ++round) {
            const auto loads = estimateStep(m_, g, order_).memory;
            if (fitsCapacity(loads, capacity_)) return;
            const auto over = overflow(loads, capacity_);
            std::vector<int64_t> room(loads.size());
            for (size_t d = 0; d < room.size(); ++d) room[d] = capacity_[d] - loads[d];
            for (size_t d = 0; d < over.size(); ++d)
                if (over[d] > 0) moveOff(g, static_cast<int>(d), over[d], room, rng);
        }
    }

private:
    void moveOff(Genes& g, int d, int64_t excess, std::vector<int64_t>& room, Rng& rng) const {
        std::vector<int> boundary, inner;
        for (int u = 0; u < m_.units(); ++u)
            if (g[static_cast<size_t>(u)] == d) (neighbourDevice(g, u, d, room, 0) >= 0 ? boundary : inner).push_back(u);
        std::shuffle(boundary.begin(), boundary.end(), rng);
        std::shuffle(inner.begin(), inner.end(), rng);
        boundary.insert(boundary.end(), inner.begin(), inner.end());
        for (int u : boundary) {
            if (excess <= 0) return;
            const int64_t bytes = m_.residentBytes(u);
            int to = neighbourDevice(g, u, d, room, bytes);
            if (to < 0) to = roomiest(room, d, bytes);
            if (to < 0) continue;
            g[static_cast<size_t>(u)] = to;
            room[static_cast<size_t>(to)] -= bytes;
            excess -= bytes;
        }
    }

    int neighbourDevice(const Genes& g, int u, int d, const std::vector<int64_t>& room, int64_t bytes) const {
        for (const auto* arcs : {&m_.preds(u), &m_.succs(u)})
            for (const Arc& a : *arcs) {
                const int e = g[static_cast<size_t>(a.unit)];
                if (e != d && room[static_cast<size_t>(e)] >= bytes) return e;
            }
        return -1;
    }

    static int roomiest(const std::vector<int64_t>& room, int d, int64_t bytes) {
        int best = -1;
        for (size_t e = 0; e < room.size(); ++e)
            if (static_cast<int>(e) != d && room[e] >= bytes && (best < 0 || room[e] > room[static_cast<size_t>(best)])) best = static_cast<int>(e);
        return best;
    }

    const PlacementModel& m_;
    const std::vector<int64_t>& capacity_;
    const std::vector<int>& order_;
};

// Random contiguous splits of the topological order over k devices, k mostly all of them:
// the structure good placements have, varied in where the cuts fall.
Genes contiguousSplit(const PlacementModel& m, Rng& rng) {
    const int n = m.units(), devices = m.devices();
    const int k = chance(rng, kAllDevicesShare) ? devices : uniform(rng, 1, devices);
    std::vector<int> cuts;
    for (int i = 1; i < k; ++i) cuts.push_back(uniform(rng, 0, n));
    std::sort(cuts.begin(), cuts.end());
    const int first = uniform(rng, 0, devices - k);
    Genes g(static_cast<size_t>(n));
    const auto& topo = m.topoOrder();
    size_t next = 0;
    for (int pos = 0; pos < n; ++pos) {
        while (next < cuts.size() && cuts[next] <= pos) ++next;
        g[static_cast<size_t>(topo[static_cast<size_t>(pos)])] = first + static_cast<int>(next);
    }
    return g;
}

class Population {
public:
    Population(Strategy s, const PlacementModel& m, const Fitness& f, const Repairer& r, int elites, uint64_t seed)
        : s_(s), m_(m), fitness_(f), repair_(r), elites_(elites), rng_(seed) {}

    void init(const std::vector<Genes>& seeds) {
        for (const Genes& g : seeds) add(g);
        while (static_cast<int>(members_.size()) < s_.size) add(contiguousSplit(m_, rng_));
        sort();
    }

    void evolve() {
        std::vector<Individual> next(members_.begin(), members_.begin() + std::min<size_t>(static_cast<size_t>(elites_), members_.size()));
        std::swap(next, members_);
        while (static_cast<int>(members_.size()) < s_.size) add(child(next));
        sort();
    }

    const Individual& best() const { return members_.front(); }
    const std::vector<Individual>& members() const { return members_; }

    void receive(const Individual& migrant) {
        members_.back() = migrant;
        sort();
    }

private:
    void add(Genes g) {
        if (s_.repair) repair_(g, rng_);
        Score sc = fitness_(g);
        members_.push_back({std::move(g), sc});
    }

    void sort() { std::stable_sort(members_.begin(), members_.end(), better); }

    const Individual& pick(const std::vector<Individual>& from) {
        const Individual* best = &from[static_cast<size_t>(uniform(rng_, 0, static_cast<int>(from.size()) - 1))];
        for (int i = 1; i < s_.tournament; ++i) {
            const Individual& c = from[static_cast<size_t>(uniform(rng_, 0, static_cast<int>(from.size()) - 1))];
            if (better(c, *best)) best = &c;
        }
        return *best;
    }

    Genes child(const std::vector<Individual>& parents) {
        Genes g = pick(parents).genes;
        if (chance(rng_, s_.crossover_rate)) cross(g, pick(parents).genes);
        mutate(g);
        return g;
    }

    // Positions [a, b) of the topological order come from the other parent.
    void cross(Genes& g, const Genes& other) {
        const int n = m_.units();
        int a = uniform(rng_, 0, n), b = n;
        if (s_.crossover == Crossover::TwoPoint) {
            b = uniform(rng_, 0, n);
            if (a > b) std::swap(a, b);
        }
        const auto& topo = m_.topoOrder();
        for (int pos = a; pos < b; ++pos) {
            const auto u = static_cast<size_t>(topo[static_cast<size_t>(pos)]);
            g[u] = other[u];
        }
    }

    void mutate(Genes& g) {
        if (s_.mutation == Mutation::Block) {
            if (chance(rng_, kBlockMutationRate)) blockMove(g);
            if (chance(rng_, kPointMutationRate)) g[static_cast<size_t>(uniform(rng_, 0, m_.units() - 1))] = uniform(rng_, 0, m_.devices() - 1);
        } else {
            const int moves = uniform(rng_, 1, kBoundaryMoves);
            for (int i = 0; i < moves; ++i) boundaryMove(g);
        }
    }

    void blockMove(Genes& g) {
        const int n = m_.units();
        const int length = uniform(rng_, 1, std::max(1, n / (2 * m_.devices())));
        const int start = uniform(rng_, 0, n - 1);
        const int d = uniform(rng_, 0, m_.devices() - 1);
        const auto& topo = m_.topoOrder();
        for (int pos = start; pos < std::min(n, start + length); ++pos) g[static_cast<size_t>(topo[static_cast<size_t>(pos)])] = d;
    }

    // An op next to another device joins it.
    void boundaryMove(Genes& g) {
        for (int tries = 0; tries < kBoundaryTries; ++tries) {
            const int u = uniform(rng_, 0, m_.units() - 1);
            const auto& arcs = chance(rng_, 0.5) ? m_.preds(u) : m_.succs(u);
            if (arcs.empty()) continue;
            const int d = g[static_cast<size_t>(arcs[static_cast<size_t>(uniform(rng_, 0, static_cast<int>(arcs.size()) - 1))].unit)];
            if (d == g[static_cast<size_t>(u)]) continue;
            g[static_cast<size_t>(u)] = d;
            return;
        }
    }

    Strategy s_;
    const PlacementModel& m_;
    const Fitness& fitness_;
    const Repairer& repair_;
    int elites_;
    Rng rng_;
    std::vector<Individual> members_;
};

// A placement plan of the problem's ops as an assignment of the model's units: a unit's
// device is its first op's (the placement planners place whole units), its order the plan's
// order with each unit at its first op.
Assignment unitAssignment(const PlacementModel& m, const Plan& plan) {
    Assignment a;
    a.device.resize(static_cast<size_t>(m.units()));
    for (int u = 0; u < m.units(); ++u) a.device[static_cast<size_t>(u)] = plan.placement[static_cast<size_t>(m.grouping().members[static_cast<size_t>(u)].front())];
    std::vector<bool> seen(static_cast<size_t>(m.units()), false);
    const std::vector<int> ops = plan.placement_order.empty() ? m.problem().graph.topologicalOrder() : plan.placement_order;
    for (int op : ops) {
        const int u = m.grouping().group_of[static_cast<size_t>(op)];
        if (!seen[static_cast<size_t>(u)]) a.order.push_back(u);
        seen[static_cast<size_t>(u)] = true;
    }
    return a;
}

}  // namespace

// Baechi's three placements (m-TOPO, m-ETF, m-SCT), planned as those planners plan them and
// simulated; the initial populations start from them as well as from random splits, so the
// search begins at the best of them. m-SCT's LP gets a share of TGA's budget (it falls back to
// m-ETF's placement when the LP runs out of time).
const std::vector<TgaSeed>& TgaPlanner::baechiSeeds(const PlacementModel& m, PlanContext& context, std::vector<std::string>& log) const {
    if (seeds_) return *seeds_;
    Problem p = m.problem();
    p.time_budget_s = std::max(0.0, m.problem().time_budget_s * options_.seed_budget_share);
    std::vector<TgaSeed> found;
    const PlacementOptions& o = options_.placement;
    const std::vector<std::unique_ptr<PlacementPlanner>> planners = [&] {
        std::vector<std::unique_ptr<PlacementPlanner>> v;
        v.push_back(std::make_unique<MTopoPlanner>(o));
        v.push_back(std::make_unique<MEtfPlanner>(o));
        v.push_back(std::make_unique<MSctPlanner>(o));
        return v;
    }();
    for (const auto& planner : planners) {
        if (context.shouldStop()) break;
        PlanContext sub(p.time_budget_s);
        const PlannerResult r = planner->plan(p, sub);
        if (!r.feasible || r.plan.placement.empty()) continue;
        log.push_back("tga: seed " + r.planner + ", simulated step " + std::to_string(r.metrics.iteration_time_s) + " s");
        found.push_back({unitAssignment(m, r.plan), r.metrics.iteration_time_s});
    }
    std::stable_sort(found.begin(), found.end(), [](const TgaSeed& a, const TgaSeed& b) { return a.step_s < b.step_s; });
    return seeds_.emplace(std::move(found));
}

namespace {

// The seeds (in their own order) and the best distinct individuals of both populations (in
// the fitness's order), re-estimated in their orders: the fastest that fits wins.
std::optional<Assignment> fastestEstimated(const PlacementModel& m, const std::vector<int64_t>& capacity, const std::vector<TgaSeed>& seeds,
                                           const std::vector<int>& order, const Population& a, const Population& b, int candidates,
                                           std::vector<std::string>& log) {
    std::vector<Individual> pool;
    for (const auto* p : {&a, &b}) pool.insert(pool.end(), p->members().begin(), p->members().end());
    std::stable_sort(pool.begin(), pool.end(), better);
    std::vector<Assignment> chosen;
    for (const TgaSeed& s : seeds) chosen.push_back(s.placement);
    for (const Individual& i : pool) {
        if (static_cast<int>(chosen.size()) >= candidates + static_cast<int>(seeds.size())) break;
        const bool known = std::any_of(chosen.begin(), chosen.end(), [&](const Assignment& c) { return c.device == i.genes; });
        if (!known) chosen.push_back({i.genes, order});
    }
    std::optional<Assignment> best;
    double best_s = std::numeric_limits<double>::infinity();
    for (Assignment& c : chosen) {
        const StepEstimate e = estimateStep(m, c.device, c.order);
        if (!fitsCapacity(e.memory, capacity) || e.step_s >= best_s) continue;
        best_s = e.step_s;
        best = std::move(c);
    }
    if (!best) return best;
    log.push_back("tga: chosen placement estimated at " + std::to_string(best_s) + " s");
    // The estimate tracks the simulator to a fraction of a percent, and where a search's best
    // and the best seed are that close it can rank them the other way: the simulator decides
    // between the two (the seed's step is its planner's simulation), so TGA never returns a
    // placement slower than the best of Baechi's.
    if (!seeds.empty() && best->device != seeds.front().placement.device) {
        const double found_s = simulatedStepSeconds(m, *best);
        if (seeds.front().step_s <= found_s) {
            log.push_back("tga: the best seed simulates at " + std::to_string(seeds.front().step_s) + " s, the search's best at " +
                          std::to_string(found_s) + " s: the seed is kept");
            return seeds.front().placement;
        }
    }
    return best;
}

}  // namespace

TgaPlanner::TgaPlanner(TgaOptions options)
    : PlacementPlanner("tga",
                       "two-population genetic algorithm: explorers and exploiters exchanging their best, fitness from "
                       "compute, communication and load balance; seeded, time-budgeted",
                       options.placement),
      options_(std::move(options)) {}

namespace {

// Generations until the time budget, the generation limit or stagnation; the best fitness of
// each generation.
std::vector<double> evolveBoth(Population& explorers, Population& exploiters, const TgaOptions& o, double budget_s, PlanContext& context) {
    std::vector<double> convergence;
    double best = std::numeric_limits<double>::infinity();
    int stagnant = 0;
    for (int generation = 0; generation < o.max_generations && !context.shouldStop() && stagnant < o.stagnation_generations; ++generation) {
        explorers.evolve();
        exploiters.evolve();
        if ((generation + 1) % o.migration_interval == 0) {
            const Individual from_explorers = explorers.best();
            explorers.receive(exploiters.best());
            exploiters.receive(from_explorers);
        }
        const double now = std::min(explorers.best().score.cost, exploiters.best().score.cost);
        convergence.push_back(now);
        stagnant = now < best * (1.0 - kImprovement) ? 0 : stagnant + 1;
        best = std::min(best, now);
        context.progress(0.05 + 0.85 * std::min(1.0, context.elapsedSeconds() / budget_s),
                         "generation " + std::to_string(generation) + ": best fitness " + std::to_string(best) + " s");
    }
    return convergence;
}

}  // namespace

CoreOutcome TgaPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                              std::vector<std::string>& log) const {
    const std::vector<TgaSeed>& seeds = baechiSeeds(model, context, log);
    std::vector<Genes> seed_genes;
    for (const TgaSeed& s : seeds) seed_genes.push_back(s.placement.device);
    // Every individual runs in the seed's start-time order, a good priority order for
    // placements near it; without a seed, highest bottom level first.
    const Fitness fitness(model, capacity, options_, seeds.empty() ? highestLevelFirst(model) : seeds.front().placement.order);
    const Repairer repairer(model, capacity, fitness.order());
    const uint64_t seed = model.problem().seed;
    Population explorers(explorerStrategy(options_), model, fitness, repairer, options_.elites, seed);
    Population exploiters(exploiterStrategy(options_), model, fitness, repairer, options_.elites, seed + kStreamStep);
    explorers.init(seed_genes);
    exploiters.init(seed_genes);
    std::vector<double> convergence = evolveBoth(explorers, exploiters, options_, model.problem().time_budget_s, context);
    log.push_back("tga: " + std::to_string(convergence.size()) + " generations, best fitness " +
                  (convergence.empty() ? std::string("-") : std::to_string(convergence.back())) + " s");
    auto chosen = fastestEstimated(model, capacity, seeds, fitness.order(), explorers, exploiters, options_.final_candidates, log);
    if (!chosen) return {std::nullopt, "no individual of either population fits memory", convergence, {}};
    return {std::move(chosen), {}, convergence, {}};
}

}  // namespace hippie::placement
