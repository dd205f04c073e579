#pragma once
// LibTorch modules of the tiny models, one module per Graph layer (models/tiny_graphs.h), and
// their deterministic synthetic data.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/src/models/layer.h"
#include "engine/src/models/tiny_graphs.h"

namespace hippie::engine {



// Builds layers [first, last] of `cfg`. Layer i is initialised from seed (seed, i) alone, so
// every partition of the model starts from the same parameters.
std::vector<LayerPtr> buildTinyLayers(const TinyConfig& cfg, int seq_len, int first, int last, uint64_t seed);

struct Batch {
    torch::Tensor inputs;   // what layer 0 reads
    torch::Tensor targets;  // what the loss reads
};

// The global batch of `step`: a pure function of (cfg, seed, step), so any split of it over
// replicas and micro-batches sees the same samples.
Batch syntheticBatch(const TinyConfig& cfg, int seq_len, int samples, uint64_t seed, int step);

// Mean loss of the last layer's output over its samples.
torch::Tensor tinyLoss(const TinyConfig& cfg, int seq_len, const torch::Tensor& output, const torch::Tensor& targets);

}  // namespace hippie::engine
