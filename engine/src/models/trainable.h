#pragma once
// What the executor trains: a model cut into layers (one module per Graph layer), its loss,
// and its deterministic synthetic data. Two kinds: the zoo's models at any size (zoo_layers.h;
// the presets such as gpt-tiny among them), whose layers exchange tensors named by the Graph's
// ops; and TorchScript modules whose top-level children run in sequence (layer i = child i),
// chained layers that pass one tensor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/src/models/layer.h"
#include "planners/common/error.h"
#include "planners/model/graph.h"

namespace hippie::engine {

struct Batch {
    torch::Tensor inputs;   // what layer 0 reads
    torch::Tensor targets;  // what the loss reads
};

class Trainable {
public:
    virtual ~Trainable() = default;
    virtual std::string name() const = 0;
    virtual int layerCount() const = 0;
    // Chained layers pass one tensor (kChainKey) from each layer to the next; the others read
    // and write the tensors of the Graph's edges (layer.h).
    virtual bool chained() const { return true; }
    // Layers [first, last] on `device`. Every rank gets the same initial parameters for a seed
    // (zoo models: layer i from (seed, i) alone; TorchScript: from the file).
    virtual std::vector<LayerPtr> layers(int first, int last, uint64_t seed, const torch::Device& device) const = 0;
    // The global batch of `step` as CPU tensors: a pure function of (seed, step). Throws Error
    // when the model cannot make synthetic data (then --data FILE is needed).
    virtual Batch synthetic(int samples, uint64_t seed, int step) const = 0;
    // Mean loss over the samples of `output` (the last layer's) against `targets`.
    virtual torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) const = 0;
    // The loss from the live tensors after the last layer: chained models read kChainKey.
    virtual torch::Tensor loss(const Live& live, const torch::Tensor& targets) const { return loss(live.at(kChainKey), targets); }
    // Tensor parallelism (models/tensor_parallel.h): "" when the model can be split over
    // tp ranks (with sequence parallelism when asked), else why not.
    virtual std::string tensorParallelProblem(int tp, bool /*sequence_parallel*/) const {
        return tp <= 1 ? "" : name() + ": tensor parallelism splits the zoo's transformer models (gpt, bert, transformer) only; plan it with tp 1";
    }
    // Layers [first, last] split over `tp`: this rank's slices of the layers layers() builds
    // for the same seed. Without tensor parallelism, layers().
    virtual std::vector<LayerPtr> tensorParallelLayers(int first, int last, uint64_t seed, const torch::Device& device,
                                                       const TpContext& tp) const {
        if (tp.enabled()) throw Error(tensorParallelProblem(tp.size(), tp.sequence_parallel));
        return layers(first, last, seed, device);
    }
    // The loss from the live tensors of split layers (logits split by vocabulary): the same value
    // on every rank of the group, equal to loss() of the whole model's outputs.
    virtual torch::Tensor tensorParallelLoss(const Live& live, const torch::Tensor& targets, const TpContext& tp) const {
        if (tp.enabled()) throw Error(tensorParallelProblem(tp.size(), tp.sequence_parallel));
        return loss(live, targets);
    }
    // Token models (GPT, BERT): vocabulary and sequence length, for token-id data files; a
    // vocabulary of 0 for models that do not read tokens.
    virtual int64_t vocabSize() const { return 0; }
    virtual int64_t sequenceLength() const { return 0; }
    // The batch of `windows` [samples, sequenceLength() + 1] of consecutive token ids: a GPT
    // predicts each next token; a BERT's targets are derived as its synthetic data's are.
    virtual Batch tokenBatch(const torch::Tensor& /*windows*/) const {
        throw Error("the model " + name() + " does not read token ids");
    }
};

// A token model's batch from `windows` [samples, s + 1] of consecutive token ids: a GPT
// (next_token) predicts each next token; a BERT's targets are bertTargets of its s tokens.
Batch tokenWindowBatch(const torch::Tensor& windows, int64_t s, bool next_token);
// A BERT's targets for its inputs [samples, s]: the tokens again (the MLM head), then a
// sentence label from the first token's parity (the NSP head).
torch::Tensor bertTargets(const torch::Tensor& inputs);

// Hands each layer that reuses another's weight (tiedWeight) that layer's tensor, where
// `layers` is the whole model (layer i at index i), as one process holds it.
void tieWeightsInPlace(const std::vector<LayerPtr>& layers);

// A zoo model at the architecture `spec` resolves to (its overrides applied).
std::unique_ptr<Trainable> makeZooTrainable(const ModelSpec& spec);

// A TorchScript module (.pt). `sample_shape`/`sample_dtype` describe one input sample (no
// batch dimension) and are needed for synthetic data (float inputs only; labels come from a
// fixed random projection of the inputs onto the output's classes). Targets of dtype long
// train with cross-entropy on [batch, classes] outputs, float targets with mean squared error.
// Every parameter of the module is trained. Throws Error naming the file when it cannot be
// loaded or has no top-level children.
std::unique_ptr<Trainable> makeScriptTrainable(const std::string& pt_file, const std::vector<int64_t>& sample_shape,
                                               torch::ScalarType sample_dtype);

}  // namespace hippie::engine
