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

// The probabilities after their dropout, drawn from `stream` (probs itself when p is 0).
Tensor dropped(const Tensor& probs, const CoreDropout& dropout, const DropoutStream& stream) {
    if (dropout.p <= 0) return probs;
    return applyDropout(probs, dropoutKeep(probs, dropout.p, dropout.site, stream), dropout.p);
}

// Backward in the order autograd runs the stored path's: the context product, the dropout's
// scale and mask, softmax's own backward kernel, the scale (the mask's backward zeroes what
// softmax's already is), the scores product.
class RecomputedCore : public torch::autograd::Function<RecomputedCore> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                          const CoreDropout& dropout) {
        ctx->save_for_backward({q, k, v});
        ctx->saved_data["causal"] = causal;
        ctx->saved_data["p"] = dropout.p;
        const DropoutStream stream = currentDropoutStream();
        if (dropout.p > 0) {
            ctx->saved_data["op"] = dropout.site.op;
            ctx->saved_data["offset"] = dropout.site.offset;
            ctx->saved_data["seed"] = static_cast<int64_t>(stream.seed);
            ctx->saved_data["step"] = stream.step;
            ctx->saved_data["first_sample"] = stream.first_sample;
        }
        return torch::matmul(dropped(probabilities(q, k, causal), dropout, stream), v);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const Tensor &q = saved[0], &k = saved[1], &v = saved[2];
        const Tensor& grad = grads[0];
        const Tensor probs = probabilities(q, k, ctx->saved_data["causal"].toBool());
        const double p = ctx->saved_data["p"].toDouble();
        Tensor keep, dropped = probs;
        if (p > 0) {
            const DropoutSite site{ctx->saved_data["op"].toStringRef(), ctx->saved_data["offset"].toInt()};
            const DropoutStream stream{static_cast<uint64_t>(ctx->saved_data["seed"].toInt()), ctx->saved_data["step"].toInt(),
                                       ctx->saved_data["first_sample"].toInt()};
            keep = dropoutKeep(probs, p, site, stream);
            dropped = applyDropout(probs, keep, p);
        }
        const Tensor grad_v = torch::matmul(dropped.transpose(-2, -1), grad);
        Tensor grad_probs = torch::matmul(grad, v.transpose(-2, -1));
        if (p > 0) grad_probs = (grad_probs * (1.0 / (1.0 - p))).masked_fill(keep.logical_not(), 0);
        const Tensor grad_scores =
            torch::_softmax_backward_data(grad_probs, probs, -1, probs.scalar_type()) / std::sqrt(static_cast<double>(q.size(-1)));
        const Tensor grad_q = torch::matmul(grad_scores, k);
        const Tensor grad_k = torch::matmul(q.transpose(-2, -1), grad_scores).transpose(-2, -1);  // as autograd takes K^T's
        return {grad_q, grad_k, grad_v, Tensor(), Tensor()};
    }
};

}  // namespace

Tensor attentionCore(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, bool recompute, const CoreDropout& dropout) {
    if (recompute) return RecomputedCore::apply(q, k, v, causal, dropout);
    return torch::matmul(dropped(probabilities(q, k, causal), dropout, currentDropoutStream()), v);
}

}  // namespace hippie::engine
