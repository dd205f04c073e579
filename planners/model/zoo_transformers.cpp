// Transformer models of the zoo: GPT-2, GPT-3, BERT and the Transformer (big) of Vaswani et
// al., all made of the one transformerBlock() below.
#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "planners/common/checked.h"
#include "planners/common/error.h"
#include "planners/model/zoo_builder.h"

namespace hippie::zoo {
namespace {

// GPT-2/3 normalise a block's input (pre-LN); BERT and the original Transformer normalise after
// each residual add (post-LN). Same ops, different wiring.
enum class NormPlacement { Pre, Post };

struct BlockShape {
    int64_t d_model = 0;
    int64_t heads = 0;
    int64_t d_ff = 0;
    NormPlacement norm = NormPlacement::Pre;
    const char* activation = "gelu";
    double activation_flops = kGeluFlopsPerElement;
    Dropout dropout;
};

// Keys and values a decoder block's cross-attention reads: the encoder output.
struct Memory {
    Tensor tensor;
    int64_t seq = 0;
};

// Sinusoidal positions: scale the embedding by sqrt(d_model), add the encoding.
constexpr double kSinusoidFlopsPerElement = 2;

Tensor layerNorm(GraphBuilder& g, const std::string& name, Tensor x, int64_t d_model) {
    return g.add(name, normCost("layernorm", x.elements, d_model), {x});
}

// Dropout of probability p on x (architecture.h, Dropout), split as x is; none when p is 0.
Tensor dropout(GraphBuilder& g, const std::string& name, Tensor x, double p, TensorParallel split = TensorParallel::Replicated) {
    if (p <= 0) return x;
    return g.split(split, g.add(name, dropoutCost(x.elements), {x}));
}

Tensor residual(GraphBuilder& g, const std::string& name, Tensor branch, Tensor skip) {
    return g.add(name, elementwiseCost("add", branch.elements, kAddFlopsPerElement), {branch, skip});
}

// The attention scores of a micro-batch, b * heads * q_seq * kv_seq elements; sizes whose
// product does not fit 64 bits are an input error, not a wrapped count.
int64_t scoreElements(int64_t b, int64_t heads, int64_t q_seq, int64_t kv_seq) {
    std::optional<int64_t> n = checked::mul(b, heads);
    if (n) n = checked::mul(*n, q_seq);
    if (n) n = checked::mul(*n, kv_seq);
    if (!n)
        throw Error("attention scores of " + std::to_string(b) + " samples x " + std::to_string(heads) + " heads x " +
                    std::to_string(q_seq) + " x " + std::to_string(kv_seq) + " tokens do not fit 64 bits: use a smaller batch or sequence");
    return *n;
}

// Multi-head attention of q_seq queries: projections, scores Q K^T (2*q_seq*kv_seq*d_model
// FLOPs a sample), softmax (whose probabilities backward needs: they are its output), their
// dropout, context P V (same FLOPs), the output projection and its dropout. Self-attention projects Q, K and V in
// one fused matmul; cross-attention projects Q from x and K, V from the encoder memory.
// A causal mask changes no cost: implementations compute the full score matrix.
// Tensor parallelism splits it by heads (Megatron-LM): the projections of Q, K and V by
// columns, scores, softmax and context per head, and the output projection by rows (its
// partial sums all-reduced).
Tensor attention(GraphBuilder& g, const BlockShape& s, const std::string& prefix, Tensor x, int64_t q_seq,
                 const Memory* memory) {
    const int64_t b = g.batch(), d = s.d_model;
    const int64_t q_rows = b * q_seq;
    const int64_t kv_seq = memory ? memory->seq : q_seq;
    const int64_t kv_rows = b * kv_seq;
    std::vector<Tensor> score_inputs;
    Tensor values;
    if (!memory) {
        const Tensor qkv = g.split(TensorParallel::Column, g.add(prefix + "_qkv", linearCost(q_rows, d, 3 * d, true), {x}));
        score_inputs = {Tensor{qkv.op, 2 * q_rows * d}};  // Q and K, one edge
        values = Tensor{qkv.op, q_rows * d};
    } else {
        const Tensor q = g.split(TensorParallel::Column, g.add(prefix + "_q", linearCost(q_rows, d, d, true), {x}));
        const Tensor kv = g.split(TensorParallel::Column, g.add(prefix + "_kv", linearCost(kv_rows, d, 2 * d, true), {memory->tensor}));
        score_inputs = {q, Tensor{kv.op, kv_rows * d}};
        values = Tensor{kv.op, kv_rows * d};
    }
    // In double: b * q_seq * kv_seq * d passes 2^63 at the sizes overrides allow (2^20
    // samples of 65,536 tokens), and FLOPs are doubles anyway.
    const double matmul_flops = 2.0 * static_cast<double>(b) * static_cast<double>(q_seq) * static_cast<double>(kv_seq) *
                                static_cast<double>(d);
    const int64_t score_elements = scoreElements(b, s.heads, q_seq, kv_seq);
    const Tensor scores =
        g.split(TensorParallel::Column, g.add(prefix + "_scores", activationMatmulCost(matmul_flops, score_elements), score_inputs));
    Tensor probs = g.split(TensorParallel::Column, g.add(prefix + "_softmax", softmaxCost(score_elements), {scores}));
    probs = dropout(g, prefix + "_dropout", probs, s.dropout.attention, TensorParallel::Column);
    const Tensor context =
        g.split(TensorParallel::Column, g.add(prefix + "_context", activationMatmulCost(matmul_flops, q_rows * d), {probs, values}));
    const Tensor out = g.split(TensorParallel::Row, g.add(prefix + "_proj", linearCost(q_rows, d, d, true), {context}));
    return dropout(g, prefix + "_resid_dropout", out, s.dropout.hidden);
}

Tensor feedForward(GraphBuilder& g, const BlockShape& s, Tensor x, int64_t seq) {
    const int64_t rows = g.batch() * seq;
    // Tensor parallelism: the first linear by columns (the activation runs on its split
    // output), the second by rows.
    Tensor h = g.split(TensorParallel::Column, g.add("mlp_fc1", linearCost(rows, s.d_model, s.d_ff, true), {x}));
    h = g.split(TensorParallel::Column,
                g.add(std::string("mlp_") + s.activation, elementwiseCost(s.activation, h.elements, s.activation_flops), {h}));
    h = g.split(TensorParallel::Row, g.add("mlp_fc2", linearCost(rows, s.d_ff, s.d_model, true), {h}));
    return dropout(g, "mlp_dropout", h, s.dropout.hidden);
}

Tensor preNormBlock(GraphBuilder& g, const BlockShape& s, Tensor x, int64_t seq, const Memory* encoder) {
    const int64_t d = s.d_model;
    Tensor y = attention(g, s, "attn", layerNorm(g, "ln1", x, d), seq, nullptr);
    x = residual(g, "attn_residual", y, x);
    if (encoder) {
        y = attention(g, s, "cross", layerNorm(g, "ln_cross", x, d), seq, encoder);
        x = residual(g, "cross_residual", y, x);
    }
    y = feedForward(g, s, layerNorm(g, "ln2", x, d), seq);
    return residual(g, "mlp_residual", y, x);
}

Tensor postNormBlock(GraphBuilder& g, const BlockShape& s, Tensor x, int64_t seq, const Memory* encoder) {
    const int64_t d = s.d_model;
    Tensor y = attention(g, s, "attn", x, seq, nullptr);
    x = layerNorm(g, "attn_norm", residual(g, "attn_residual", y, x), d);
    if (encoder) {
        y = attention(g, s, "cross", x, seq, encoder);
        x = layerNorm(g, "cross_norm", residual(g, "cross_residual", y, x), d);
    }
    y = feedForward(g, s, x, seq);
    return layerNorm(g, "mlp_norm", residual(g, "mlp_residual", y, x), d);
}

// One transformer block (encoder, decoder-only, or encoder-decoder decoder when `encoder`
// is given) in the current layer.
Tensor transformerBlock(GraphBuilder& g, const BlockShape& s, Tensor x, int64_t seq, const Memory* encoder = nullptr) {
    return s.norm == NormPlacement::Pre ? preNormBlock(g, s, x, seq, encoder) : postNormBlock(g, s, x, seq, encoder);
}

// Softmax over the vocabulary through a projection tied to the token embedding, whose weight
// is counted once, in the embedding. Tensor parallelism splits both by vocabulary.
void tiedLmHead(GraphBuilder& g, Tensor x, int64_t seq, int64_t d_model, int64_t vocab, const char* name,
                std::vector<Tensor> extra_loss_inputs = {}) {
    const int64_t rows = g.batch() * seq;
    const Tensor logits = g.split(TensorParallel::Column, g.add(name, linearCost(rows, d_model, vocab, false, /*owns_weight=*/false), {x}));
    extra_loss_inputs.insert(extra_loss_inputs.begin(), logits);
    g.split(TensorParallel::Column, g.add("loss", crossEntropyCost(rows, vocab), extra_loss_inputs));
}

// ---- GPT ------------------------------------------------------------------------------------

}  // namespace

void buildGpt(GraphBuilder& g, const GptArch& m) {
    const int64_t seq = m.seq_len, rows = g.batch() * seq, d = m.d_model;
    const BlockShape block{d, m.heads, m.d_ff, NormPlacement::Pre, "gelu", kGeluFlopsPerElement, m.dropout};
    g.beginLayer("embed");
    g.limitTensorParallel(static_cast<int>(m.heads));
    const Tensor tokens = g.split(TensorParallel::Row, g.add("token_embed", embeddingCost(rows, m.vocab, d)));
    const Tensor positions = g.add("position_embed", embeddingCost(rows, m.positions, d));
    Tensor x = g.add("sum", elementwiseCost("add", rows * d, kAddFlopsPerElement), {tokens, positions});
    x = dropout(g, "embed_dropout", x, m.dropout.hidden);
    for (int i = 0; i < m.layers; ++i) {
        g.beginLayer("block" + std::to_string(i));
        x = transformerBlock(g, block, x, seq);
    }
    g.beginLayer("head");
    tiedLmHead(g, layerNorm(g, "ln_f", x, d), seq, d, m.vocab, "lm_head");
}

// ---- BERT -----------------------------------------------------------------------------------

namespace {

void bertPretrainingHead(GraphBuilder& g, Tensor x, int64_t seq, int64_t d, int64_t vocab) {
    const int64_t b = g.batch(), rows = b * seq;
    // Next-sentence prediction reads the [CLS] token only: the first row of each sample.
    Tensor cls = g.add("pooler", linearCost(b, d, d, true), {Tensor{x.op, b * d}});
    cls = g.add("pooler_tanh", elementwiseCost("tanh", cls.elements, kTanhFlopsPerElement), {cls});
    const Tensor nsp = g.add("nsp", linearCost(b, d, 2, true), {cls});
    // Masked-LM: transform, then the decoder tied to the word embedding (its bias is its own).
    Tensor h = g.add("mlm_transform", linearCost(rows, d, d, true), {x});
    h = g.add("mlm_gelu", elementwiseCost("gelu", h.elements, kGeluFlopsPerElement), {h});
    h = layerNorm(g, "mlm_norm", h, d);
    const Tensor logits = g.split(TensorParallel::Column, g.add("mlm_decoder", linearCost(rows, d, vocab, true, /*owns_weight=*/false), {h}));
    g.split(TensorParallel::Column, g.add("loss", crossEntropyCost(rows, vocab), {logits, nsp}));
}

}  // namespace

void buildBert(GraphBuilder& g, const BertArch& m) {
    const int64_t seq = m.seq_len, rows = g.batch() * seq, d = m.d_model;
    const BlockShape block{d, m.heads, m.d_ff, NormPlacement::Post, "gelu", kGeluFlopsPerElement, m.dropout};
    g.beginLayer("embed");
    g.limitTensorParallel(static_cast<int>(m.heads));
    const Tensor words = g.split(TensorParallel::Row, g.add("word_embed", embeddingCost(rows, m.vocab, d)));
    const Tensor positions = g.add("position_embed", embeddingCost(rows, m.positions, d));
    const Tensor segments = g.add("segment_embed", embeddingCost(rows, m.segments, d));
    Tensor x = g.add("sum", elementwiseCost("add", rows * d, 2 * kAddFlopsPerElement), {words, positions, segments});
    x = dropout(g, "embed_dropout", layerNorm(g, "norm", x, d), m.dropout.hidden);
    for (int i = 0; i < m.layers; ++i) {
        g.beginLayer("block" + std::to_string(i));
        x = transformerBlock(g, block, x, seq);
    }
    g.beginLayer("head");
    bertPretrainingHead(g, x, seq, d, m.vocab);
}

// ---- Transformer (big), Vaswani et al. 2017 -----------------------------------------------

void buildTransformer(GraphBuilder& g, const TransformerArch& m) {
    const int64_t seq = m.seq_len, rows = g.batch() * seq, d = m.d_model, vocab = m.vocab;
    const BlockShape block{d, m.heads, m.d_ff, NormPlacement::Post, "relu", kReluFlopsPerElement, m.dropout};
    const OpCost positions = elementwiseCost("add", rows * d, kSinusoidFlopsPerElement);
    g.beginLayer("embed");
    // One table serves source, target and the pre-softmax projection (paper, section 3.4).
    g.limitTensorParallel(static_cast<int>(m.heads));
    Tensor src = g.split(TensorParallel::Row, g.add("source_embed", embeddingCost(rows, vocab, d)));
    src = dropout(g, "source_dropout", g.add("source_position", positions, {src}), m.dropout.hidden);
    Tensor tgt = g.split(TensorParallel::Row, g.add("target_embed", embeddingCost(rows, vocab, d, /*owns_table=*/false)));
    tgt = dropout(g, "target_dropout", g.add("target_position", positions, {tgt}), m.dropout.hidden);
    for (int i = 0; i < m.layers; ++i) {
        g.beginLayer("enc" + std::to_string(i));
        src = transformerBlock(g, block, src, seq);
    }
    const Memory encoded{src, seq};
    for (int i = 0; i < m.layers; ++i) {
        g.beginLayer("dec" + std::to_string(i));
        tgt = transformerBlock(g, block, tgt, seq, &encoded);
    }
    g.beginLayer("head");
    tiedLmHead(g, tgt, seq, d, vocab, "output_proj");
}

// ---- Catalogue ------------------------------------------------------------------------------

namespace {

template <class Arch>
const Arch& published(const std::string& name) {
    return std::get<Arch>(*publishedArchitecture(name));
}

ZooEntry gptEntry(const char* name, double published_params, const std::string& source) {
    const GptArch& a = published<GptArch>(name);
    const std::string description = std::string(name) + ": decoder-only, " + std::to_string(a.layers) +
                                    " pre-LN blocks, d_model " + std::to_string(a.d_model) + ", " +
                                    std::to_string(a.heads) + " heads, " + std::to_string(a.vocab) +
                                    "-token vocabulary, LM head tied to the token embedding; " + source;
    return {name, "gpt", description, static_cast<int>(a.seq_len), published_params};
}

ZooEntry bertEntry(const char* name, double published_params) {
    const BertArch& a = published<BertArch>(name);
    const std::string description = std::string(name) + ": " + std::to_string(a.layers) + " post-LN blocks, d_model " +
                                    std::to_string(a.d_model) + ", " + std::to_string(a.heads) +
                                    " heads, MLM + NSP pre-training heads; " +
                                    std::to_string(static_cast<int>(published_params / 1e6)) +
                                    "M parameters (Devlin et al. 2019, BERT paper, section 3)";
    return {name, "bert", description, static_cast<int>(a.seq_len), published_params};
}

ZooEntry transformerBigEntry() {
    const TransformerArch& a = published<TransformerArch>("transformer-big");
    const std::string description =
        "Transformer (big): " + std::to_string(a.layers) + "+" + std::to_string(a.layers) +
        " post-LN encoder-decoder blocks, d_model " + std::to_string(a.d_model) + ", " + std::to_string(a.heads) +
        " heads, d_ff " + std::to_string(a.d_ff) + ", shared " + std::to_string(a.vocab) +
        "-token vocabulary tied to the output projection, default sequence " + std::to_string(a.seq_len) +
        " (tensor2tensor max_length); 213M parameters (Vaswani et al. 2017, Table 3)";
    return {"transformer-big", "transformer", description, static_cast<int>(a.seq_len), 213e6};
}

}  // namespace

std::vector<ZooEntry> transformerEntries() {
    const std::string gpt2_source = "parameters as released (openai/gpt-2 checkpoint names 124M/355M/774M/1558M; "
                                    "the paper's Table 2 figures are lower)";
    const std::string gpt3_source = "parameters from Brown et al. 2020, Table 2.1 (dense attention in every block)";
    return {
        gptEntry("gpt2-small", 124e6, "124M " + gpt2_source),
        gptEntry("gpt2-medium", 355e6, "355M " + gpt2_source),
        gptEntry("gpt2-large", 774e6, "774M " + gpt2_source),
        gptEntry("gpt2-xl", 1558e6, "1558M " + gpt2_source),
        gptEntry("gpt3-1.3b", 1.3e9, "1.3B " + gpt3_source),
        gptEntry("gpt3-2.7b", 2.7e9, "2.7B " + gpt3_source),
        gptEntry("gpt3-6.7b", 6.7e9, "6.7B " + gpt3_source),
        gptEntry("gpt3-13b", 13.0e9, "13.0B " + gpt3_source),
        bertEntry("bert-base", 110e6),
        bertEntry("bert-large", 340e6),
        transformerBigEntry(),
    };
}

}  // namespace hippie::zoo
