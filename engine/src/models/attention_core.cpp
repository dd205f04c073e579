#include "engine/src/models/attention_core.h"

#include <cmath>
#include <limits>

namespace hippie::engine {

using torch::Tensor;

namespace {

Tensor probabilities(const Tensor& q, const Tensor& k, bool causal) {
    Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
    if (causal) {
        const Tensor mask = torch::ones({q.size(-2), k.size(-2)}, q.options().dtype(torch::kBool)).triu(1);
        scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    }
    return torch::softmax(scores, -1);
}

// Backward in the order autograd runs the stored path's: the context product, softmax's own
// backward kernel, the scale (the mask's backward zeroes what softmax's already is), the
// scores product.
class RecomputedCore : public torch::autograd::Function<RecomputedCore> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
        ctx->save_for_backward({q, k, v});
        ctx->saved_data["causal"] = causal;
        return torch::matmul(probabilities(q, k, causal), v);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const Tensor &q = saved[0], &k = saved[1], &v = saved[2];
        const Tensor& grad = grads[0];
        const Tensor probs = probabilities(q, k, ctx->saved_data["causal"].toBool());
        const Tensor grad_v = torch::matmul(probs.transpose(-2, -1), grad);
        const Tensor grad_probs = torch::matmul(grad, v.transpose(-2, -1));
        const Tensor grad_scores =
            torch::_softmax_backward_data(grad_probs, probs, -1, probs.scalar_type()) / std::sqrt(static_cast<double>(q.size(-1)));
        const Tensor grad_q = torch::matmul(grad_scores, k);
        const Tensor grad_k = torch::matmul(grad_scores.transpose(-2, -1), q);
        return {grad_q, grad_k, grad_v, Tensor()};
    }
};

}  // namespace

Tensor attentionCore(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, bool recompute) {
    if (recompute) return RecomputedCore::apply(q, k, v, causal);
    return torch::matmul(probabilities(q, k, causal), v);
}

}  // namespace hippie::engine
