// The zoo's models as Trainables: layers from zoo_layers.h, seeded synthetic data and the loss
// each Graph's head implies.
#include "engine/src/models/trainable.h"
#include "engine/src/models/zoo_layers.h"

namespace hippie::engine {

using torch::Tensor;
namespace F = torch::nn::functional;

namespace {

// Separate streams of randomness for parameters and data, so neither shifts the other.
constexpr uint64_t kLayerSeedStride = 7919;
constexpr uint64_t kDataSeedStride = 1000003;
constexpr uint64_t kTeacherSeed = 424242;
// Image labels come from a fixed random projection of the image pooled to this side, so the
// teacher stays small at any image size.
constexpr int64_t kTeacherSide = 4;
// Inception-v3's auxiliary loss weight (Szegedy et al. 2016, torchvision's reference recipe).
constexpr double kInceptionAuxWeight = 0.4;

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// Arithmetic token sequences (the next token is learnable from the previous two), s + 1 long.
Tensor arithmeticTokens(int64_t n, int64_t s, int64_t vocab) {
    const Tensor step = torch::randint(1, vocab, {n, 1}, torch::kLong);
    const Tensor start = torch::randint(0, vocab, {n, 1}, torch::kLong);
    return (start + step * torch::arange(s + 1, torch::kLong).unsqueeze(0)).remainder(vocab);
}

Batch languageModel(int64_t n, int64_t s, int64_t vocab) {
    const Tensor seq = arithmeticTokens(n, s, vocab);
    return {seq.narrow(1, 0, s).contiguous(), seq.narrow(1, 1, s).contiguous()};
}

// Source tokens and a target sequence derived from them: inputs [n, 2, s] (source, target
// shifted right), targets [n, s] (the next target token).
Batch translation(int64_t n, int64_t s, int64_t vocab) {
    const Tensor source = torch::randint(0, vocab, {n, s}, torch::kLong);
    const Tensor target = torch::cat({source.narrow(1, 0, 1), source.flip(1)}, 1);  // s + 1 tokens
    return {torch::stack({source, target.narrow(1, 0, s)}, 1).contiguous(), target.narrow(1, 1, s).contiguous()};
}

Batch classification(const Tensor& inputs, int64_t classes) {
    Tensor features = inputs.dim() == 4 ? torch::adaptive_avg_pool2d(inputs, {kTeacherSide, kTeacherSide}).flatten(1) : inputs.flatten(1);
    torch::manual_seed(kTeacherSeed);
    const Tensor teacher = torch::randn({features.size(1), classes});
    return {inputs, torch::matmul(features, teacher).argmax(1)};
}

Tensor tokenLoss(const Tensor& logits, const Tensor& targets) {
    return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

// The same over logits split by vocabulary (this rank's columns).
Tensor tokenLoss(const Tensor& logits, const Tensor& targets, const TpContext& tp) {
    if (!tp.enabled()) return tokenLoss(logits, targets);
    return vocabParallelCrossEntropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), *tp.group);
}

class ZooTrainable : public Trainable {
public:
    explicit ZooTrainable(const ModelSpec& spec) : name_(spec.zoo), arch_(resolveArchitecture(spec)), layers_(zooLayerCount(arch_)) {}
    std::string name() const override { return name_; }
    int layerCount() const override { return layers_; }
    bool chained() const override { return false; }
    std::vector<LayerPtr> layers(int first, int last, uint64_t seed, const torch::Device& device) const override {
        return tensorParallelLayers(first, last, seed, device, TpContext{});
    }
    std::string tensorParallelProblem(int tp, bool sequence_parallel) const override {
        const std::string why = engine::tensorParallelProblem(arch_, tp, sequence_parallel);
        return why.empty() ? "" : name_ + ": " + why;
    }
    std::vector<LayerPtr> tensorParallelLayers(int first, int last, uint64_t seed, const torch::Device& device,
                                               const TpContext& tp) const override {
        if (const std::string why = tensorParallelProblem(tp.size(), tp.sequence_parallel); !why.empty()) throw Error(why);
        std::vector<LayerPtr> out;
        for (int i = first; i <= last; ++i) {
            // The whole layer from the layer's seed, then this rank's slices of it.
            torch::manual_seed(seed * kLayerSeedStride + static_cast<uint64_t>(i));
            out.push_back(tp.enabled() ? buildZooLayer(arch_, i, tp) : buildZooLayer(arch_, i));
            out.back()->to(device);
        }
        return out;
    }
    Batch synthetic(int samples, uint64_t seed, int step) const override {
        torch::manual_seed(seed * kDataSeedStride + static_cast<uint64_t>(step) + 1);
        const int64_t n = samples;
        return std::visit(
            Overloaded{[&](const GptArch& a) { return languageModel(n, a.seq_len, a.vocab); },
                       [&](const BertArch& a) {
                           Batch b;
                           b.inputs = torch::randint(0, a.vocab, {n, a.seq_len}, torch::kLong);
                           b.targets = bertTargets(b.inputs);
                           return b;
                       },
                       [&](const TransformerArch& a) { return translation(n, a.seq_len, a.vocab); },
                       [&](const GnmtArch& a) { return translation(n, a.seq_len, a.vocab); },
                       [&](const ResNetArch& a) { return classification(torch::randn({n, a.in_channels, a.image_side, a.image_side}), a.classes); },
                       [&](const VggArch& a) { return classification(torch::randn({n, a.in_channels, a.image_side, a.image_side}), a.classes); },
                       [&](const InceptionArch& a) {
                           return classification(torch::randn({n, a.in_channels, a.image_side, a.image_side}), a.classes);
                       },
                       [&](const MlpArch& a) { return classification(torch::randn({n, a.inputs}), a.classes); }},
            arch_);
    }
    // GPT and BERT read token-id files (data.h); the other models read no token ids.
    int64_t vocabSize() const override {
        return std::visit(Overloaded{[](const GptArch& a) { return a.vocab; }, [](const BertArch& a) { return a.vocab; },
                                     [](const auto&) { return int64_t{0}; }},
                          arch_);
    }
    int64_t sequenceLength() const override {
        return std::visit(Overloaded{[](const GptArch& a) { return a.seq_len; }, [](const BertArch& a) { return a.seq_len; },
                                     [](const auto&) { return int64_t{0}; }},
                          arch_);
    }
    Batch tokenBatch(const Tensor& windows) const override {
        if (vocabSize() == 0) return Trainable::tokenBatch(windows);
        return tokenWindowBatch(windows, sequenceLength(), std::holds_alternative<GptArch>(arch_));
    }
    Tensor loss(const Tensor&, const Tensor&) const override {
        TORCH_CHECK(false, "zoo model ", name_, ": the loss reads the live tensors of the head");
        return Tensor();
    }
    Tensor loss(const Live& live, const Tensor& targets) const override { return tensorParallelLoss(live, targets, TpContext{}); }
    // Split models' token logits are split by vocabulary; everything else is whole on every rank.
    Tensor tensorParallelLoss(const Live& live, const Tensor& targets, const TpContext& tp) const override {
        return std::visit(
            Overloaded{[&](const GptArch&) { return tokenLoss(live.at("head.lm_head"), targets, tp); },
                       [&](const BertArch& a) {
                           return tokenLoss(live.at("head.mlm_decoder"), targets.narrow(1, 0, a.seq_len), tp) +
                                  F::cross_entropy(live.at("head.nsp"), targets.select(1, a.seq_len));
                       },
                       [&](const TransformerArch&) { return tokenLoss(live.at("head.output_proj"), targets, tp); },
                       [&](const GnmtArch&) { return tokenLoss(live.at("head.classifier"), targets); },
                       [&](const ResNetArch&) { return F::cross_entropy(live.at("head.fc"), targets); },
                       [&](const VggArch&) { return F::cross_entropy(live.at("fc8.fc"), targets); },
                       [&](const InceptionArch& a) {
                           Tensor l = F::cross_entropy(live.at("head.fc"), targets);
                           if (a.aux_logits) l = l + kInceptionAuxWeight * F::cross_entropy(live.at("head.aux_fc"), targets);
                           return l;
                       },
                       [&](const MlpArch& a) { return F::cross_entropy(live.at("fc" + std::to_string(a.hidden_layers) + ".linear"), targets); }},
            arch_);
    }

private:
    std::string name_;
    Architecture arch_;
    int layers_;
};

}  // namespace

Tensor bertTargets(const Tensor& inputs) { return torch::cat({inputs, inputs.select(1, 0).remainder(2).unsqueeze(1)}, 1); }

Batch tokenWindowBatch(const Tensor& windows, int64_t s, bool next_token) {
    Batch b;
    b.inputs = windows.narrow(1, 0, s).contiguous();
    b.targets = next_token ? windows.narrow(1, 1, s).contiguous() : bertTargets(b.inputs);
    return b;
}

std::unique_ptr<Trainable> makeZooTrainable(const ModelSpec& spec) { return std::make_unique<ZooTrainable>(spec); }

}  // namespace hippie::engine
