#include "planners/model/graph_json.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "planners/common/checked.h"
#include "planners/common/error.h"
#include "planners/common/json_read.h"
#include "planners/model/overrides_json.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"

namespace hippie {

using nlohmann::json;
using namespace json_read;

namespace {

constexpr const char* kFormat = "hippie-graph";
// Version 2 adds source.overrides; a graph without them is still written as version 1.
constexpr int kVersion = 2;

// ---- writing ----

json modelSpecToJson(const ModelSpec& s) {
    json j = {{"zoo", s.zoo}, {"file", s.file}, {"batch_size", s.batch_size}, {"seq_len", s.seq_len},
              {"precision", toString(s.precision)}};
    writeOverrides(j, s);
    return j;
}

json opToJson(const Op& op, size_t id) {
    json j = {{"id", id},
              {"name", op.name},
              {"kind", op.kind},
              {"layer", op.layer},
              {"fwd_flops", op.fwd_flops},
              {"bwd_flops", op.bwd_flops},
              {"param_bytes", op.param_bytes},
              {"output_bytes", op.output_bytes},
              {"temp_bytes", op.temp_bytes}};
    if (op.moved_bytes > 0) j["moved_bytes"] = op.moved_bytes;  // optional: 0 (unknown) when absent
    if (op.fwd_time_s) j["fwd_time_s"] = *op.fwd_time_s;
    if (op.bwd_time_s) j["bwd_time_s"] = *op.bwd_time_s;
    if (op.tensor_parallel != TensorParallel::Replicated) j["tensor_parallel"] = toString(op.tensor_parallel);  // optional
    if (!op.output_kept) j["kept"] = false;  // optional: kept when absent
    if (op.saved_bytes > 0) j["saved_bytes"] = op.saved_bytes;  // optional: 0 when absent
    return j;
}

// ---- reading ----

Precision readPrecision(const json& j, const std::string& where, Precision fallback) {
    const std::optional<std::string> s = optionalString(j, "precision", where);
    if (!s) return fallback;
    try {
        return precisionFromString(*s);
    } catch (const Error& e) {
        failField(where, "precision", std::string("is invalid: ") + e.what());
    }
}

ModelSpec readSource(const json& j, const std::string& where, int batch_size, Precision precision) {
    ModelSpec s;
    s.batch_size = batch_size;
    s.precision = precision;
    const json* src = optionalObject(j, "source", where);
    if (!src) return s;
    const std::string w = at(where, "source");
    requireKnownFields(*src, {"zoo", "file", "batch_size", "seq_len", "precision", "overrides"}, w);
    s.zoo = optionalString(*src, "zoo", w).value_or("");
    s.file = optionalString(*src, "file", w).value_or("");
    s.batch_size = optionalInt(*src, "batch_size", w, Bound::Positive).value_or(batch_size);
    if (s.batch_size != batch_size)
        failField(w, "batch_size", "is " + std::to_string(s.batch_size) + " but the graph's 'batch_size' is " +
                                       std::to_string(batch_size) + "; they must agree");
    s.seq_len = optionalInt(*src, "seq_len", w, Bound::NonNegative).value_or(0);
    s.precision = readPrecision(*src, w, precision);
    if (s.precision != precision)
        failField(w, "precision", std::string("is \"") + toString(s.precision) + "\" but the graph's 'precision' is \"" +
                                      toString(precision) + "\"; they must agree");
    readOverrides(*src, w, s);
    return expandPreset(s);
}

// "ops[3] (id 7, 'fc1')", with as much of id and name as could be read.
std::string opLocation(const json& o, const std::string& where, size_t index) {
    std::string loc = at(where, "ops", index);
    if (!o.is_object()) return loc;
    const auto id = o.find("id");
    const auto name = o.find("name");
    const bool has_id = id != o.end() && id->is_number_integer();
    const bool has_name = name != o.end() && name->is_string();
    if (!has_id && !has_name) return loc;
    loc += " (";
    if (has_id) loc += "id " + id->dump();
    if (has_id && has_name) loc += ", ";
    if (has_name) loc += "'" + name->get<std::string>() + "'";
    return loc + ")";
}

TensorParallel readTensorParallel(const json& o, const std::string& w) {
    const std::optional<std::string> s = optionalString(o, "tensor_parallel", w);
    if (!s) return TensorParallel::Replicated;
    for (TensorParallel t : {TensorParallel::Replicated, TensorParallel::Column, TensorParallel::Row})
        if (*s == toString(t)) return t;
    failField(w, "tensor_parallel", "is '" + *s + "'; use replicated, column (output split) or row (output all-reduced)");
}

Op readOp(const json& o, const std::string& w) {
    requireKnownFields(o, {"id", "name", "kind", "layer", "fwd_flops", "bwd_flops", "param_bytes", "output_bytes", "temp_bytes",
                           "moved_bytes", "fwd_time_s", "bwd_time_s", "tensor_parallel", "kept", "saved_bytes"},
                       w);
    Op op;
    op.name = requireString(o, "name", w);
    op.kind = requireString(o, "kind", w);
    op.layer = requireInt(o, "layer", w, Bound::NonNegative);
    op.fwd_flops = requireNumber(o, "fwd_flops", w, Bound::NonNegative);
    op.bwd_flops = requireNumber(o, "bwd_flops", w, Bound::NonNegative);
    op.param_bytes = requireInt64(o, "param_bytes", w, Bound::NonNegative);
    op.output_bytes = requireInt64(o, "output_bytes", w, Bound::NonNegative);
    op.temp_bytes = requireInt64(o, "temp_bytes", w, Bound::NonNegative);
    op.moved_bytes = optionalInt64(o, "moved_bytes", w, Bound::NonNegative).value_or(0);
    op.fwd_time_s = optionalNumber(o, "fwd_time_s", w, Bound::NonNegative);
    op.bwd_time_s = optionalNumber(o, "bwd_time_s", w, Bound::NonNegative);
    op.tensor_parallel = readTensorParallel(o, w);
    op.output_kept = optionalBool(o, "kept", w).value_or(true);
    op.saved_bytes = optionalInt64(o, "saved_bytes", w, Bound::NonNegative).value_or(0);
    return op;
}

// Layers are numbered from 0 and each holds at least one op, so no layer index reaches the op
// count: that bounds everything sized by layers (2147483647 would overflow, 3e6 would take GBs).
void checkLayers(const json& ops, const std::string& where, const Graph& g) {
    for (size_t i = 0; i < g.ops.size(); ++i)
        if (static_cast<size_t>(g.ops[i].layer) >= g.ops.size())
            failField(opLocation(ops[i], where, i), "layer",
                      "is " + std::to_string(g.ops[i].layer) + " but the graph has " + std::to_string(g.ops.size()) +
                          " ops; layers are numbered from 0 and every layer holds an op");
}

// Sums that reports and memory estimates take must be finite and fit int64: nine ops of 2^63-1
// parameter bytes would wrap around, 1e308 FLOPs twice would be infinite.
void checkTotals(const std::string& where, const Graph& g) {
    struct Sum {
        const char* field;
        int64_t Op::*member;
    };
    for (const Sum sum : {Sum{"param_bytes", &Op::param_bytes}, Sum{"output_bytes", &Op::output_bytes}, Sum{"temp_bytes", &Op::temp_bytes},
                          Sum{"saved_bytes", &Op::saved_bytes}}) {
        int64_t total = 0;
        for (const Op& op : g.ops) {
            const std::optional<int64_t> next = checked::add(total, op.*sum.member);
            if (!next) failField(where, "ops", std::string("sum to more than 2^63 - 1 bytes in '") + sum.field + "'; the sizes are wrong");
            total = *next;
        }
    }
    double fwd = 0, bwd = 0, fwd_t = 0, bwd_t = 0;
    for (const Op& op : g.ops) {
        fwd += op.fwd_flops;
        bwd += op.bwd_flops;
        fwd_t += op.fwd_time_s.value_or(0);
        bwd_t += op.bwd_time_s.value_or(0);
    }
    if (!std::isfinite(fwd + bwd) || !std::isfinite(fwd_t + bwd_t))
        failField(where, "ops", "have FLOPs or times that sum to infinity; the costs are wrong");
}

struct OpIndex {
    std::map<int64_t, int> index_of_id;  // file id -> position in Graph::ops
    std::vector<int64_t> id_of_index;
};

OpIndex readOps(const json& j, const std::string& where, Graph& g) {
    const json& ops = requireArray(j, "ops", where);
    if (ops.empty()) failField(where, "ops", "is empty: a graph needs at least one op");
    OpIndex idx;
    for (size_t i = 0; i < ops.size(); ++i) {
        const std::string w = opLocation(ops[i], where, i);
        if (!ops[i].is_object()) fail(w, "must be an object (got " + describe(ops[i]) + ")");
        const int64_t id = requireInt64(ops[i], "id", w, Bound::NonNegative);
        Op op = readOp(ops[i], w);
        const auto [it, inserted] = idx.index_of_id.emplace(id, static_cast<int>(g.ops.size()));
        if (!inserted) {
            const auto first = static_cast<size_t>(it->second);
            failField(w, "id", "duplicates id " + std::to_string(id) + " of ops[" + std::to_string(first) + "] ('" +
                                   g.ops[first].name + "'); op ids must be unique");
        }
        idx.id_of_index.push_back(id);
        g.ops.push_back(std::move(op));
    }
    checkLayers(ops, where, g);
    checkTotals(where, g);
    return idx;
}

int readEdgeEnd(const json& e, const char* key, const std::string& w, const OpIndex& idx) {
    const int64_t id = requireInt64(e, key, w, Bound::NonNegative);
    const auto it = idx.index_of_id.find(id);
    if (it == idx.index_of_id.end())
        failField(w, key, "refers to op id " + std::to_string(id) + ", which is not in 'ops'");
    return it->second;
}

void readEdges(const json& j, const std::string& where, const OpIndex& idx, Graph& g) {
    const json& edges = requireArray(j, "edges", where);
    int64_t edge_bytes = 0;  // every layer's input and output bytes are sums of these
    for (size_t i = 0; i < edges.size(); ++i) {
        const std::string w = at(where, "edges", i);
        const json& e = edges[i];
        if (!e.is_object()) fail(w, "must be an object (got " + describe(e) + ")");
        requireKnownFields(e, {"src", "dst", "bytes"}, w);
        Edge edge;
        edge.src = readEdgeEnd(e, "src", w, idx);
        edge.dst = readEdgeEnd(e, "dst", w, idx);
        edge.bytes = requireInt64(e, "bytes", w, Bound::NonNegative);
        if (edge.src == edge.dst) {
            const auto s = static_cast<size_t>(edge.src);
            fail(w, "fields 'src' and 'dst' are both op id " + std::to_string(idx.id_of_index[s]) + " ('" +
                        g.ops[s].name + "'): an op cannot feed itself");
        }
        const Op& src = g.ops[static_cast<size_t>(edge.src)];
        const Op& dst = g.ops[static_cast<size_t>(edge.dst)];
        if (dst.layer < src.layer)
            fail(w, "goes from op id " + std::to_string(idx.id_of_index[static_cast<size_t>(edge.src)]) + " ('" + src.name +
                        "', layer " + std::to_string(src.layer) + ") back to op id " +
                        std::to_string(idx.id_of_index[static_cast<size_t>(edge.dst)]) + " ('" + dst.name + "', layer " +
                        std::to_string(dst.layer) + "); layers run in order, so an edge may not enter an earlier layer");
        g.edges.push_back(edge);
        const std::optional<int64_t> next = checked::add(edge_bytes, edge.bytes);
        if (!next) fail(w, "field 'bytes' brings the edges' total above 2^63 - 1 bytes; the sizes are wrong");
        edge_bytes = *next;
    }
}

bool idsAreIndices(const OpIndex& idx) {
    for (size_t i = 0; i < idx.id_of_index.size(); ++i)
        if (idx.id_of_index[i] != static_cast<int64_t>(i)) return false;
    return true;
}

void requireAcyclic(const Graph& g, const std::string& where, const OpIndex& idx) {
    try {
        (void)g.topologicalOrder();
    } catch (const Error& e) {
        // topologicalOrder numbers ops by position; say so when the file's ids differ.
        const std::string note = idsAreIndices(idx) ? "" : " (op numbers are positions in 'ops', counted from 0)";
        fail(where, std::string(e.what()) + note + "; a training graph must be acyclic");
    }
}

std::string dotEscape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

std::string humanBytes(int64_t bytes) {
    constexpr double kKiB = 1024.0;
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    size_t u = 0;
    while (v >= kKiB && u + 1 < std::size(units)) {
        v /= kKiB;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

bool looksLikeTorchScript(const std::string& path) {
    const std::string ext = std::filesystem::path(path).extension().string();
    return ext == ".pt" || ext == ".pth" || ext == ".ts";
}

}  // namespace

json graphToJson(const Graph& g) {
    json ops = json::array();
    for (size_t i = 0; i < g.ops.size(); ++i) ops.push_back(opToJson(g.ops[i], i));
    json edges = json::array();
    for (const Edge& e : g.edges) edges.push_back({{"src", e.src}, {"dst", e.dst}, {"bytes", e.bytes}});
    json j = {{"format", kFormat},
              {"version", modelSpecFormatVersion(g.source)},
              {"name", g.name},
              {"batch_size", g.batch_size},
              {"precision", toString(g.source.precision)},
              {"source", modelSpecToJson(g.source)},
              {"ops", std::move(ops)},
              {"edges", std::move(edges)}};
    if (g.min_micro_batch > 1) {  // optional: 1 when absent
        j["min_micro_batch"] = g.min_micro_batch;
        j["min_micro_batch_reason"] = g.min_micro_batch_reason;
    }
    if (g.tensor_parallel_divisor > 1) j["tensor_parallel_divisor"] = g.tensor_parallel_divisor;  // optional: 1 when absent
    return j;
}

Graph graphFromJson(const json& j, const std::string& where) {
    requireFormat(j, kFormat, kVersion, where);
    requireKnownFields(j, {"format", "version", "name", "batch_size", "precision", "source", "ops", "edges", "min_micro_batch",
                           "min_micro_batch_reason", "tensor_parallel_divisor"},
                       where);
    Graph g;
    g.name = requireString(j, "name", where);
    g.batch_size = requireInt(j, "batch_size", where, Bound::Positive);
    const Precision precision = readPrecision(j, where, Precision::FP32);
    g.source = readSource(j, where, g.batch_size, precision);
    const OpIndex idx = readOps(j, where, g);
    readEdges(j, where, idx, g);
    requireAcyclic(g, where, idx);
    g.min_micro_batch = optionalInt(j, "min_micro_batch", where, Bound::Positive).value_or(1);
    g.min_micro_batch_reason = optionalString(j, "min_micro_batch_reason", where).value_or("");
    g.tensor_parallel_divisor = optionalInt(j, "tensor_parallel_divisor", where, Bound::Positive).value_or(1);
    return g;
}

Graph loadGraphFile(const std::string& path) {
    Graph g = graphFromJson(readJsonFile(path), path);
    if (g.source.zoo.empty() && g.source.file.empty()) {
        g.source.file = path;
        g.source.batch_size = g.batch_size;
    }
    return g;
}

void saveGraphFile(const Graph& g, const std::string& path) { writeJsonFile(graphToJson(g), path); }

std::string graphToDot(const Graph& g) {
    std::ostringstream out;
    out << "digraph \"" << dotEscape(g.name) << "\" {\n"
        << "  rankdir=TB;\n  node [shape=box, fontsize=10];\n  edge [fontsize=8];\n";
    const std::vector<Layer> layers = g.layers();
    for (const Layer& l : layers) {
        if (l.ops.empty()) continue;
        out << "  subgraph cluster_layer" << l.index << " {\n"
            << "    label=\"layer " << l.index << ": " << dotEscape(l.name) << "\";\n";
        for (int id : l.ops) {
            const Op& op = g.ops[static_cast<size_t>(id)];
            out << "    op" << id << " [label=\"" << dotEscape(op.name) << "\\n" << dotEscape(op.kind) << "\"];\n";
        }
        out << "  }\n";
    }
    for (const Edge& e : g.edges)
        out << "  op" << e.src << " -> op" << e.dst << " [label=\"" << humanBytes(e.bytes) << "\"];\n";
    out << "}\n";
    return out.str();
}

Graph loadModel(const std::string& zoo_name_or_file, int batch_size, int seq_len, Precision precision,
                const std::map<std::string, double>& overrides) {
    if (findZooModel(zoo_name_or_file) || findModelPreset(zoo_name_or_file)) {
        ModelSpec spec;
        spec.zoo = zoo_name_or_file;
        spec.batch_size = batch_size;
        spec.seq_len = seq_len;
        spec.precision = precision;
        spec.overrides = overrides;
        return buildZooModel(spec);
    }
    if (!overrides.empty())
        throw Error("size overrides apply to zoo models only; '" + zoo_name_or_file + "' is not one (see 'hippie-plan models')");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(zoo_name_or_file, ec)) {
        std::string known;
        for (const ZooEntry& z : zooModels()) known += (known.empty() ? "" : ", ") + z.name;
        throw Error("model '" + zoo_name_or_file + "' is neither a zoo model nor a file; zoo models: " + known + "; presets: " +
                    presetNames());
    }
    if (looksLikeTorchScript(zoo_name_or_file))
        throw Error(zoo_name_or_file + ": looks like TorchScript; convert it to a graph JSON file first "
                                       "with 'hippie-engine inspect'");
    // A graph file keeps its own batch size and precision: its costs were measured or
    // written for them, and consumers scale costs by samples.
    return loadGraphFile(zoo_name_or_file);
}

}  // namespace hippie
