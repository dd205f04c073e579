#pragma once
// One pipeline unit: a Graph layer as a LibTorch module. A layer reads the tensors it consumes
// from a map of live tensors keyed by the Graph name of the op that produced them
// ("block3.mlp_residual"), and adds the tensors it produces under their op names; the stage
// that runs it keeps only what later layers read (derived from the Graph's edges), so layers
// may exchange any number of tensors: an encoder-decoder's decoder reads the encoder output,
// Inception's head reads mixed_6e, an embedding layer produces a source and a target stream.
//
// Chained layers (a TorchScript module's children) take and return one tensor; they
// read and write the one key kChainKey.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "engine/src/models/layer_keys.h"
#include "engine/src/models/tensor_parallel.h"

namespace hippie::engine {

using Live = std::map<std::string, torch::Tensor>;

// A weight a layer uses but another layer owns (an LM head tied to the token embedding).
struct TiedWeight {
    int owner_layer = 0;
    std::string owner_param;  // the owner's parameter name ("token_embed.weight")
};

class LayerModule : public torch::nn::Module {
public:
    // Chained layers implement this one.
    virtual torch::Tensor forward(torch::Tensor x) {
        TORCH_CHECK(false, "layer ", name(), " is not a chained layer");
        return x;
    }
    // Reads its inputs from `live` and adds its outputs.
    virtual void run(Live& live) { live[kChainKey] = forward(live.at(kChainKey)); }
    // The weight this layer reuses from another layer, if any; the stage hands it over with
    // setTied() before the first forward (the owner's tensor, or an identical replica).
    virtual std::optional<TiedWeight> tiedWeight() const { return std::nullopt; }
    virtual void setTied(const torch::Tensor&) {}

    // Tensor parallelism (models/tensor_parallel.h). This layer split over `tp`: rank
    // tp.rank()'s slices of this layer's parameters (the layer a one-process run builds);
    // layers that cannot be split throw.
    virtual std::shared_ptr<LayerModule> splitTensorParallel(const TpContext& /*tp*/) const {
        TORCH_CHECK(false, "layer ", name(), " cannot be split by tensor parallelism");
        return nullptr;
    }
    // A split layer's split parameters by name (as named_parameters() names them), and how
    // each is cut; every other parameter is whole on every rank of the group.
    virtual std::map<std::string, ParamSplit> tensorParallelSplits() const { return {}; }

    // Selective recomputation (Plan::selective_recompute, Program::selective_op): run this
    // layer's attention cores so that backward recomputes their scores and probabilities from
    // the stored Q and K instead of keeping them. False (and nothing changes) for a layer
    // without attention cores.
    virtual bool setSelectiveRecompute(bool /*on*/) { return false; }
};
using LayerPtr = std::shared_ptr<LayerModule>;

}  // namespace hippie::engine
