#pragma once
// Graph: the one model description planners see. Operators carry costs for `batch_size`
// samples; FLOPs, activation and edge bytes and profiled times scale linearly with the
// number of samples, parameter bytes do not.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hippie {

enum class Precision { FP32, FP16, BF16 };  // FP16/BF16 mean mixed precision (fp32 master weights)

const char* toString(Precision p);
Precision precisionFromString(const std::string& s);  // throws Error naming the value
int64_t activationElementBytes(Precision p);           // 4 or 2
bool isMixed(Precision p);

// Where a Graph came from, so that any process (the engine on another host) can rebuild it.
struct ModelSpec {
    std::string zoo;        // zoo name, or empty when the graph comes from `file`
    std::string file;       // graph JSON or TorchScript path when not a zoo model
    int batch_size = 1;     // samples the graph's costs are given for
    int seq_len = 0;        // 0 = the model's default
    Precision precision = Precision::FP32;
    // Size overrides of a zoo model by key ("layers" -> 2): architecture.h lists each family's
    // keys and ranges; empty = the published size. seq_len is the field above, not a key here.
    std::map<std::string, double> overrides;
};

// How tensor parallelism (Megatron-LM, Shoeybi et al. 2019) splits an op over the tp ranks
// of a replica. Set by the zoo's transformer builders; graphs read from JSON or TorchScript
// have every op Replicated, so nothing of them is split and planners keep tp = 1.
enum class TensorParallel {
    Replicated,  // every rank runs it whole (LayerNorm, residual adds, position embeddings)
    Column,      // output split over the ranks, no collective after it: column-parallel
                 // linear, attention by heads, elementwise on a split tensor, vocabulary-
                 // parallel LM head and loss
    Row          // input split, output a partial sum the ranks all-reduce: row-parallel
                 // linear, vocabulary-parallel embedding
};
const char* toString(TensorParallel t);  // "replicated", "column", "row"

struct Op {
    std::string name;
    std::string kind;       // "matmul", "conv2d", "attention", "layernorm", ...
    int layer = 0;          // index of the layer (pipeline unit) it belongs to
    double fwd_flops = 0;   // for Graph::batch_size samples
    double bwd_flops = 0;
    int64_t param_bytes = 0;   // in the graph's precision; independent of batch size
    int64_t output_bytes = 0;  // activation this op produces, for batch_size samples
    int64_t temp_bytes = 0;    // workspace while it runs, for batch_size samples
    // Activation bytes the forward reads and writes (inputs + outputs, parameters excluded)
    // for batch_size samples: what bounds memory-bound ops. 0 = unknown (compute bound only).
    int64_t moved_bytes = 0;
    std::optional<double> fwd_time_s;  // profiled; wins over FLOPs when present
    std::optional<double> bwd_time_s;
    TensorParallel tensor_parallel = TensorParallel::Replicated;
    // Whether backward reads this op's output, so a micro-batch keeps it from its forward to
    // its backward (markKeptOutputs): false for an output only ops read whose gradients do not
    // need it (a residual add's operands, a softmax's scores). Graph JSON: "kept", default true.
    bool output_kept = true;
    // Bytes besides its output that its backward reads, kept from its forward to its backward
    // whoever reads the output, for batch_size samples: a dropout's mask (one byte an element,
    // as PyTorch keeps it). Graph JSON: "saved_bytes", default 0.
    int64_t saved_bytes = 0;

    // The activation a micro-batch keeps for backward: output_bytes when output_kept, plus
    // saved_bytes.
    int64_t keptBytes() const { return (output_kept ? output_bytes : 0) + saved_bytes; }
};

struct Edge {
    int src = 0;
    int dst = 0;
    int64_t bytes = 0;  // for batch_size samples
};

// Operators grouped by layer: the unit pipeline planners cut at.
struct Layer {
    int index = 0;
    std::string name;
    std::vector<int> ops;
    double fwd_flops = 0;
    double bwd_flops = 0;
    std::optional<double> fwd_time_s;  // set when every op has a profiled time
    std::optional<double> bwd_time_s;
    int64_t param_bytes = 0;
    int64_t activation_bytes = 0;  // sum of the ops' kept outputs (Op::keptBytes): what backward needs
    int64_t temp_bytes = 0;        // largest op workspace
    int64_t input_bytes = 0;       // bytes on edges entering this layer from earlier layers
    int64_t output_bytes = 0;      // bytes on edges leaving this layer to later layers
};

struct Graph {
    std::string name;
    int batch_size = 1;
    ModelSpec source;
    std::vector<Op> ops;      // an op's id is its index
    std::vector<Edge> edges;
    // Fewest samples a micro-batch may have for the model to train, and why (the op that needs
    // them): a BatchNorm over a 1x1 feature map sees one value per channel and sample.
    int min_micro_batch = 1;
    std::string min_micro_batch_reason;
    // Tensor-parallel degrees must divide this (the attention heads, which split whole);
    // 1 when no op is split (Op::tensor_parallel).
    int tensor_parallel_divisor = 1;

    int layerCount() const;                  // 1 + largest layer index (0 if empty)
    std::vector<Layer> layers() const;       // layer view, index i = layer i
    std::vector<int> topologicalOrder() const;  // throws Error naming an op on a cycle
    // By op id: whether an op of another layer reads its output (a layer's checkpoints under
    // activation checkpointing).
    std::vector<bool> readByAnotherLayer() const;
    double totalFwdFlops() const;
    double totalBwdFlops() const;
    int64_t totalParamBytes() const;
    // Parameter bytes are in the graph's precision (source.precision): 2 bytes a parameter
    // for FP16/BF16 graphs, 4 for FP32.
    int64_t paramCount() const;
    // Whether tensor parallelism of degree tp can split this graph: some op is split and tp
    // divides tensor_parallel_divisor. tp = 1 always can.
    bool tensorParallelFits(int tp) const;
};

// Sets Op::output_kept from the ops' kinds, as autograd keeps tensors: an output is kept when
// its own op's gradient reads it (softmax, relu, tanh, sigmoid) or when any consumer's does
// (a matmul, convolution or normalisation reads its input; so does every kind not listed
// below, and a graph output is kept too). It is dropped when every consumer's gradient needs
// neither input: add and concat (a residual stream, Inception's branches), softmax, relu,
// tanh and sigmoid (they read their output), dropout (its mask, Op::saved_bytes), avgpool (the
// shape only), embedding (the ids).
// PyTorch frees such a tensor after the forward (a GPT block's attention projection and
// second MLP linear feed only residual adds; a BatchNorm's output only an in-place ReLU).
void markKeptOutputs(Graph& graph);


}  // namespace hippie
