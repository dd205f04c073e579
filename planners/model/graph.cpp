#include "planners/model/graph.h"

#include <algorithm>
#include <queue>

#include "planners/common/error.h"

namespace hippie {

const char* toString(TensorParallel t) {
    switch (t) {
    case TensorParallel::Replicated: return "replicated";
    case TensorParallel::Column: return "column";
    case TensorParallel::Row: return "row";
    }
    return "replicated";
}

const char* toString(Precision p) {
    switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::FP16: return "fp16";
    case Precision::BF16: return "bf16";
    }
    return "fp32";
}

Precision precisionFromString(const std::string& s) {
    if (s == "fp32") return Precision::FP32;
    if (s == "fp16") return Precision::FP16;
    if (s == "bf16") return Precision::BF16;
    throw Error("unknown precision '" + s + "' (use fp32, fp16 or bf16)");
}

int64_t activationElementBytes(Precision p) { return p == Precision::FP32 ? 4 : 2; }

bool isMixed(Precision p) { return p != Precision::FP32; }

int Graph::layerCount() const {
    int n = 0;
    for (const Op& op : ops) n = std::max(n, op.layer + 1);
    return n;
}

std::vector<Layer> Graph::layers() const {
    std::vector<Layer> out(static_cast<size_t>(layerCount()));
    for (size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
    std::vector<bool> all_fwd_timed(out.size(), true), all_bwd_timed(out.size(), true);
    for (size_t id = 0; id < ops.size(); ++id) {
        const Op& op = ops[id];
        Layer& l = out[static_cast<size_t>(op.layer)];
        if (l.ops.empty()) {
            // A layer is named after its first op's prefix ("block3.attn" -> "block3").
            l.name = op.name.substr(0, op.name.find('.'));
        }
        l.ops.push_back(static_cast<int>(id));
        l.fwd_flops += op.fwd_flops;
        l.bwd_flops += op.bwd_flops;
        l.param_bytes += op.param_bytes;
        l.activation_bytes += op.keptBytes();
        l.temp_bytes = std::max(l.temp_bytes, op.temp_bytes);
        all_fwd_timed[static_cast<size_t>(op.layer)] = all_fwd_timed[static_cast<size_t>(op.layer)] && op.fwd_time_s.has_value();
        all_bwd_timed[static_cast<size_t>(op.layer)] = all_bwd_timed[static_cast<size_t>(op.layer)] && op.bwd_time_s.has_value();
        if (op.fwd_time_s) l.fwd_time_s = l.fwd_time_s.value_or(0) + *op.fwd_time_s;
        if (op.bwd_time_s) l.bwd_time_s = l.bwd_time_s.value_or(0) + *op.bwd_time_s;
    }
    for (size_t i = 0; i < out.size(); ++i) {
        if (!all_fwd_timed[i] || out[i].ops.empty()) out[i].fwd_time_s.reset();
        if (!all_bwd_timed[i] || out[i].ops.empty()) out[i].bwd_time_s.reset();
        if (out[i].name.empty()) out[i].name = "layer" + std::to_string(i);
    }
    for (const Edge& e : edges) {
        const int ls = ops[static_cast<size_t>(e.src)].layer;
        const int ld = ops[static_cast<size_t>(e.dst)].layer;
        if (ls == ld) continue;
        out[static_cast<size_t>(ls)].output_bytes += e.bytes;
        out[static_cast<size_t>(ld)].input_bytes += e.bytes;
    }
    return out;
}

std::vector<bool> Graph::readByAnotherLayer() const {
    std::vector<bool> out(ops.size(), false);
    for (const Edge& e : edges)
        if (ops[static_cast<size_t>(e.src)].layer != ops[static_cast<size_t>(e.dst)].layer) out[static_cast<size_t>(e.src)] = true;
    return out;
}

std::vector<int> Graph::topologicalOrder() const {
    const size_t n = ops.size();
    std::vector<int> indegree(n, 0);
    std::vector<std::vector<int>> out(n);
    for (const Edge& e : edges) {
        out[static_cast<size_t>(e.src)].push_back(e.dst);
        ++indegree[static_cast<size_t>(e.dst)];
    }
    // Smallest id first, so the order is deterministic and follows the builders' order.
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (indegree[i] == 0) ready.push(static_cast<int>(i));
    std::vector<int> order;
    order.reserve(n);
    while (!ready.empty()) {
        const int v = ready.top();
        ready.pop();
        order.push_back(v);
        for (int w : out[static_cast<size_t>(v)])
            if (--indegree[static_cast<size_t>(w)] == 0) ready.push(w);
    }
    if (order.size() != n) {
        for (size_t i = 0; i < n; ++i)
            if (indegree[i] > 0)
                throw Error("graph '" + name + "' has a cycle through op " + std::to_string(i) + " ('" + ops[i].name + "')");
    }
    return order;
}

double Graph::totalFwdFlops() const {
    double s = 0;
    for (const Op& op : ops) s += op.fwd_flops;
    return s;
}

double Graph::totalBwdFlops() const {
    double s = 0;
    for (const Op& op : ops) s += op.bwd_flops;
    return s;
}

int64_t Graph::totalParamBytes() const {
    int64_t s = 0;
    for (const Op& op : ops) s += op.param_bytes;
    return s;
}

int64_t Graph::paramCount() const { return totalParamBytes() / activationElementBytes(source.precision); }

bool Graph::tensorParallelFits(int tp) const {
    if (tp == 1) return true;
    if (tp < 1 || tensor_parallel_divisor % tp != 0) return false;
    for (const Op& op : ops)
        if (op.tensor_parallel != TensorParallel::Replicated) return true;
    return false;
}

namespace {

bool readsOwnOutput(const std::string& kind) { return kind == "softmax" || kind == "relu" || kind == "tanh" || kind == "sigmoid"; }

bool gradientReadsNoInput(const std::string& kind) {
    return kind == "add" || kind == "concat" || kind == "dropout" || kind == "avgpool" || kind == "embedding" || readsOwnOutput(kind);
}

}  // namespace

void markKeptOutputs(Graph& graph) {
    std::vector<bool> read(graph.ops.size(), false), consumed(graph.ops.size(), false);
    for (const Edge& e : graph.edges) {
        const auto src = static_cast<size_t>(e.src);
        consumed[src] = true;
        if (!gradientReadsNoInput(graph.ops[static_cast<size_t>(e.dst)].kind)) read[src] = true;
    }
    for (size_t i = 0; i < graph.ops.size(); ++i)
        graph.ops[i].output_kept = readsOwnOutput(graph.ops[i].kind) || read[i] || !consumed[i];
}

}  // namespace hippie
