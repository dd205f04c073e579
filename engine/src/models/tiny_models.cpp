#include "engine/src/models/tiny_models.h"

#include "engine/src/models/attention_core.h"

#include <cmath>

namespace hippie::engine {

namespace nn = torch::nn;
using torch::Tensor;

namespace {

// Separate streams of randomness for parameters and data, so neither shifts the other.
constexpr uint64_t kLayerSeedStride = 7919;
constexpr uint64_t kDataSeedStride = 1000003;
constexpr uint64_t kTeacherSeed = 424242;

// ---- transformer pieces ---------------------------------------------------------------------

Tensor attend(const Tensor& qkv, int64_t heads, bool causal, bool recompute_core) {
    const int64_t b = qkv.size(0), s = qkv.size(1), d = qkv.size(2) / 3, dh = d / heads;
    auto parts = qkv.chunk(3, 2);
    auto split = [&](const Tensor& t) { return t.reshape({b, s, heads, dh}).transpose(1, 2); };
    const Tensor ctx = attentionCore(split(parts[0]), split(parts[1]), split(parts[2]), causal, recompute_core);
    return ctx.transpose(1, 2).reshape({b, s, d});
}

class GptEmbed : public LayerModule {
public:
    GptEmbed(const TinyConfig& c, int seq)
        : tok(register_module("token_embed", nn::Embedding(c.vocab, c.d_model))),
          pos(register_module("position_embed", nn::Embedding(seq, c.d_model))) {}
    Tensor forward(Tensor x) override {
        const Tensor positions = torch::arange(x.size(1), x.options().dtype(torch::kLong));
        return tok->forward(x) + pos->forward(positions).unsqueeze(0);
    }
    nn::Embedding tok, pos;
};

class TransformerBlock : public LayerModule {
public:
    TransformerBlock(const TinyConfig& c, bool pre_norm, bool causal)
        : heads_(c.heads), pre_norm_(pre_norm), causal_(causal),
          ln1(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))),
          qkv(register_module("attn_qkv", nn::Linear(c.d_model, 3 * c.d_model))),
          proj(register_module("attn_proj", nn::Linear(c.d_model, c.d_model))),
          ln2(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))),
          fc1(register_module("mlp_fc1", nn::Linear(c.d_model, 4 * c.d_model))),
          fc2(register_module("mlp_fc2", nn::Linear(4 * c.d_model, c.d_model))) {}
    Tensor forward(Tensor x) override {
        if (pre_norm_) {
            x = x + attention(ln1->forward(x));
            return x + mlp(ln2->forward(x));
        }
        x = ln1->forward(x + attention(x));
        return ln2->forward(x + mlp(x));
    }
    bool setSelectiveRecompute(bool on) override {
        recompute_core_ = on;
        return true;
    }

private:
    Tensor attention(const Tensor& x) { return proj->forward(attend(qkv->forward(x), heads_, causal_, recompute_core_)); }
    Tensor mlp(const Tensor& x) { return fc2->forward(torch::gelu(fc1->forward(x))); }
    int64_t heads_;
    bool pre_norm_, causal_;
    bool recompute_core_ = false;  // selective recomputation

public:
    nn::LayerNorm ln1;
    nn::Linear qkv, proj;
    nn::LayerNorm ln2;
    nn::Linear fc1, fc2;
};

class GptHead : public LayerModule {
public:
    explicit GptHead(const TinyConfig& c)
        : ln(register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))),
          lm(register_module("lm_head", nn::Linear(nn::LinearOptions(c.d_model, c.vocab).bias(false)))) {}
    Tensor forward(Tensor x) override { return lm->forward(ln->forward(x)); }
    nn::LayerNorm ln;
    nn::Linear lm;
};

// BERT input: token ids; segment ids are a fixed pattern (first half A, second half B).
class BertEmbed : public LayerModule {
public:
    BertEmbed(const TinyConfig& c, int seq)
        : words(register_module("word_embed", nn::Embedding(c.vocab, c.d_model))),
          pos(register_module("position_embed", nn::Embedding(seq, c.d_model))),
          segs(register_module("segment_embed", nn::Embedding(2, c.d_model))),
          norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))) {}
    Tensor forward(Tensor x) override {
        const int64_t s = x.size(1);
        const Tensor positions = torch::arange(s, x.options().dtype(torch::kLong));
        const Tensor segments = (positions >= s / 2).to(torch::kLong);
        return norm->forward(words->forward(x) + (pos->forward(positions) + segs->forward(segments)).unsqueeze(0));
    }
    nn::Embedding words, pos, segs;
    nn::LayerNorm norm;
};

