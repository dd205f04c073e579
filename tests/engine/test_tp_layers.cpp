// The tensor-parallel layers (engine/src/models/tensor_parallel.h) on their own, against the
// whole model, with no network: t ranks are t threads of this process sharing a group whose
// collectives meet at a barrier (every rank sums the ranks' tensors in rank order, so they
// all see the same values, as after a ring all-reduce).
//
// For GPT (with and without sequence parallelism), BERT and the Transformer at a small size,
// split over 2 ranks: the ranks' slices put back together are exactly the whole model's
// parameters; one forward gives the whole model's loss on every rank; after backward, the
// ranks' gradients put back together (split parameters) or summed (sequence parallelism's
// LayerNorm and bias gradients, partial sums over this rank's tokens) or taken from any rank
// (whole parameters, whose gradients every rank must hold identically) equal the whole
// model's gradients. The collectives counted per forward and per backward are Megatron's: two
// all-reduces a block each way, one for the embedding forward and one for the LM head's input
// backward (sequence parallelism: the same number of reduce-scatter and all-gather pairs).
// And a second backward over a kept graph (zb-h1's weight pass) communicates nothing and
// gives the same gradients. The models train with their published dropout (0.1; the
// Transformer's 0.3 and none on the probabilities), so all of this holds with every rank
// drawing its part of each mask (models/dropout.h).
//
// Dropout on its own: a mask keeps about 1 - p of the elements; a rank's part of a sequence or
// of the heads, and a micro-batch's samples, draw exactly their slice of the whole mask; another
// op, step or seed draws another mask; backward passes the gradient through the kept elements,
// scaled; the attention core recomputed in backward (selective recomputation) gives the output
// and gradients of the stored path, dropout included.
// Args: none.
#include <barrier>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/src/models/attention_core.h"
#include "engine/src/models/dropout.h"
#include "engine/src/models/tensor_parallel.h"
#include "engine/src/models/trainable.h"
#include "engine/src/models/zoo_layers.h"
#include "planners/model/architecture.h"
#include "planners/model/overrides.h"

namespace he = hippie::engine;
using torch::Tensor;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::cout << (ok ? "ok: " : "FAIL: ") << what << "\n";
    if (!ok) ++failures;
}

// A group of threads: each collective deposits this rank's tensor, meets the others at a
// barrier, combines all of them in rank order, and meets them again before the slots are reused.
class ThreadGroup : public he::TpGroup {
public:
    struct Shared {
        explicit Shared(int n) : meet(n), slots(static_cast<size_t>(n)) {}
        std::barrier<> meet;
        std::vector<Tensor> slots;
    };
    ThreadGroup(int rank, int size, std::shared_ptr<Shared> shared) : TpGroup(rank, size), shared_(std::move(shared)) {}

protected:
    void allReduceInPlace(Tensor& t, bool max) override {
        deposit(t);
        Tensor acc = shared_->slots[0].clone();
        for (size_t r = 1; r < shared_->slots.size(); ++r) acc = max ? torch::maximum(acc, shared_->slots[r]) : acc + shared_->slots[r];
        shared_->meet.arrive_and_wait();
        t.copy_(acc);
    }
    void allGatherFlat(const Tensor& t, Tensor& out) override {
        deposit(t);
        const int64_t n = t.numel();
        for (size_t r = 0; r < shared_->slots.size(); ++r)
            out.narrow(0, static_cast<int64_t>(r) * n, n).copy_(shared_->slots[r].reshape({-1}));
        shared_->meet.arrive_and_wait();
    }

private:
    void deposit(const Tensor& t) {
        shared_->slots[static_cast<size_t>(rank())] = t.detach().clone();
        shared_->meet.arrive_and_wait();
    }
    std::shared_ptr<Shared> shared_;
};

constexpr uint64_t kSeed = 7;
constexpr int kSamples = 4;

void bindTied(const std::vector<he::LayerPtr>& layers) {
    for (const he::LayerPtr& l : layers)
        if (const auto tied = l->tiedWeight()) l->setTied(*layers.at(static_cast<size_t>(tied->owner_layer))->named_parameters().find(tied->owner_param));
}

