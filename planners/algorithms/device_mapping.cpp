#include "planners/algorithms/device_mapping.h"

#include <algorithm>
#include <map>

#include "planners/algorithms/pipeline_search.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"

namespace hippie {

namespace {

// The estimate ignores overlap with compute and where a slow link sits in the pipeline, so a
// layout must save more than this share of the default layout's estimate to replace it.
constexpr double kMinRelativeSaving = 0.01;

// What a plan moves, by pipeline position: per micro-batch activation bytes between two
// positions (their gradients flow back the same way) and each position's gradient bytes.
struct Traffic {
    std::vector<std::tuple<int, int, int64_t>> p2p;  // (from position, to position, bytes per micro-batch)
    std::vector<int64_t> gradient_bytes;             // per position, all-reduced once per iteration
};

Traffic measureTraffic(const Problem& problem, const Plan& plan, const CostModel& cost) {
    const Graph& g = problem.graph;
    const int pp = plan.pipelineDepth();
    std::vector<int> position_of_layer(static_cast<size_t>(g.layerCount()), 0);
    for (size_t s = 0; s < plan.stages.size(); ++s)
        for (int l = plan.stages[s].first_layer; l <= plan.stages[s].last_layer; ++l)
            position_of_layer[static_cast<size_t>(l)] = static_cast<int>(s) % pp;
    auto position = [&](int op) { return position_of_layer[static_cast<size_t>(g.ops[static_cast<size_t>(op)].layer)]; };

    Traffic t;
    t.gradient_bytes.assign(static_cast<size_t>(pp), 0);
    // One tensor-parallel rank's gradients: its data-parallel group reduces those.
    for (size_t op = 0; op < g.ops.size(); ++op)
        t.gradient_bytes[static_cast<size_t>(position(static_cast<int>(op)))] += cost.rankParamBytes(static_cast<int>(op));
    std::map<std::pair<int, int>, int64_t> tensor;  // (producing op, consuming position): one tensor each
    for (const Edge& e : g.edges)
        if (position(e.src) != position(e.dst)) tensor[{e.src, position(e.dst)}] = std::max(tensor[{e.src, position(e.dst)}], e.bytes);
    std::map<std::pair<int, int>, int64_t> between;
    for (const auto& [key, bytes] : tensor) between[{position(key.first), key.second}] += bytes;
    for (const auto& [key, bytes] : between) t.p2p.emplace_back(key.first, key.second, cost.scaled(bytes, plan.microBatchSize()));
    return t;
}

// A layout: the devices are filled tile by tile; a tile holds `ts` consecutive stages of `tr`
// consecutive replicas. Tiles of a whole pipeline (ts = pp, tr = 1) give the default map;
// tiles of a whole stage (ts = 1, tr = dp) put each stage's replicas side by side.
struct Layout {
    int ts = 1, tr = 1;
    bool replica_tiles_outer = true;  // tile order: a pipeline's tiles first, or a stage's
    bool stages_inner = true;         // inside a tile: consecutive stages first, or replicas
};

std::vector<std::vector<int>> applyLayout(const Layout& l, int pp, int dp, const std::vector<int>& devices) {
    std::vector<std::vector<int>> map(static_cast<size_t>(pp), std::vector<int>(static_cast<size_t>(dp)));
    const int tiles_s = pp / l.ts, tiles_r = dp / l.tr;
    for (int s = 0; s < pp; ++s) {
        for (int r = 0; r < dp; ++r) {
            const int tile = l.replica_tiles_outer ? (r / l.tr) * tiles_s + s / l.ts : (s / l.ts) * tiles_r + r / l.tr;
            const int inner = l.stages_inner ? (r % l.tr) * l.ts + s % l.ts : (s % l.ts) * l.tr + r % l.tr;
            map[static_cast<size_t>(s)][static_cast<size_t>(r)] = devices[static_cast<size_t>(tile * l.ts * l.tr + inner)];
        }
    }
    return map;
}

// The default map's layout first: the one kept unless another saves enough.
std::vector<Layout> candidateLayouts(int pp, int dp) {
    std::vector<Layout> out{{pp, 1, true, true}};
    for (int ts : divisorsOf(pp))
        for (int tr : divisorsOf(dp))
            for (bool outer : {true, false})
                for (bool inner : {true, false}) out.push_back({ts, tr, outer, inner});
    return out;
}

// Estimated communication seconds per iteration: the slowest pipeline's point-to-point
// traffic (each micro-batch's activations forward and gradients back) plus the slowest
// stage's gradient all-reduce.
double communicationSeconds(const std::vector<std::vector<int>>& map, const Traffic& t, int micro_batches, const CostModel& cost) {
    const size_t dp = map.front().size();
    double p2p = 0;
    for (size_t r = 0; r < dp; ++r) {
        double pipeline = 0;
        for (const auto& [a, b, bytes] : t.p2p)
            pipeline += 2.0 * micro_batches * cost.p2pTime(bytes, map[static_cast<size_t>(a)][r], map[static_cast<size_t>(b)][r]);
        p2p = std::max(p2p, pipeline);
    }
    double reduce = 0;
    for (size_t s = 0; s < map.size(); ++s) reduce = std::max(reduce, cost.allReduceTime(t.gradient_bytes[s], map[s]));
    return p2p + reduce;
}

// Each (stage, replica) cell of a block map stands for the tensor-parallel group on devices
// block .. block + tp - 1: rank k of it goes to device block + k.
std::vector<std::vector<int>> expandTensorParallel(const std::vector<std::vector<int>>& block_map, int tp) {
    std::vector<std::vector<int>> map;
    for (const auto& row : block_map) {
        std::vector<int> ranks;
        for (int first : row)
            for (int k = 0; k < tp; ++k) ranks.push_back(first + k);
        map.push_back(std::move(ranks));
    }
    return map;
}

}  // namespace

std::vector<std::vector<int>> mapDevices(const Problem& problem, const Plan& plan) {
    const int pp = plan.pipelineDepth(), dp = plan.dp, tp = plan.tp;
    const int available = problem.cluster.deviceCount();
    if (plan.isPlacement() || pp < 1 || dp < 1 || tp < 1)
        throw Error("device mapping needs a pipeline plan with stages, dp >= 1 and tp >= 1");
    if (static_cast<int64_t>(pp) * dp * tp > available)
        throw Error("the plan needs " + std::to_string(static_cast<int64_t>(pp) * dp * tp) + " devices (pp " + std::to_string(pp) +
                    " x dp " + std::to_string(dp) + (tp > 1 ? " x tp " + std::to_string(tp) : std::string()) + ") but cluster '" +
                    problem.cluster.name + "' has " + std::to_string(available));
    // Devices are numbered node by node, so the first pp * dp * tp fill whole nodes first.
    // Tensor-parallel groups are placed first, as blocks of tp consecutive devices (inside one
    // node whenever tp divides the node's devices: their all-reduces are on the critical
    // path); the layouts below arrange the blocks, each represented by its first device.
    std::vector<int> devices(static_cast<size_t>(pp * dp));
    for (int b = 0; b < pp * dp; ++b) devices[static_cast<size_t>(b)] = b * tp;

    const CostModel cost(problem.graph, problem.cluster, TensorSplit{tp, plan.sequence_parallel});
    const Traffic traffic = measureTraffic(problem, plan, cost);
    const auto layouts = candidateLayouts(pp, dp);
    auto fallback = applyLayout(layouts.front(), pp, dp, devices);
    const double fallback_s = communicationSeconds(fallback, traffic, plan.micro_batches, cost);
    std::vector<std::vector<int>> best;
    double best_s = fallback_s * (1.0 - kMinRelativeSaving);
    for (const Layout& l : layouts) {
        auto map = applyLayout(l, pp, dp, devices);
        const double s = communicationSeconds(map, traffic, plan.micro_batches, cost);
        if (s < best_s) {
            best = std::move(map);
            best_s = s;
        }
    }
    return expandTensorParallel(best.empty() ? fallback : best, tp);
}

}  // namespace hippie
