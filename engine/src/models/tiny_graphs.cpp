#include "engine/src/models/tiny_graphs.h"

#include <cmath>

#include "planners/common/error.h"
#include "planners/model/zoo_builder.h"

namespace hippie::engine {

using zoo::GraphBuilder;
using zoo::OpCost;
using zoo::Tensor;

const std::vector<TinyConfig>& tinyModels() {
    // Sizes chosen so a step of 16 samples takes milliseconds on one CPU core.
    static const std::vector<TinyConfig> models = {
        {"gpt-tiny", "gpt", "GPT-style decoder: 4 pre-LN blocks, d_model 32, 2 heads, vocabulary 64, 16 tokens", 16,
         64, 32, 2, 4, 0, 0, 0, 0, 0},
        {"bert-tiny", "bert", "BERT-style encoder: 2 post-LN blocks, d_model 32, 2 heads, vocabulary 64, 16 tokens, MLM + NSP", 16,
         64, 32, 2, 2, 0, 0, 0, 0, 0},
        {"mlp-tiny", "mlp", "MLP: 32 inputs, 4 ReLU hidden layers of 64, 10 classes", 0, 0, 0, 0, 4, 32, 64, 10, 0, 0},
        {"resnet-tiny", "resnet", "ResNet: 3x3 stem of 8 channels, 4 basic blocks (8, 8, 16, 16 channels), 16x16 images, 10 classes",
         0, 0, 0, 0, 4, 0, 0, 10, 16, 8},
        {"vgg-tiny", "vgg", "VGG: conv1_1 (8), conv2_1 (16), each with a 2x2 max pool, fc6/fc7 of 64, 16x16 images, 10 classes", 0,
         0, 0, 0, 2, 0, 64, 10, 16, 8},
    };
    return models;
}

const TinyConfig* findTinyModel(const std::string& name) {
    for (const TinyConfig& c : tinyModels())
        if (c.name == name) return &c;
    return nullptr;
}

std::string tinyModelNames() {
    std::string s;
    for (const TinyConfig& c : tinyModels()) s += (s.empty() ? "" : ", ") + c.name;
    return s;
}

namespace {

constexpr double kGeluFlops = zoo::kGeluFlopsPerElement;

Tensor layerNorm(GraphBuilder& g, const std::string& name, Tensor x, int64_t d) {
    return g.add(name, zoo::normCost("layernorm", x.elements, d), {x});
}

Tensor residual(GraphBuilder& g, const std::string& name, Tensor a, Tensor b) {
    return g.add(name, zoo::elementwiseCost("add", a.elements, zoo::kAddFlopsPerElement), {a, b});
}

Tensor selfAttention(GraphBuilder& g, const TinyConfig& c, Tensor x, int64_t seq) {
    const int64_t b = g.batch(), d = c.d_model, rows = b * seq;
    const Tensor qkv = g.add("attn_qkv", zoo::linearCost(rows, d, 3 * d, true), {x});
    const double mm = 2.0 * static_cast<double>(b * seq * seq * d);
    const int64_t score_elements = b * c.heads * seq * seq;
    const Tensor scores = g.add("attn_scores", zoo::activationMatmulCost(mm, score_elements), {Tensor{qkv.op, 2 * rows * d}});
    const Tensor probs = g.add("attn_softmax", zoo::softmaxCost(score_elements), {scores});
    const Tensor ctx = g.add("attn_context", zoo::activationMatmulCost(mm, rows * d), {probs, Tensor{qkv.op, rows * d}});
    return g.add("attn_proj", zoo::linearCost(rows, d, d, true), {ctx});
}

Tensor feedForward(GraphBuilder& g, const TinyConfig& c, Tensor x, int64_t seq) {
    const int64_t rows = g.batch() * seq;
    Tensor h = g.add("mlp_fc1", zoo::linearCost(rows, c.d_model, 4 * c.d_model, true), {x});
    h = g.add("mlp_gelu", zoo::elementwiseCost("gelu", h.elements, kGeluFlops), {h});
    return g.add("mlp_fc2", zoo::linearCost(rows, 4 * c.d_model, c.d_model, true), {h});
}

void buildGpt(GraphBuilder& g, const TinyConfig& c, int64_t seq) {
    const int64_t rows = g.batch() * seq, d = c.d_model;
    g.beginLayer("embed");
    const Tensor tok = g.add("token_embed", zoo::embeddingCost(rows, c.vocab, d));
    const Tensor pos = g.add("position_embed", zoo::embeddingCost(rows, seq, d));
    Tensor x = g.add("sum", zoo::elementwiseCost("add", rows * d, zoo::kAddFlopsPerElement), {tok, pos});
    for (int i = 0; i < c.blocks; ++i) {
        g.beginLayer("block" + std::to_string(i));
        Tensor y = selfAttention(g, c, layerNorm(g, "ln1", x, d), seq);
        x = residual(g, "attn_residual", y, x);
        y = feedForward(g, c, layerNorm(g, "ln2", x, d), seq);
        x = residual(g, "mlp_residual", y, x);
    }
    g.beginLayer("head");
    const Tensor logits = g.add("lm_head", zoo::linearCost(rows, d, c.vocab, false), {layerNorm(g, "ln_f", x, d)});
    g.add("loss", zoo::crossEntropyCost(rows, c.vocab), {logits});
}

void buildBert(GraphBuilder& g, const TinyConfig& c, int64_t seq) {
    const int64_t b = g.batch(), rows = b * seq, d = c.d_model;
    g.beginLayer("embed");
    const Tensor words = g.add("word_embed", zoo::embeddingCost(rows, c.vocab, d));
    const Tensor pos = g.add("position_embed", zoo::embeddingCost(rows, seq, d));
    const Tensor segs = g.add("segment_embed", zoo::embeddingCost(rows, 2, d));
    Tensor x = g.add("sum", zoo::elementwiseCost("add", rows * d, 2 * zoo::kAddFlopsPerElement), {words, pos, segs});
    x = layerNorm(g, "norm", x, d);
    for (int i = 0; i < c.blocks; ++i) {
        g.beginLayer("block" + std::to_string(i));
        x = layerNorm(g, "attn_norm", residual(g, "attn_residual", selfAttention(g, c, x, seq), x), d);
        x = layerNorm(g, "mlp_norm", residual(g, "mlp_residual", feedForward(g, c, x, seq), x), d);
    }
    g.beginLayer("head");
    Tensor cls = g.add("pooler", zoo::linearCost(b, d, d, true), {Tensor{x.op, b * d}});
    cls = g.add("pooler_tanh", zoo::elementwiseCost("tanh", cls.elements, zoo::kTanhFlopsPerElement), {cls});
    const Tensor nsp = g.add("nsp", zoo::linearCost(b, d, 2, true), {cls});
    Tensor h = g.add("mlm_transform", zoo::linearCost(rows, d, d, true), {x});
    h = g.add("mlm_gelu", zoo::elementwiseCost("gelu", h.elements, kGeluFlops), {h});
    h = layerNorm(g, "mlm_norm", h, d);
    const Tensor logits = g.add("mlm_decoder", zoo::linearCost(rows, d, c.vocab, true), {h});
    g.add("loss", zoo::crossEntropyCost(rows, c.vocab), {logits, nsp});
}

void buildMlp(GraphBuilder& g, const TinyConfig& c) {
    const int64_t b = g.batch();
    Tensor x;
    for (int i = 0; i <= c.blocks; ++i) {
        g.beginLayer("fc" + std::to_string(i));
        const int64_t in = i == 0 ? c.inputs : c.hidden, out = i < c.blocks ? c.hidden : c.classes;
        const OpCost fc = zoo::linearCost(b, in, out, true);
        x = i == 0 ? g.add("linear", fc) : g.add("linear", fc, {x});
        if (i < c.blocks) x = g.add("relu", zoo::elementwiseCost("relu", x.elements, zoo::kReluFlopsPerElement), {x});
    }
    g.add("loss", zoo::crossEntropyCost(b, c.classes), {x});
}

struct Map {
    Tensor t;
    int64_t channels = 0, side = 0;
};

Map conv(GraphBuilder& g, const std::string& name, const Map& x, int64_t out, int64_t kernel, int64_t stride, bool bias) {
    const int64_t side = (x.side + 2 * (kernel / 2) - kernel) / stride + 1;
    OpCost c;
    c.kind = "conv2d";
    c.fwd_flops = 2.0 * static_cast<double>(g.batch() * out * side * side * x.channels * kernel * kernel);
    c.bwd_flops = 2 * c.fwd_flops;
    c.params = out * x.channels * kernel * kernel + (bias ? out : 0);
    c.output_elements = g.batch() * out * side * side;
    const Tensor t = x.t.op < 0 ? g.add(name, c) : g.add(name, c, {x.t});
    return {t, out, side};
}

Map elementwise(GraphBuilder& g, const std::string& name, const char* kind, const Map& x) {
    return {g.add(name, zoo::elementwiseCost(kind, x.t.elements, zoo::kReluFlopsPerElement), {x.t}), x.channels, x.side};
}

Map batchNorm(GraphBuilder& g, const std::string& name, const Map& x) {
    return {g.add(name, zoo::normCost("batchnorm", x.t.elements, x.channels), {x.t}), x.channels, x.side};
}

Map maxPool(GraphBuilder& g, const std::string& name, const Map& x) {
    const int64_t side = x.side / 2;
    return {g.add(name, zoo::elementwiseCost("maxpool", g.batch() * x.channels * side * side, 4), {x.t}), x.channels, side};
}

void classifier(GraphBuilder& g, Tensor features, int64_t in, int64_t classes) {
    const Tensor logits = g.add("fc", zoo::linearCost(g.batch(), in, classes, true), {features});
    g.add("loss", zoo::crossEntropyCost(g.batch(), classes), {logits});
}

void buildResNet(GraphBuilder& g, const TinyConfig& c) {
    g.beginLayer("stem");
    Map x{Tensor{-1, 0}, 3, c.image_side};
    x = elementwise(g, "relu", "relu", batchNorm(g, "bn1", conv(g, "conv1", x, c.channels, 3, 1, false)));
    for (int i = 0; i < c.blocks; ++i) {
        g.beginLayer("block" + std::to_string(i));
        const int64_t out = c.channels << (i / 2);
        const int64_t stride = (i > 0 && i % 2 == 0) ? 2 : 1;
        Map y = elementwise(g, "relu1", "relu", batchNorm(g, "bn1", conv(g, "conv1", x, out, 3, stride, false)));
        y = batchNorm(g, "bn2", conv(g, "conv2", y, out, 3, 1, false));
        Map shortcut = x;
        if (stride != 1 || x.channels != out) shortcut = batchNorm(g, "downsample_bn", conv(g, "downsample", x, out, 1, stride, false));
        const Tensor sum = g.add("residual", zoo::elementwiseCost("add", y.t.elements, zoo::kAddFlopsPerElement), {y.t, shortcut.t});
        x = elementwise(g, "relu", "relu", Map{sum, y.channels, y.side});
    }
    g.beginLayer("head");
    const Tensor pooled = g.add("avgpool", zoo::elementwiseCost("avgpool", g.batch() * x.channels, 1), {x.t});
    classifier(g, pooled, x.channels, c.classes);
}

void buildVgg(GraphBuilder& g, const TinyConfig& c) {
    Map x{Tensor{-1, 0}, 3, c.image_side};
    for (int s = 0; s < c.blocks; ++s) {
        g.beginLayer("conv" + std::to_string(s + 1) + "_1");
        x = maxPool(g, "pool", elementwise(g, "relu", "relu", conv(g, "conv", x, c.channels << s, 3, 1, true)));
    }
    Tensor h = x.t;
    int64_t in = x.channels * x.side * x.side;
    for (const char* fc : {"fc6", "fc7"}) {
        g.beginLayer(fc);
        h = g.add("linear", zoo::linearCost(g.batch(), in, c.hidden, true), {h});
        h = g.add("relu", zoo::elementwiseCost("relu", h.elements, zoo::kReluFlopsPerElement), {h});
        in = c.hidden;
    }
    g.beginLayer("fc8");
    classifier(g, h, in, c.classes);
}

}  // namespace

Graph buildTinyGraph(const TinyConfig& cfg, const ModelSpec& spec) {
    if (spec.batch_size < 1) throw Error("model '" + cfg.name + "': batch size must be positive");
    ModelSpec s = spec;
    s.zoo = cfg.name;
    if (cfg.default_seq_len > 0 && s.seq_len == 0) s.seq_len = cfg.default_seq_len;
    GraphBuilder g(cfg.name, s);
    if (cfg.family == "gpt") buildGpt(g, cfg, s.seq_len);
    else if (cfg.family == "bert") buildBert(g, cfg, s.seq_len);
    else if (cfg.family == "mlp") buildMlp(g, cfg);
    else if (cfg.family == "resnet") buildResNet(g, cfg);
    else buildVgg(g, cfg);
    Graph graph = g.finish();
    graph.source = spec;  // where it came from, as given (seq_len 0 keeps meaning "default")
    return graph;
}

}  // namespace hippie::engine
