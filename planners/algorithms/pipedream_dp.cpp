#include "planners/algorithms/pipedream_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

namespace hippie {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One level of the program: its workers (GPUs of a node, or nodes) and what a stage costs.
struct LevelInputs {
    int layers = 0;
    int workers = 0;
    int fixed_replicas = 0;         // 0: any
    int replicas_divide = 0;        // nonzero: replica counts divide it
    bool first_layer_only = false;  // the top level only needs pipelines starting at layer 0
    std::function<double(int first, int last, int replicas)> stage_s;
    // Memory with `used` workers up to and including the stage (earlier stages and itself).
    std::function<bool(int first, int last, int replicas, int used)> fits;
    std::function<double(int cut, int replicas)> transfer_s;  // across the cut after layer `cut`
};

class LevelTable {
public:
    explicit LevelTable(const LevelInputs& in) : layers_(in.layers), workers_(in.workers), in_(in) {
        cells_.resize(static_cast<size_t>(layers_ * layers_ * workers_));
        stage_s_.assign(static_cast<size_t>(layers_ * layers_ * workers_), kInf);
        for (int i = 0; i < layers_; ++i)
            for (int j = i; j < layers_; ++j)
                for (int r = 1; r <= workers_; ++r)
                    if (allowed(r)) stage_s_[index(i, j, r)] = in.stage_s(i, j, r);
        const int starts = in.first_layer_only ? 1 : layers_;
        for (int i = 0; i < starts; ++i) solveFrom(i);
    }

    // A(i->j, m): the slowest stage of the best pipeline on at most m workers (inf: none fits).
    double time(int i, int j, int m) const { return cells_[index(i, j, m)].t; }

    // The stages of that pipeline; replicas count this level's workers.
    std::vector<PipeDreamStage> stages(int i, int j, int m) const {
        const Cell& c = cells_[index(i, j, m)];
        if (c.kind == Kind::None) return {};
        if (c.kind == Kind::Single) return {{i, j, c.replicas, {}}};
        auto out = stages(i, c.cut, c.prefix_workers);
        out.push_back({c.cut + 1, j, c.replicas, {}});
        return out;
    }

private:
    enum class Kind { None, Single, Split };
    struct Cell {
        double t = kInf;
        Kind kind = Kind::None;
        int cut = -1;            // Split: last layer of the prefix pipeline
        int prefix_workers = 0;  // Split: workers the prefix may use
        int replicas = 0;        // of the single stage, or of the last stage after the cut
    };

    size_t index(int i, int j, int m) const { return static_cast<size_t>((i * layers_ + j) * workers_ + (m - 1)); }
    bool allowed(int r) const {
        if (in_.fixed_replicas != 0) return r == in_.fixed_replicas;
        return in_.replicas_divide == 0 || in_.replicas_divide % r == 0;
    }

    void solveFrom(int i) {
        for (int j = i; j < layers_; ++j)
            for (int m = 1; m <= workers_; ++m) cells_[index(i, j, m)] = best(i, j, m);
    }

    // Fewer workers first, so that ties keep the smaller pipeline.
    Cell best(int i, int j, int m) const {
        Cell b = m > 1 ? cells_[index(i, j, m - 1)] : Cell{};
        for (int r = 1; r <= m; ++r) {
            const double t = stage_s_[index(i, j, r)];
            if (t < b.t && in_.fits(i, j, r, r)) b = {t, Kind::Single, -1, 0, r};
        }
        for (int k = i; k < j; ++k) {
            for (int r = 1; r < m; ++r) {
                const double prefix = cells_[index(i, k, m - r)].t;
                const double last = stage_s_[index(k + 1, j, r)];
                if (prefix >= b.t || last >= b.t) continue;  // cannot improve (also skips inf)
                const double t = std::max({prefix, last, in_.transfer_s(k, r)});
                if (t < b.t && in_.fits(k + 1, j, r, m)) b = {t, Kind::Split, k, m - r, r};
            }
        }
        return b;
    }

    int layers_, workers_;
    const LevelInputs& in_;
    std::vector<Cell> cells_;
    std::vector<double> stage_s_;
};

// The shared pieces of both levels' inputs.
class Model {
public:
    Model(const Problem& problem, const LayerCosts& costs, const PipeDreamOptions& options)
        : problem_(problem), costs_(costs), options_(options), capacity_(smallestCapacityBytes(problem)),
          batch_(static_cast<double>(problem.global_batch)) {}

    const LayerCosts& costs() const { return costs_; }
    double batch() const { return batch_; }

    // Model states plus the micro-batches in flight: one for itself and, as PipeDream's
    // optimizer estimates it, one per `replicas` workers downstream.
    bool fits(int first, int last, int replicas, int used_gpus) const {
        const int downstream = std::max(0, problem_.cluster.deviceCount() - used_gpus);
        const int64_t in_flight = 1 + (downstream + replicas - 1) / replicas;
        const int64_t bytes = costs_.staticBytes(first, last, replicas) + in_flight * costs_.stashBytes(first, last, options_.micro_batch_size);
        return bytes <= capacity_;
    }

    // Activations forward and their gradients back across the cut, for the batch's samples
    // split over `replicas` receiving workers, one micro-batch at a time over link a-b.
    double transfer(int cut, int replicas, int a, int b) const {
        const double micro_batches = batch_ / (replicas * options_.micro_batch_size);
        return 2.0 * micro_batches * costs_.cost().p2pTime(costs_.boundaryBytes(cut, options_.micro_batch_size), a, b);
    }

