#pragma once
// The attention core of every transformer layer the engine builds (the zoo's, at any size):
// probabilities softmax(Q K^T / sqrt(d_head)), then their product with V; what the
// Graph calls <prefix>_scores, <prefix>_softmax and <prefix>_context. With selective
// recomputation (Plan::selective_recompute, Korthikanti et al. 2022, section 4.2) the scores
// and probabilities are recomputed in backward instead of kept.
#include <torch/torch.h>

#include "engine/src/models/dropout.h"

namespace hippie::engine {

// Dropout on the probabilities (the Graph's <prefix>_dropout): none when p is 0.
struct CoreDropout {
    double p = 0;
    DropoutSite site;
};

// q [b, heads, sq, dh] over k, v [b, heads, skv, dh], future keys masked when causal; returns
// the context [b, heads, sq, dh]. With `recompute`, autograd keeps only q, k and v (which the
// projections keep anyway) and backward computes the probabilities (and their dropout mask,
// from the dropout stream its forward saw) again before their gradients, with the operations
// autograd would run, so both paths train alike.
torch::Tensor attentionCore(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool causal, bool recompute,
                            const CoreDropout& dropout = {});

}  // namespace hippie::engine
