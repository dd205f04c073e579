#include "planners/model/zoo.h"

#include <cassert>
#include <utility>

#include "planners/common/error.h"
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
    op.moved_bytes = moved_elements * element_bytes_;
    graph_.ops.push_back(std::move(op));
    for (const Tensor& in : inputs) graph_.edges.push_back(Edge{in.op, id, in.elements * element_bytes_});
    return Tensor{id, cost.output_elements};
}

Graph GraphBuilder::finish() { return std::move(graph_); }

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

OpCost crossEntropyCost(int64_t rows, int64_t classes) {
    OpCost c = elementwiseCost("cross_entropy", rows * classes, kSoftmaxFlopsPerElement);
    c.output_elements = rows;           // one loss per row
    c.saved_elements = rows * classes;  // probabilities, for the gradient p - onehot
    return c;
}

// ---- MLP ------------------------------------------------------------------------------------

namespace {

// A plain deep MLP for scheduling experiments: 1024 input features, eight ReLU hidden layers
// of 4096 units, 1000 classes. Wide and uniform, so every layer costs about the same.
constexpr int64_t kMlpInputs = 1024;
constexpr int64_t kMlpHidden = 4096;
constexpr int kMlpHiddenLayers = 8;
constexpr int64_t kMlpClasses = 1000;

int64_t mlpLayerWidth(int i) { return i < kMlpHiddenLayers ? kMlpHidden : kMlpClasses; }
int64_t mlpLayerInputs(int i) { return i == 0 ? kMlpInputs : kMlpHidden; }

void buildMlp(GraphBuilder& g) {
    const int64_t b = g.batch();
    Tensor x;
    for (int i = 0; i <= kMlpHiddenLayers; ++i) {
        g.beginLayer("fc" + std::to_string(i));
        const OpCost fc = linearCost(b, mlpLayerInputs(i), mlpLayerWidth(i), true);
        x = i == 0 ? g.add("linear", fc) : g.add("linear", fc, {x});
        if (i < kMlpHiddenLayers) x = g.add("relu", elementwiseCost("relu", x.elements, kReluFlopsPerElement), {x});
    }
    g.add("loss", crossEntropyCost(b, kMlpClasses), {x});
}

int64_t mlpParamCount() {
    int64_t n = 0;
    for (int i = 0; i <= kMlpHiddenLayers; ++i) n += mlpLayerInputs(i) * mlpLayerWidth(i) + mlpLayerWidth(i);
    return n;
}

std::vector<ZooModel> mlpModels() {
    return {{{"mlp", "mlp",
              "Deep MLP: 1024 inputs, 8 ReLU hidden layers of 4096, 1000 classes; parameters by formula "
              "(sum of in*out + out over its 9 linear layers)",
              0, static_cast<double>(mlpParamCount())},
             [](GraphBuilder& g, int64_t) { buildMlp(g); }}};
}

const std::vector<ZooModel>& registry() {
    static const std::vector<ZooModel> models = [] {
        std::vector<ZooModel> all;
        for (auto family : {transformerModels, cnnModels, rnnModels, mlpModels})
            for (ZooModel& m : family()) all.push_back(std::move(m));
        return all;
    }();
    return models;
}

const ZooModel* findModel(const std::string& name) {
    for (const ZooModel& m : registry())
        if (m.entry.name == name) return &m;
    return nullptr;
}

std::string knownNames() {
    std::string s;
    for (const ZooModel& m : registry()) s += (s.empty() ? "" : ", ") + m.entry.name;
    return s;
}

}  // namespace
}  // namespace zoo

// ---- Public API -----------------------------------------------------------------------------

const std::vector<ZooEntry>& zooModels() {
    static const std::vector<ZooEntry> entries = [] {
        std::vector<ZooEntry> out;
        for (const zoo::ZooModel& m : zoo::registry()) out.push_back(m.entry);
        return out;
    }();
    return entries;
}

const ZooEntry* findZooModel(const std::string& name) {
    for (const ZooEntry& e : zooModels())
        if (e.name == name) return &e;
    return nullptr;
}

Graph buildZooModel(const ModelSpec& spec) {
    const zoo::ZooModel* model = zoo::findModel(spec.zoo);
    if (!model) throw Error("unknown zoo model '" + spec.zoo + "'; known models: " + zoo::knownNames());
    if (spec.batch_size <= 0)
        throw Error("zoo model '" + spec.zoo + "': batch size must be positive, got " + std::to_string(spec.batch_size));
    if (spec.seq_len < 0)
        throw Error("zoo model '" + spec.zoo + "': sequence length must be positive (or 0 for the model's default " +
                    std::to_string(model->entry.default_seq_len) + "), got " + std::to_string(spec.seq_len));
    ModelSpec resolved = spec;
    // Models without a sequence (CNNs, the MLP) ignore seq_len and record 0, so a rebuild from
    // the recorded spec gives the same graph.
    const bool has_sequence = model->entry.default_seq_len > 0;
    resolved.seq_len = !has_sequence ? 0 : (spec.seq_len > 0 ? spec.seq_len : model->entry.default_seq_len);
    zoo::GraphBuilder builder(model->entry.name, resolved);
    model->build(builder, resolved.seq_len);
    return builder.finish();
}

}  // namespace hippie
