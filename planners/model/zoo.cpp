#include "planners/model/zoo.h"

#include "planners/model/presets.h"

#include <cassert>
#include <utility>
#include <variant>

#include "planners/common/error.h"
#include "planners/model/overrides.h"
#include "planners/model/zoo_builder.h"

namespace hippie {
namespace zoo {

// ---- GraphBuilder ---------------------------------------------------------------------------

GraphBuilder::GraphBuilder(std::string model_name, const ModelSpec& spec)
    : batch_(spec.batch_size), element_bytes_(activationElementBytes(spec.precision)) {
    graph_.name = std::move(model_name);
    graph_.batch_size = spec.batch_size;
    graph_.source = spec;
}

void GraphBuilder::beginLayer(const std::string& name) {
    ++layer_;
    layer_name_ = name;
}

Tensor GraphBuilder::add(const std::string& op_name, const OpCost& cost, std::initializer_list<Tensor> inputs) {
    return add(op_name, cost, std::vector<Tensor>(inputs));
}

Tensor GraphBuilder::add(const std::string& op_name, const OpCost& cost, const std::vector<Tensor>& inputs) {
    const int id = static_cast<int>(graph_.ops.size());
    Op op;
    op.name = layer_name_ + "." + op_name;
    op.kind = cost.kind;
    assert(layer_ >= 0 && "beginLayer() before the first op");
    op.layer = layer_;
    op.fwd_flops = cost.fwd_flops;
    op.bwd_flops = cost.bwd_flops;
    op.param_bytes = cost.params * element_bytes_;
    op.output_bytes = (cost.output_elements + cost.saved_elements) * element_bytes_;
    op.temp_bytes = cost.temp_elements * element_bytes_;
    // Forward reads its inputs once and writes its output (and saved state) once.
    int64_t moved_elements = cost.output_elements + cost.saved_elements;
    for (const Tensor& in : inputs) moved_elements += in.elements;
    op.moved_bytes = moved_elements * element_bytes_ + cost.mask_bytes;
    op.saved_bytes = cost.mask_bytes;
    graph_.ops.push_back(std::move(op));
    for (const Tensor& in : inputs) graph_.edges.push_back(Edge{in.op, id, in.elements * element_bytes_});
    return Tensor{id, cost.output_elements};
}

void GraphBuilder::requireMicroBatch(int64_t samples, const std::string& why) {
    if (samples <= graph_.min_micro_batch) return;
    graph_.min_micro_batch = static_cast<int>(samples);
    graph_.min_micro_batch_reason = why;
}

Tensor GraphBuilder::split(TensorParallel kind, Tensor t) {
    graph_.ops.at(static_cast<size_t>(t.op)).tensor_parallel = kind;
    return t;
}

Graph GraphBuilder::finish() {
    markKeptOutputs(graph_);
    return std::move(graph_);
}

// ---- Costs ----------------------------------------------------------------------------------

OpCost linearCost(int64_t rows, int64_t in, int64_t out, bool bias, bool owns_weight) {
    OpCost c;
    c.kind = "matmul";
    c.fwd_flops = 2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
    c.bwd_flops = 2 * c.fwd_flops;
    c.params = (owns_weight ? in * out : 0) + (bias ? out : 0);
    c.output_elements = rows * out;
    return c;
}

OpCost withoutInputGradient(OpCost c) {
    c.bwd_flops = c.fwd_flops;
    return c;
}

OpCost activationMatmulCost(double fwd_flops, int64_t output_elements) {
    OpCost c;
    c.kind = "attention";
    c.fwd_flops = fwd_flops;
    c.bwd_flops = 2 * fwd_flops;
    c.output_elements = output_elements;
    return c;
}

OpCost embeddingCost(int64_t rows, int64_t vocab, int64_t dim, bool owns_table) {
    OpCost c;
    c.kind = "embedding";
    c.fwd_flops = kCopyFlopsPerElement * static_cast<double>(rows * dim);
    c.bwd_flops = c.fwd_flops;
    c.params = owns_table ? vocab * dim : 0;
    c.output_elements = rows * dim;
    return c;
}

OpCost elementwiseCost(const std::string& kind, int64_t elements, double flops_per_element) {
    OpCost c;
    c.kind = kind;
    c.fwd_flops = flops_per_element * static_cast<double>(elements);
    c.bwd_flops = c.fwd_flops;
    c.output_elements = elements;
    return c;
}

OpCost normCost(const std::string& kind, int64_t elements, int64_t channels) {
    OpCost c = elementwiseCost(kind, elements, kNormFlopsPerElement);
    c.params = 2 * channels;
    return c;
}

OpCost softmaxCost(int64_t elements) { return elementwiseCost("softmax", elements, kSoftmaxFlopsPerElement); }

OpCost dropoutCost(int64_t elements) {
    OpCost c = elementwiseCost("dropout", elements, kDropoutFlopsPerElement);
    c.mask_bytes = elements;
    return c;
}

OpCost crossEntropyCost(int64_t rows, int64_t classes) {
    OpCost c = elementwiseCost("cross_entropy", rows * classes, kSoftmaxFlopsPerElement);
    c.output_elements = rows;           // one loss per row
    c.saved_elements = rows * classes;  // probabilities, for the gradient p - onehot
    return c;
}

// ---- MLP ------------------------------------------------------------------------------------

void buildMlp(GraphBuilder& g, const MlpArch& a) {
    const int64_t b = g.batch();
    Tensor x;
    for (int i = 0; i <= a.hidden_layers; ++i) {
        const bool hidden = i < a.hidden_layers;
        g.beginLayer("fc" + std::to_string(i));
        const OpCost fc = linearCost(b, i == 0 ? a.inputs : a.hidden, hidden ? a.hidden : a.classes, true);
        x = i == 0 ? g.add("linear", withoutInputGradient(fc)) : g.add("linear", fc, {x});
        if (hidden) x = g.add("relu", elementwiseCost("relu", x.elements, kReluFlopsPerElement), {x});
    }
    g.add("loss", crossEntropyCost(b, a.classes), {x});
}

namespace {

// Sum of in*out + out over the MLP's linear layers.
int64_t mlpParamCount(const MlpArch& a) {
    int64_t n = 0, in = a.inputs;
    for (int i = 0; i <= a.hidden_layers; ++i) {
        const int64_t out = i < a.hidden_layers ? a.hidden : a.classes;
        n += in * out + out;
        in = out;
    }
    return n;
}

std::vector<ZooEntry> mlpEntries() {
    const MlpArch& a = std::get<MlpArch>(*publishedArchitecture("mlp"));
    return {{"mlp", "mlp",
             "Deep MLP: " + std::to_string(a.inputs) + " inputs, " + std::to_string(a.hidden_layers) +
                 " ReLU hidden layers of " + std::to_string(a.hidden) + ", " + std::to_string(a.classes) +
                 " classes; parameters by formula (sum of in*out + out over its " +
                 std::to_string(a.hidden_layers + 1) + " linear layers)",
             0, static_cast<double>(mlpParamCount(a))}};
}

// Samples one zoo Graph may be built for: with the per-sample bound of architecture.cpp
// (2^40 elements) byte counts stay far inside int64.
constexpr int kMaxBatch = 1 << 20;

struct Build {
    GraphBuilder& g;
    void operator()(const GptArch& a) const { buildGpt(g, a); }
    void operator()(const BertArch& a) const { buildBert(g, a); }
    void operator()(const TransformerArch& a) const { buildTransformer(g, a); }
    void operator()(const ResNetArch& a) const { buildResNet(g, a); }
    void operator()(const VggArch& a) const { buildVgg(g, a); }
    void operator()(const InceptionArch& a) const { buildInception(g, a); }
    void operator()(const GnmtArch& a) const { buildGnmt(g, a); }
    void operator()(const MlpArch& a) const { buildMlp(g, a); }
};

}  // namespace
}  // namespace zoo

// ---- Public API -----------------------------------------------------------------------------

const std::vector<ZooEntry>& zooModels() {
    static const std::vector<ZooEntry> entries = [] {
        std::vector<ZooEntry> out;
        for (auto family : {zoo::transformerEntries, zoo::cnnEntries, zoo::rnnEntries, zoo::mlpEntries})
            for (ZooEntry& e : family()) out.push_back(std::move(e));
        return out;
    }();
    return entries;
}

const ZooEntry* findZooModel(const std::string& name) {
    for (const ZooEntry& e : zooModels())
        if (e.name == name) return &e;
    return nullptr;
}

Graph buildZooModel(const ModelSpec& given) {
    const ModelSpec spec = expandPreset(given);  // a preset is the zoo model it sizes
    const Architecture arch = resolveArchitecture(spec);  // throws for an unknown name or a bad override
    if (spec.batch_size <= 0 || spec.batch_size > zoo::kMaxBatch)
        throw Error("zoo model '" + spec.zoo + "': batch size must be from 1 to " + std::to_string(zoo::kMaxBatch) +
                    ", got " + std::to_string(spec.batch_size));
    ModelSpec resolved = spec;
    // Models without a sequence (CNNs, the MLP) ignore seq_len and record 0, so a rebuild from
    // the recorded spec gives the same graph.
    const ZooEntry* entry = findZooModel(spec.zoo);
    resolved.seq_len = entry->default_seq_len > 0 ? sequenceLength(arch) : 0;
    zoo::GraphBuilder builder(zooGraphName(resolved), resolved);
    std::visit(zoo::Build{builder}, arch);
    return builder.finish();
}

}  // namespace hippie
