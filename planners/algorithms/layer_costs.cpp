#include "planners/algorithms/layer_costs.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "planners/common/error.h"

namespace hippie {

namespace {

// Bytes crossing each cut (after layer c): every producing op counts once, with its largest
// tensor to a layer beyond the cut.
std::vector<int64_t> cutBytes(const Graph& g, int layers) {
    std::vector<int64_t> cut(static_cast<size_t>(std::max(layers, 1)), 0);
    std::vector<std::vector<const Edge*>> out(g.ops.size());
    for (const Edge& e : g.edges) out[static_cast<size_t>(e.src)].push_back(&e);
    for (size_t op = 0; op < g.ops.size(); ++op) {
        const int from = g.ops[op].layer;
        for (int c = from; c < layers; ++c) {
            int64_t bytes = 0;
            for (const Edge* e : out[op])
                if (g.ops[static_cast<size_t>(e->dst)].layer > c) bytes = std::max(bytes, e->bytes);
            if (bytes == 0) break;  // no tensor reaches beyond this cut, nor beyond later ones
            cut[static_cast<size_t>(c)] += bytes;
        }
    }
    return cut;
}

int64_t share(int64_t bytes, double fraction) {
    return fraction >= 1.0 ? bytes : static_cast<int64_t>(std::llround(static_cast<double>(bytes) * fraction));
}

template <class T>
std::vector<T> prefix(const std::vector<T>& v) {
    std::vector<T> p(v.size() + 1, T{});
    for (size_t i = 0; i < v.size(); ++i) p[i + 1] = p[i] + v[i];
    return p;
}

}  // namespace

Graph tensorParallelRankGraph(const Graph& graph, TensorSplit split) {
    if (split.tp <= 1) return graph;
    Graph g = graph;
    for (size_t i = 0; i < g.ops.size(); ++i) {
        Op& o = g.ops[i];
        const double f = rankShare(o, split);
        o.fwd_flops *= f;
        o.bwd_flops *= f;
        if (o.fwd_time_s) *o.fwd_time_s *= f;
        if (o.bwd_time_s) *o.bwd_time_s *= f;
        o.moved_bytes = share(o.moved_bytes, f);
        o.output_bytes = share(o.output_bytes, f);
        o.temp_bytes = share(o.temp_bytes, f);
        o.param_bytes = rankParamBytes(graph, split, static_cast<int>(i));
    }
    for (Edge& e : g.edges) e.bytes = share(e.bytes, sentShare(graph.ops[static_cast<size_t>(e.src)], split));
    for (Op& o : g.ops) o.tensor_parallel = TensorParallel::Replicated;
    g.tensor_parallel_divisor = 1;
    return g;
}

LayerCosts::LayerCosts(const Problem& problem)
    : problem_(problem), cost_(problem.graph, problem.cluster) {
    const Graph& g = problem.graph;
    if (g.ops.empty()) throw Error("the model has no operators to plan");
    if (problem.cluster.deviceCount() < 1) throw Error("the cluster has no devices to plan for");
    layers_ = g.layers();
    const size_t n = layers_.size();
    std::vector<double> fwd_bwd(n, 0.0);
    std::vector<int64_t> params(n, 0), acts(n, 0), rank_params(n, 0);
    layer_offset_.push_back(0);
    for (size_t l = 0; l < n; ++l) {
        const Layer& layer = layers_[l];
        ops_by_layer_.insert(ops_by_layer_.end(), layer.ops.begin(), layer.ops.end());
        layer_offset_.push_back(ops_by_layer_.size());
        fwd_bwd[l] = cost_.fwdTime(layer.ops, 1.0, 0) + cost_.bwdTime(layer.ops, 1.0, 0);
        params[l] = layer.param_bytes;
        for (int op : layer.ops) rank_params[l] += cost_.rankParamBytes(op);
        acts[l] = layer.activation_bytes;
    }
    fwd_bwd_s_ = fwd_bwd;
    time_prefix_ = prefix(fwd_bwd);
    param_prefix_ = prefix(params);
    rank_param_prefix_ = prefix(rank_params);
    activation_prefix_ = prefix(acts);
    cut_bytes_ = cutBytes(g, static_cast<int>(n));
}

std::vector<double> LayerCosts::computePerLayer(double samples) const {
    std::vector<double> out(fwd_bwd_s_);
    for (double& t : out) t *= samples;
    return out;
}

double LayerCosts::computeSeconds(int first, int last, double samples) const {
    return (time_prefix_[static_cast<size_t>(last) + 1] - time_prefix_[static_cast<size_t>(first)]) * samples;
}

std::vector<double> LayerCosts::paramBytesPerLayer() const {
    std::vector<double> out;
    for (const Layer& l : layers_) out.push_back(static_cast<double>(l.param_bytes));
    return out;
}

int64_t LayerCosts::paramBytes(int first, int last) const {
    return param_prefix_[static_cast<size_t>(last) + 1] - param_prefix_[static_cast<size_t>(first)];
}

std::span<const int> LayerCosts::ops(int first, int last) const {
    assert(first >= 0 && first <= last && last < layers());
    const size_t a = layer_offset_[static_cast<size_t>(first)], b = layer_offset_[static_cast<size_t>(last) + 1];
    return std::span<const int>(ops_by_layer_).subspan(a, b - a);
}

int64_t LayerCosts::zeroGatheredBytes(int first, int last) const {
    int64_t most = 0;
    for (int l = first; l <= last; ++l) most = std::max(most, paramBytes(l, std::min(l + 1, last)));
    return most;
}

int64_t LayerCosts::staticBytes(int first, int last, int dp, int zero) const {
    const int64_t gathered = zero >= 3 && dp > 1 ? zeroGatheredBytes(first, last) : 0;
    // cost_.staticMemory(ops(first, last), ...) with the parameters summed by layer beforehand:
    // the pipeline searches ask for thousands of ranges.
    const int64_t params = rank_param_prefix_[static_cast<size_t>(last) + 1] - rank_param_prefix_[static_cast<size_t>(first)];
    return cost_.staticMemoryOfParams(params, problem_.optimizer, dp, Plan{}.bucket_bytes, 0, zero, gathered).total();
}

int64_t LayerCosts::layerStateBytes(int layer) const { return staticBytes(layer, layer, 1); }

int64_t LayerCosts::stashBytes(int first, int last, double samples) const {
    int64_t temp = 0;
    for (int l = first; l <= last; ++l) temp = std::max(temp, layers_[static_cast<size_t>(l)].temp_bytes);
    const int64_t kept = activation_prefix_[static_cast<size_t>(last) + 1] - activation_prefix_[static_cast<size_t>(first)];
    return scaled(kept + layers_[static_cast<size_t>(first)].input_bytes + temp, samples);
}

int64_t LayerCosts::activationBytes(int layer, double samples) const {
    return scaled(layers_[static_cast<size_t>(layer)].activation_bytes, samples);
}

int64_t LayerCosts::boundaryBytes(int last, double samples) const {
    if (last < 0 || last + 1 >= layers()) return 0;
    return scaled(cut_bytes_[static_cast<size_t>(last)], samples);
}

}  // namespace hippie