// Output: per sample, the MLM logits (seq x vocab, flattened) followed by the 2 NSP logits.
class BertHead : public LayerModule {
public:
    explicit BertHead(const TinyConfig& c)
        : pooler(register_module("pooler", nn::Linear(c.d_model, c.d_model))),
          nsp(register_module("nsp", nn::Linear(c.d_model, 2))),
          transform(register_module("mlm_transform", nn::Linear(c.d_model, c.d_model))),
          norm(register_module("mlm_norm", nn::LayerNorm(nn::LayerNormOptions({c.d_model})))),
          decoder(register_module("mlm_decoder", nn::Linear(c.d_model, c.vocab))) {}
    Tensor forward(Tensor x) override {
        const Tensor next = nsp->forward(torch::tanh(pooler->forward(x.select(1, 0))));
        const Tensor mlm = decoder->forward(norm->forward(torch::gelu(transform->forward(x))));
        return torch::cat({mlm.flatten(1), next}, 1);
    }
    nn::Linear pooler, nsp, transform;
    nn::LayerNorm norm;
    nn::Linear decoder;
};

// ---- MLP and CNN pieces ---------------------------------------------------------------------

class Dense : public LayerModule {
public:
    Dense(int64_t in, int64_t out, bool relu, bool flatten)
        : relu_(relu), flatten_(flatten), linear(register_module("linear", nn::Linear(in, out))) {}
    Tensor forward(Tensor x) override {
        if (flatten_) x = x.flatten(1);
        x = linear->forward(x);
        return relu_ ? torch::relu(x) : x;
    }
    bool relu_, flatten_;
    nn::Linear linear;
};

nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride, bool bias) {
    return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(bias));
}

class Stem : public LayerModule {
public:
    explicit Stem(const TinyConfig& c)
        : conv(register_module("conv1", conv3x3(3, c.channels, 1, false))), bn(register_module("bn1", nn::BatchNorm2d(c.channels))) {}
    Tensor forward(Tensor x) override { return torch::relu(bn->forward(conv->forward(x))); }
    nn::Conv2d conv;
    nn::BatchNorm2d bn;
};

class BasicBlock : public LayerModule {
public:
    BasicBlock(int64_t in, int64_t out, int64_t stride)
        : conv1(register_module("conv1", conv3x3(in, out, stride, false))), bn1(register_module("bn1", nn::BatchNorm2d(out))),
          conv2(register_module("conv2", conv3x3(out, out, 1, false))), bn2(register_module("bn2", nn::BatchNorm2d(out))) {
        if (stride != 1 || in != out) {
            down = register_module("downsample", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
            down_bn = register_module("downsample_bn", nn::BatchNorm2d(out));
        }
    }
    Tensor forward(Tensor x) override {
        Tensor y = bn2->forward(conv2->forward(torch::relu(bn1->forward(conv1->forward(x)))));
        const Tensor shortcut = down ? down_bn->forward(down->forward(x)) : x;
        return torch::relu(y + shortcut);
    }
    nn::Conv2d conv1;
    nn::BatchNorm2d bn1;
    nn::Conv2d conv2;
    nn::BatchNorm2d bn2;
    nn::Conv2d down{nullptr};
    nn::BatchNorm2d down_bn{nullptr};
};

class ResNetHead : public LayerModule {
public:
    ResNetHead(int64_t channels, int64_t classes) : fc(register_module("fc", nn::Linear(channels, classes))) {}
    Tensor forward(Tensor x) override { return fc->forward(x.mean({2, 3})); }
    nn::Linear fc;
};

class VggConv : public LayerModule {
public:
    VggConv(int64_t in, int64_t out) : conv(register_module("conv", conv3x3(in, out, 1, true))) {}
    Tensor forward(Tensor x) override { return torch::max_pool2d(torch::relu(conv->forward(x)), 2); }
    nn::Conv2d conv;
};

LayerPtr buildLayer(const TinyConfig& c, int seq, int i) {
    const int n = c.blocks;
    if (c.family == "gpt" || c.family == "bert") {
        const bool gpt = c.family == "gpt";
        if (i == 0) return gpt ? LayerPtr(std::make_shared<GptEmbed>(c, seq)) : LayerPtr(std::make_shared<BertEmbed>(c, seq));
        if (i <= n) return std::make_shared<TransformerBlock>(c, gpt, gpt);
        return gpt ? LayerPtr(std::make_shared<GptHead>(c)) : LayerPtr(std::make_shared<BertHead>(c));
    }
    if (c.family == "mlp") return std::make_shared<Dense>(i == 0 ? c.inputs : c.hidden, i < n ? c.hidden : c.classes, i < n, false);
    if (c.family == "resnet") {
        if (i == 0) return std::make_shared<Stem>(c);
        if (i <= n) {
            const int b = i - 1;
            const int64_t out = int64_t{c.channels} << (b / 2);
            const int64_t in = b == 0 ? c.channels : int64_t{c.channels} << ((b - 1) / 2);
            return std::make_shared<BasicBlock>(in, out, (b > 0 && b % 2 == 0) ? 2 : 1);
        }
        return std::make_shared<ResNetHead>(int64_t{c.channels} << ((n - 1) / 2), c.classes);
    }
    // vgg: conv layers, then fc6, fc7, fc8
    if (i < n) return std::make_shared<VggConv>(i == 0 ? 3 : int64_t{c.channels} << (i - 1), int64_t{c.channels} << i);
    const int64_t side = c.image_side >> n;
    const int64_t flat = (int64_t{c.channels} << (n - 1)) * side * side;
    if (i == n) return std::make_shared<Dense>(flat, c.hidden, true, true);
    if (i == n + 1) return std::make_shared<Dense>(c.hidden, c.hidden, true, false);
    return std::make_shared<Dense>(c.hidden, c.classes, false, false);
}

int64_t seqOf(const TinyConfig& c, int seq_len) { return seq_len > 0 ? seq_len : c.default_seq_len; }

}  // namespace