    double allReduce(int64_t bytes, const std::vector<int>& group) const { return costs_.cost().allReduceTime(bytes, group); }

private:
    const Problem& problem_;
    const LayerCosts& costs_;
    const PipeDreamOptions& options_;
    int64_t capacity_;
    double batch_;
};

std::vector<int> firstDevices(int count, const std::function<int(int)>& device) {
    std::vector<int> out;
    for (int x = 0; x < count; ++x) out.push_back(device(x));
    return out;
}

// GPUs of node 0 (or of the whole cluster when the program is flat).
LevelInputs gpuLevel(const Model& model, int gpus, bool top, int fixed, int divide) {
    LevelInputs in;
    in.layers = model.costs().layers();
    in.workers = gpus;
    in.fixed_replicas = fixed;
    in.replicas_divide = divide;
    in.first_layer_only = top;
    in.stage_s = [&model](int i, int j, int r) {
        const std::vector<int> group = firstDevices(r, [](int x) { return x; });
        return model.costs().computeSeconds(i, j, model.batch()) / r + model.allReduce(model.costs().paramBytes(i, j), group);
    };
    in.fits = [&model](int i, int j, int r, int used) { return model.fits(i, j, r, used); };
    in.transfer_s = [&model, gpus](int cut, int r) { return gpus > 1 ? model.transfer(cut, r, 0, 1) : 0.0; };
    return in;
}

// Whole nodes running the node-level optimum of a layer range; each stage's weights are
// spread over the node's GPUs, which all-reduce their shares across nodes in parallel.
LevelInputs nodeLevel(const Model& model, const Cluster& cluster, const LevelTable& gpus, int fixed, int divide) {
    LevelInputs in;
    const int per_node = cluster.nodes.front().devices;
    in.layers = model.costs().layers();
    in.workers = static_cast<int>(cluster.nodes.size());
    in.fixed_replicas = fixed;
    in.replicas_divide = divide;
    in.first_layer_only = true;
    in.stage_s = [&model, &cluster, &gpus, per_node](int i, int j, int r) {
        const std::vector<int> group = firstDevices(r, [&cluster](int node) { return cluster.firstDeviceOf(node); });
        return gpus.time(i, j, per_node) / r + model.allReduce(model.costs().paramBytes(i, j) / per_node, group);
    };
    in.fits = [](int, int, int, int) { return true; };  // checked per GPU inside the node
    in.transfer_s = [&model, &cluster](int cut, int r) { return model.transfer(cut, r, cluster.firstDeviceOf(0), cluster.firstDeviceOf(1)); };
    return in;
}

PipeDreamConfig config(double t, std::vector<PipeDreamStage> stages) {
    PipeDreamConfig c;
    if (std::isfinite(t) && !stages.empty()) {
        c.slowest_stage_s = t;
        c.stages = std::move(stages);
    }
    return c;
}

}  // namespace

bool PipeDreamConfig::uniformReplication() const {
    for (const PipeDreamStage& s : stages)
        if (s.replicas != stages.front().replicas) return false;
    return true;
}

std::string PipeDreamConfig::str() const {
    if (!found()) return "no configuration fits";
    std::string s;
    for (const PipeDreamStage& st : stages)
        s += (s.empty() ? "" : " | ") + std::to_string(st.first_layer) + "-" + std::to_string(st.last_layer) + " x" + std::to_string(st.replicas);
    char t[64];
    std::snprintf(t, sizeof t, "%.4g", slowest_stage_s);
    return s + " (slowest stage " + t + " s per iteration)";
}

bool pipeDreamHierarchical(const Cluster& cluster) {
    if (cluster.nodes.size() < 2) return false;
    for (const Node& n : cluster.nodes)
        if (n.devices != cluster.nodes.front().devices) return false;
    return true;
}

PipeDreamConfig solvePipeDream(const Problem& problem, const LayerCosts& costs, const PipeDreamOptions& options) {
    const Cluster& cluster = problem.cluster;
    const Model model(problem, costs, options);
    const int last = costs.layers() - 1;
    if (!pipeDreamHierarchical(cluster)) {
        const int gpus = cluster.deviceCount();
        const LevelInputs in = gpuLevel(model, gpus, true, options.gpus_per_stage, options.replicas_divide);
        const LevelTable table(in);
        std::vector<PipeDreamStage> stages = table.stages(0, last, gpus);
        int next = 0;
        for (PipeDreamStage& s : stages)
            for (int r = 0; r < s.replicas; ++r) s.devices.push_back(next++);
        return config(table.time(0, last, gpus), std::move(stages));
    }
    const int per_node = cluster.nodes.front().devices, nodes = static_cast<int>(cluster.nodes.size());
    const LevelInputs gpu_in = gpuLevel(model, per_node, false, options.gpus_per_stage, options.replicas_divide);
    const LevelTable gpus(gpu_in);
    const LevelInputs node_in = nodeLevel(model, cluster, gpus, options.nodes_per_stage, options.replicas_divide);
    const LevelTable top(node_in);
    std::vector<PipeDreamStage> stages;
    int first_node = 0;
    for (const PipeDreamStage& ns : top.stages(0, last, nodes)) {
        int first_gpu = 0;  // within each of the stage's nodes
        for (PipeDreamStage s : gpus.stages(ns.first_layer, ns.last_layer, per_node)) {
            // Node-interleaved (GPU g of every node, then g + 1): micro-batch m meets replica
            // m mod r of each stage, on node m mod (the nodes), the same node for every stage of
            // this node-level stage, so its activations stay inside the node.
            for (int g = 0; g < s.replicas; ++g)
                for (int n = first_node; n < first_node + ns.replicas; ++n) s.devices.push_back(cluster.firstDeviceOf(n) + first_gpu + g);
            first_gpu += s.replicas;
            s.replicas *= ns.replicas;
            stages.push_back(s);
        }
        first_node += ns.replicas;
    }
    return config(top.time(0, last, nodes), std::move(stages));
}

}  // namespace hippie