std::map<std::string, Tensor> named(const std::vector<he::LayerPtr>& layers, bool grads) {
    std::map<std::string, Tensor> out;
    for (size_t i = 0; i < layers.size(); ++i)
        for (const auto& p : layers[i]->named_parameters()) {
            const Tensor& t = p.value();
            out["L" + std::to_string(i) + "." + p.key()] = grads ? (t.grad().defined() ? t.grad().clone() : torch::zeros_like(t)) : t.detach().clone();
        }
    return out;
}

std::map<std::string, he::ParamSplit> splitsOf(const std::vector<he::LayerPtr>& layers) {
    std::map<std::string, he::ParamSplit> out;
    for (size_t i = 0; i < layers.size(); ++i)
        for (const auto& [name, split] : layers[i]->tensorParallelSplits()) out["L" + std::to_string(i) + "." + name] = split;
    return out;
}

double maxDiff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

struct Expected {
    int forward = 0;   // activation collectives of one forward (pairs with sequence parallelism)
    int backward = 0;  // and of one backward
};

void compareModel(const std::string& zoo, const std::string& overrides, bool sp, Expected expected) {
    constexpr int kRanks = 2;
    const std::string what = zoo + (sp ? " tp2 + sequence parallel" : " tp2");
    hippie::ModelSpec spec;
    spec.zoo = zoo;
    hippie::applyOverrideText(spec, overrides);
    const auto model = he::makeZooTrainable(spec);
    const int n = model->layerCount();
    const he::Batch batch = model->synthetic(kSamples, kSeed, 0);

    // The whole model.
    auto whole = model->layers(0, n - 1, kSeed, torch::kCPU);
    bindTied(whole);
    he::Live live{{he::kDataKey, batch.inputs}};
    for (const he::LayerPtr& l : whole) l->run(live);
    const Tensor ref_loss = model->loss(live, batch.targets);
    ref_loss.backward();
    const auto ref_params = named(whole, false);
    const auto ref_grads = named(whole, true);

    // The split model, one thread a rank.
    auto shared = std::make_shared<ThreadGroup::Shared>(kRanks);
    std::vector<he::TpContext> ctx(kRanks);
    std::vector<std::vector<he::LayerPtr>> ranks(kRanks);
    for (int k = 0; k < kRanks; ++k) {
        ctx[static_cast<size_t>(k)] = he::TpContext{std::make_shared<ThreadGroup>(k, kRanks, shared), sp};
        ranks[static_cast<size_t>(k)] = model->tensorParallelLayers(0, n - 1, kSeed, torch::kCPU, ctx[static_cast<size_t>(k)]);
        bindTied(ranks[static_cast<size_t>(k)]);
    }
    std::vector<double> losses(kRanks);
    std::vector<he::TpGroup::Counts> fwd(kRanks), bwd(kRanks);
    std::vector<std::string> errors(kRanks);
    std::vector<std::thread> threads;
    for (int k = 0; k < kRanks; ++k)
        threads.emplace_back([&, k] {
            const size_t i = static_cast<size_t>(k);
            try {
                he::TpGroup& g = *ctx[i].group;
                he::Live x{{he::kDataKey, batch.inputs}};
                for (const he::LayerPtr& l : ranks[i]) l->run(x);
                const Tensor loss = model->tensorParallelLoss(x, batch.targets, ctx[i]);
                fwd[i] = g.counts();
                g.resetCounts();
                loss.backward();
                bwd[i] = g.counts();
                losses[i] = loss.item<double>();
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    for (int k = 0; k < kRanks; ++k)
        if (!errors[static_cast<size_t>(k)].empty()) {
            check(false, what + " rank " + std::to_string(k) + ": " + errors[static_cast<size_t>(k)]);
            return;
        }

    const auto splits = splitsOf(ranks[0]);
    std::vector<std::map<std::string, Tensor>> params, grads;
    for (const auto& r : ranks) {
        params.push_back(named(r, false));
        grads.push_back(named(r, true));
    }
    check(params[0].size() == ref_params.size(), what + ": " + std::to_string(params[0].size()) + " parameters a rank, the whole model " +
                                                     std::to_string(ref_params.size()));
    double param_diff = 0, grad_diff = 0, rank_diff = 0;
    std::string worst;
    for (const auto& [name, ref] : ref_params) {
        if (!params[0].count(name)) {
            check(false, what + ": no parameter " + name + " on the ranks");
            continue;
        }
        Tensor p, g;
        auto it = splits.find(name);
        if (it != splits.end()) {
            p = he::wholeOf({params[0][name], params[1][name]}, it->second);
            g = he::wholeOf({grads[0][name], grads[1][name]}, it->second);
        } else {
            p = params[0][name];
            rank_diff = std::max(rank_diff, maxDiff(params[0][name], params[1][name]));
            if (sp) {
                g = grads[0][name] + grads[1][name];  // partial sums over each rank's tokens
            } else {
                g = grads[0][name];
                rank_diff = std::max(rank_diff, maxDiff(grads[0][name], grads[1][name]));
            }
        }
        if (p.sizes() != ref.sizes()) {
            check(false, what + ": " + name + " put together has shape " + c10::str(p.sizes()) + ", the whole model's " + c10::str(ref.sizes()));
            continue;
        }
        param_diff = std::max(param_diff, maxDiff(p, ref));
        const double d = maxDiff(g, ref_grads.at(name)) / std::max(1.0, ref_grads.at(name).abs().max().item<double>());
        if (d > grad_diff) {
            grad_diff = d;
            worst = name;
        }
    }
    check(param_diff == 0, what + ": the ranks' slices are exactly the whole model's parameters (max diff " + num(param_diff) + ")");
    check(rank_diff == 0, what + ": whole parameters (and, without sequence parallelism, their gradients) identical on every rank (max diff " +
                              num(rank_diff) + ")");
    check(grad_diff < 1e-5, what + ": gradients equal the whole model's (largest relative difference " + num(grad_diff) + " in " +
                                worst + ")");
    const double ref_l = ref_loss.item<double>();
    check(std::fabs(losses[0] - ref_l) < 1e-5 && losses[0] == losses[1],
          what + ": loss " + std::to_string(losses[0]) + " / " + std::to_string(losses[1]) + ", whole model " + std::to_string(ref_l));
    auto countText = [](const he::TpGroup::Counts& c) {
        return std::to_string(c.all_reduces) + " all-reduces, " + std::to_string(c.reduce_scatters) + " reduce-scatters, " +
               std::to_string(c.all_gathers) + " all-gathers, " + std::to_string(c.loss_all_reduces) + " cross-entropy all-reduces";
    };
    const bool fwd_ok = sp ? fwd[0].all_reduces == 0 && fwd[0].reduce_scatters + fwd[0].all_gathers == 2 * expected.forward
                           : fwd[0].all_reduces == expected.forward && fwd[0].reduce_scatters == 0 && fwd[0].all_gathers == 0;
    const bool bwd_ok = sp ? bwd[0].all_reduces == 0 && bwd[0].reduce_scatters + bwd[0].all_gathers == 2 * expected.backward
                           : bwd[0].all_reduces == expected.backward && bwd[0].reduce_scatters == 0 && bwd[0].all_gathers == 0;
    check(fwd_ok && fwd[0] == fwd[1], what + ": forward ran " + countText(fwd[0]) + " (expected " + std::to_string(expected.forward) +
                                          (sp ? " pairs" : "") + ")");
    check(bwd_ok && bwd[0] == bwd[1] && bwd[0].loss_all_reduces == 0,
          what + ": backward ran " + countText(bwd[0]) + " (expected " + std::to_string(expected.backward) + (sp ? " pairs" : "") + ")");
}

// A block's input gradient, then (over the kept graph) its weight gradients: the second pass
// reuses what the first communicated.
void secondBackward() {
    hippie::ModelSpec spec;
    spec.zoo = "gpt2-small";
    hippie::applyOverrideText(spec, "layers=1,d_model=32,heads=4,vocab=64,seq_len=8");
    const auto model = he::makeZooTrainable(spec);
    auto whole = model->layers(1, 1, kSeed, torch::kCPU);
    torch::manual_seed(3);
    const Tensor x0 = torch::randn({2, 8, 32});
    const Tensor g0 = torch::randn({2, 8, 32});
    he::Live live{{"embed.embed_dropout", x0.clone().requires_grad_(true)}};  // the embedding's output, after its dropout
    whole[0]->run(live);
    live.at("block0.mlp_residual").backward(g0);
    const auto ref = named(whole, true);

    auto shared = std::make_shared<ThreadGroup::Shared>(2);
    std::vector<std::vector<he::LayerPtr>> ranks(2);
    std::vector<he::TpContext> ctx(2);
    for (int k = 0; k < 2; ++k) {
        ctx[static_cast<size_t>(k)] = he::TpContext{std::make_shared<ThreadGroup>(k, 2, shared), false};
        ranks[static_cast<size_t>(k)] = model->tensorParallelLayers(1, 1, kSeed, torch::kCPU, ctx[static_cast<size_t>(k)]);
    }
    std::vector<int> first(2), second(2);
    std::vector<Tensor> input_grad(2);
    std::vector<std::thread> threads;
    for (int k = 0; k < 2; ++k)
        threads.emplace_back([&, k] {
            const size_t i = static_cast<size_t>(k);
            const Tensor x = x0.clone().requires_grad_(true);
            he::Live l{{"embed.embed_dropout", x}};
            ranks[i][0]->run(l);
            const Tensor y = l.at("block0.mlp_residual");
            ctx[i].group->resetCounts();
            input_grad[i] = torch::autograd::grad({y}, {x}, {g0}, /*retain_graph=*/true)[0];
            first[i] = ctx[i].group->counts().all_reduces;
            ctx[i].group->resetCounts();
            y.backward(g0);
            second[i] = ctx[i].group->counts().all_reduces;
        });
    for (auto& t : threads) t.join();
    const auto splits = splitsOf(ranks[0]);
    double diff = 0;
    for (const auto& [name, r] : ref) {
        const auto it = splits.find(name);
        const Tensor g = it == splits.end() ? ranks[0][0]->named_parameters().find(name.substr(3))->grad()
                                            : he::wholeOf({ranks[0][0]->named_parameters().find(name.substr(3))->grad(),
                                                           ranks[1][0]->named_parameters().find(name.substr(3))->grad()},
                                                          it->second);
        diff = std::max(diff, maxDiff(g, r));
    }
    const Tensor ref_input = live.at("embed.embed_dropout").grad();
    check(first[0] == 2 && second[0] == 0 && first[1] == 2 && second[1] == 0,
          "gpt block tp2: the input-gradient pass ran " + std::to_string(first[0]) + " all-reduces, the weight pass over the kept graph " +
              std::to_string(second[0]) + " (expected 2 and 0)");
    check(maxDiff(input_grad[0], ref_input) < 1e-5 && diff < 1e-5,
          "gpt block tp2: input and weight gradients of the two passes equal the whole block's (max diff " + num(diff) + ")");
}

void dropoutMasks() {
    const double p = 0.1;
    const he::DropoutStream stream{7, 3, 4};
    const Tensor x = torch::randn({4, 64, 256});
    const Tensor whole = he::dropoutKeep(x, p, {"block0.mlp_dropout", 0}, stream);
    const double kept = whole.to(torch::kDouble).mean().item<double>();
    check(std::fabs(kept - (1 - p)) < 0.005, "a mask keeps " + std::to_string(kept) + " of 65536 elements at p 0.1");
    bool slices = true;
    for (int k = 0; k < 4; ++k) {
        const Tensor part = he::dropoutKeep(x.narrow(1, k * 16, 16), p, {"block0.mlp_dropout", k * 16 * 256}, stream);
        slices = slices && torch::equal(part, whole.narrow(1, k * 16, 16));
    }
    check(slices, "sequence-parallel ranks draw their part of the sequence's mask");
    const Tensor probs = torch::rand({2, 8, 16, 16});
    const Tensor heads = he::dropoutKeep(probs, p, {"block0.attn_dropout", 0}, stream);
    const Tensor upper = he::dropoutKeep(probs.narrow(1, 4, 4), p, {"block0.attn_dropout", 4 * 16 * 16}, stream);
    check(torch::equal(upper, heads.narrow(1, 4, 4)), "a tensor-parallel rank draws its heads' part of the mask");
    const Tensor later = he::dropoutKeep(x.narrow(0, 2, 2), p, {"block0.mlp_dropout", 0}, he::DropoutStream{7, 3, 6});
    check(torch::equal(later, whole.narrow(0, 2, 2)), "a micro-batch from sample 2 on draws those samples' masks");
    auto differs = [&](const std::string& op, he::DropoutStream other) {
        return !torch::equal(he::dropoutKeep(x, p, {op, 0}, other), whole);
    };
    check(differs("block1.mlp_dropout", stream) && differs("block0.mlp_dropout", {7, 4, 4}) && differs("block0.mlp_dropout", {8, 3, 4}),
          "another op, step or seed draws another mask");
    check(!torch::equal(whole[0], whole[1]), "each sample its own mask");

    const Tensor leaf = x.clone().requires_grad_(true);
    he::applyDropout(leaf, whole, p).sum().backward();
    check(torch::allclose(leaf.grad(), whole.to(torch::kFloat) / (1 - p)), "backward passes the gradient where kept, scaled by 1 / (1 - p)");
    {
        const he::DropoutScope scope(stream);
        check(torch::equal(he::dropout(x, p, {"block0.mlp_dropout", 0}, true), he::applyDropout(x, whole, p)) &&
                  torch::equal(he::dropout(x, p, {"block0.mlp_dropout", 0}, false), x),
              "dropout draws from the scope's stream while training, and is the identity otherwise");
    }

    // The attention core, stored and recomputed, with dropout on its probabilities.
    const Tensor q0 = torch::randn({2, 4, 16, 8}), k0 = torch::randn({2, 4, 16, 8}), v0 = torch::randn({2, 4, 16, 8});
    const Tensor g = torch::randn({2, 4, 16, 8});
    std::vector<Tensor> out, grads;
    for (const bool recompute : {false, true}) {
        const Tensor q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true), v = v0.clone().requires_grad_(true);
        Tensor y;
        {
            const he::DropoutScope scope(stream);
            y = he::attentionCore(q, k, v, true, recompute, he::CoreDropout{0.25, {"block0.attn_dropout", 0}});
        }
        (y * g).sum().backward();  // outside the scope: the recomputed core draws from what its forward saved
        out.push_back(y.detach());
        for (const Tensor& t : {q, k, v}) grads.push_back(t.grad());
    }
    const Tensor plain = he::attentionCore(q0, k0, v0, true, false);
    check(torch::equal(out[0], out[1]) && !torch::allclose(out[0], plain), "the recomputed core's output is the stored one's, dropout included");
    double grad_diff = 0;
    for (int i = 0; i < 3; ++i) grad_diff = std::max(grad_diff, (grads[i] - grads[i + 3]).abs().max().item<double>());
    check(grad_diff == 0, "the recomputed core's gradients are the stored one's, dropout included (max diff " + num(grad_diff) + ")");
}

}  // namespace

int main() {
    torch::set_num_threads(1);
    const std::string gpt = "layers=2,d_model=32,heads=4,vocab=96,seq_len=8";
    // embed 1 + 2 a block forward; 2 a block + the LM head's input backward.
    compareModel("gpt2-small", gpt, false, {5, 5});
    compareModel("gpt2-small", gpt, true, {5, 5});
    compareModel("bert-base", "layers=2,d_model=32,heads=4,vocab=96,seq_len=8", false, {5, 5});
    // Forward: embed 2 (source, target) + encoder 2 + decoder 3 (self, cross, MLP); backward:
    // encoder 2 + decoder 4 (self QKV, cross Q, cross K/V over the encoder output, fc1) + head 1.
    compareModel("transformer-big", "layers=1,d_model=32,heads=4,d_ff=64,vocab=96,seq_len=8", false, {7, 7});
    secondBackward();
    dropoutMasks();
    // A tp that does not divide the heads is refused, naming them.
    hippie::ModelSpec spec;
    spec.zoo = "gpt2-small";
    hippie::applyOverrideText(spec, "layers=1,d_model=36,heads=3,vocab=96,seq_len=8");
    const std::string why = he::makeZooTrainable(spec)->tensorParallelProblem(2, false);
    check(why.find("attention heads (3)") != std::string::npos, "tp 2 over 3 heads refused: " + why);
    std::cout << (failures == 0 ? "all passed" : std::to_string(failures) + " failed") << "\n";
    return failures == 0 ? 0 : 1;
}