std::vector<LayerPtr> buildTinyLayers(const TinyConfig& cfg, int seq_len, int first, int last, uint64_t seed) {
    std::vector<LayerPtr> layers;
    const int seq = static_cast<int>(seqOf(cfg, seq_len));
    for (int i = first; i <= last; ++i) {
        torch::manual_seed(seed * kLayerSeedStride + static_cast<uint64_t>(i));
        layers.push_back(buildLayer(cfg, seq, i));
    }
    return layers;
}

Batch syntheticBatch(const TinyConfig& c, int seq_len, int samples, uint64_t seed, int step) {
    torch::manual_seed(seed * kDataSeedStride + static_cast<uint64_t>(step) + 1);
    const int64_t n = samples, s = seqOf(c, seq_len);
    Batch b;
    if (c.family == "gpt") {
        // Arithmetic token sequences: the next token is learnable from the previous two.
        const Tensor a = torch::randint(1, c.vocab, {n, 1}, torch::kLong);
        const Tensor start = torch::randint(0, c.vocab, {n, 1}, torch::kLong);
        const Tensor seq = (start + a * torch::arange(s + 1, torch::kLong).unsqueeze(0)).remainder(c.vocab);
        b.inputs = seq.narrow(1, 0, s).contiguous();
        b.targets = seq.narrow(1, 1, s).contiguous();
    } else if (c.family == "bert") {
        b.inputs = torch::randint(0, c.vocab, {n, s}, torch::kLong);
        const Tensor nsp = b.inputs.select(1, 0).remainder(2).unsqueeze(1);
        b.targets = torch::cat({b.inputs, nsp}, 1);
    } else {
        b.inputs = c.family == "mlp" ? torch::randn({n, int64_t{c.inputs}}) : torch::randn({n, 3, int64_t{c.image_side}, int64_t{c.image_side}});
        // Labels from a fixed random teacher, so the task is learnable.
        torch::manual_seed(kTeacherSeed);
        const int64_t features = b.inputs.flatten(1).size(1);
        const Tensor teacher = torch::randn({features, int64_t{c.classes}});
        b.targets = torch::matmul(b.inputs.flatten(1), teacher).argmax(1);
    }
    return b;
}

Tensor tinyLoss(const TinyConfig& c, int seq_len, const Tensor& output, const Tensor& targets) {
    if (c.family == "gpt") return torch::nn::functional::cross_entropy(output.reshape({-1, c.vocab}), targets.reshape({-1}));
    if (c.family == "bert") {
        const int64_t s = seqOf(c, seq_len);
        const Tensor mlm = output.narrow(1, 0, s * c.vocab).reshape({-1, c.vocab});
        const Tensor nsp = output.narrow(1, s * c.vocab, 2);
        return torch::nn::functional::cross_entropy(mlm, targets.narrow(1, 0, s).reshape({-1})) +
               torch::nn::functional::cross_entropy(nsp, targets.select(1, s));
    }
    return torch::nn::functional::cross_entropy(output, targets);
}

}  // namespace hippie::engine
