#pragma once
// Building blocks shared by the zoo's model builders (internal to planners/model/zoo*.cpp).
// Costs follow the standard analytic formulas and are for the whole batch: FLOPs, element
// counts and workspaces scale with the samples, parameter counts do not.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "planners/model/architecture.h"
#include "planners/model/graph.h"
#include "planners/model/zoo.h"

namespace hippie::zoo {

// Per-element FLOPs of the cheap ops. They are rough ("a few FLOPs an element") and matter
// little next to the matmuls and convolutions; they keep those ops from looking free.
inline constexpr double kNormFlopsPerElement = 5;     // mean, variance, normalise, scale, shift
inline constexpr double kSoftmaxFlopsPerElement = 5;  // max, subtract, exp, sum, divide
inline constexpr double kGeluFlopsPerElement = 8;     // tanh approximation: cube, mul-adds, tanh
inline constexpr double kTanhFlopsPerElement = 4;
inline constexpr double kReluFlopsPerElement = 1;
inline constexpr double kDropoutFlopsPerElement = 2;  // draw and compare, scale (memory bound anyway)
inline constexpr double kAddFlopsPerElement = 1;
inline constexpr double kCopyFlopsPerElement = 1;  // gathers, concats: memory moves, 1 so they are not free

// A tensor in the graph being built: the op that produced it and its element count for the
// whole batch. A slice of an op's output (the K third of a fused QKV projection) is the same
// op with fewer elements, so edges carry exactly what flows.
struct Tensor {
    int op = -1;
    int64_t elements = 0;
};

struct OpCost {
    std::string kind;
    double fwd_flops = 0;
    double bwd_flops = 0;
    int64_t params = 0;           // parameter count owned by the op (a tied weight is owned once)
    int64_t output_elements = 0;  // the tensor the op passes on
    int64_t saved_elements = 0;   // internal state kept for backward on top of the output (LSTM gates)
    int64_t temp_elements = 0;    // workspace freed when the op finishes (im2col)
    int64_t mask_bytes = 0;       // kept for backward whoever reads the output (a dropout's mask): Op::saved_bytes
};

// Appends ops in program order, so producers always get smaller ids than their consumers,
// and names each op "<layer name>.<op name>" so the layer view can group them.
class GraphBuilder {
public:
    GraphBuilder(std::string model_name, const ModelSpec& spec);

    int64_t batch() const { return batch_; }
    const std::string& opName(const Tensor& t) const { return graph_.ops.at(static_cast<size_t>(t.op)).name; }
    void beginLayer(const std::string& name);
    Tensor add(const std::string& op_name, const OpCost& cost, std::initializer_list<Tensor> inputs = {});
    Tensor add(const std::string& op_name, const OpCost& cost, const std::vector<Tensor>& inputs);
    // The model trains only on micro-batches of at least `samples` (why: for the message).
    void requireMicroBatch(int64_t samples, const std::string& why);
    // Marks the op producing `t` as split by tensor parallelism (Graph: Op::tensor_parallel);
    // returns `t` so a builder can wrap an add().
    Tensor split(TensorParallel kind, Tensor t);
    // Tensor-parallel degrees must divide `divisor` (the attention heads).
    void limitTensorParallel(int divisor) { graph_.tensor_parallel_divisor = divisor; }
    Graph finish();

private:
    Graph graph_;
    int64_t batch_ = 1;
    int64_t element_bytes_ = 4;
    int layer_ = -1;
    std::string layer_name_;
};

// y = x W (+ b) over `rows` rows: 2*rows*in*out forward; backward computes the input and
// the weight gradient, twice forward. A tied weight (an LM head sharing the embedding)
// still gets a gradient but is counted where it is owned: owns_weight = false.
OpCost linearCost(int64_t rows, int64_t in, int64_t out, bool bias, bool owns_weight = true);
// A weighted op that reads only the step's data (a CNN's first convolution, an MLP's first
// linear) computes no input gradient: its backward is the weight gradient alone, as many
// FLOPs as forward. The engine asks none (the data needs no gradient), nor does PyTorch.
OpCost withoutInputGradient(OpCost c);
// Product of two activations (attention scores and context): both operands get a gradient,
// so backward is twice forward although the op has no weights.
OpCost activationMatmulCost(double fwd_flops, int64_t output_elements);
// Table lookup: a gather forward, a scatter-add of the gradient backward.
OpCost embeddingCost(int64_t rows, int64_t vocab, int64_t dim, bool owns_table = true);
// Weight-free per-element op: backward costs about what forward does.
OpCost elementwiseCost(const std::string& kind, int64_t elements, double flops_per_element);
// Layer or batch norm over `elements` with a scale and a shift per channel.
OpCost normCost(const std::string& kind, int64_t elements, int64_t channels);
OpCost softmaxCost(int64_t elements);
// Dropout (Srivastava et al. 2014) of `elements`: forward draws a mask and scales what it
// keeps, backward multiplies the gradient by the mask; the mask (one byte an element, as
// PyTorch's native_dropout returns it) is kept for backward, the input is not.
OpCost dropoutCost(int64_t elements);
// Softmax cross-entropy over `rows` rows of `classes` logits; keeps the probabilities for backward.
OpCost crossEntropyCost(int64_t rows, int64_t classes);

// Each family's builder fills a GraphBuilder with the model an architecture describes
// (architecture.h: the layers, their names and their modules), so the Graph and the engine
// build the same model from the same numbers.
void buildGpt(GraphBuilder& g, const GptArch& arch);                  // zoo_transformers.cpp
void buildBert(GraphBuilder& g, const BertArch& arch);                // zoo_transformers.cpp
void buildTransformer(GraphBuilder& g, const TransformerArch& arch);  // zoo_transformers.cpp
void buildResNet(GraphBuilder& g, const ResNetArch& arch);            // zoo_cnn.cpp
void buildVgg(GraphBuilder& g, const VggArch& arch);                  // zoo_cnn.cpp
void buildInception(GraphBuilder& g, const InceptionArch& arch);      // zoo_cnn.cpp
void buildGnmt(GraphBuilder& g, const GnmtArch& arch);                // zoo_rnn.cpp
void buildMlp(GraphBuilder& g, const MlpArch& arch);                  // zoo.cpp

// The catalogue entries of each family file, next to the published figures and their sources;
// the dimensions in their descriptions come from the architecture table.
std::vector<ZooEntry> transformerEntries();  // GPT-2, GPT-3, BERT, Transformer big
std::vector<ZooEntry> cnnEntries();          // ResNets, VGGs, Inception-v3
std::vector<ZooEntry> rnnEntries();          // GNMT

}  // namespace hippie::zoo
