// Recurrent models of the zoo: GNMT-8, the Google NMT variant of the MLPerf translation
// reference (NVIDIA's "GNMT v2"), which PipeDream trains as GNMT-8.
#include <string>
#include <variant>
#include <vector>

#include "planners/model/zoo_builder.h"

namespace hippie::zoo {
namespace {

// Per hidden unit and step: 3 sigmoids, 2 tanh, 3 products, 1 sum (rough, next to the matmuls).
constexpr double kLstmCellFlopsPerUnit = 10;
// Additive (Bahdanau) score per (query, key, unit): q + k + bias, tanh, times v, sum.
constexpr double kAdditiveScoreFlopsPerElement = 5;

// One LSTM layer over `seq` steps, as PyTorch's nn.LSTM: the gates are x W_ih + h W_hh + b_ih +
// b_hh, 2*4h*(in+h) FLOPs a step and sample. Backward computes input, recurrent and weight
// gradients (twice the matmuls) and the cell's per-unit chain rule once more.
OpCost lstmCost(int64_t batch, int64_t seq, int64_t in, int64_t hidden) {
    const double steps = static_cast<double>(batch * seq);
    const double matmul_flops = 2.0 * steps * static_cast<double>(4 * hidden * (in + hidden));
    const double cell_flops = kLstmCellFlopsPerUnit * steps * static_cast<double>(hidden);
    OpCost c;
    c.kind = "lstm";
    c.fwd_flops = matmul_flops + cell_flops;
    c.bwd_flops = 2 * matmul_flops + cell_flops;
    c.params = 4 * hidden * (in + hidden) + 2 * 4 * hidden;
    c.output_elements = batch * seq * hidden;
    c.saved_elements = batch * seq * 5 * hidden;  // four gates and the cell state, every step
    return c;
}

Tensor concatFeatures(GraphBuilder& g, const std::string& name, Tensor a, Tensor b) {
    return g.add(name, elementwiseCost("concat", a.elements + b.elements, kCopyFlopsPerElement), {a, b});
}

Tensor residual(GraphBuilder& g, Tensor branch, Tensor skip) {
    return g.add("residual", elementwiseCost("add", branch.elements, kAddFlopsPerElement), {branch, skip});
}

// Layers enc0..enc<layers-1>: a bidirectional first layer (two directions run in parallel,
// then are concatenated), then unidirectional layers with residuals from the third on.
Tensor gnmtEncoder(GraphBuilder& g, const GnmtArch& m, Tensor embedded) {
    const int64_t b = g.batch(), h = m.hidden, seq = m.seq_len;
    g.beginLayer("enc0");
    const Tensor forward = g.add("lstm_forward", lstmCost(b, seq, h, h), {embedded});
    const Tensor backward = g.add("lstm_backward", lstmCost(b, seq, h, h), {embedded});
    Tensor x = concatFeatures(g, "concat", forward, backward);
    for (int i = 1; i < m.layers; ++i) {
        g.beginLayer("enc" + std::to_string(i));
        const Tensor y = g.add("lstm", lstmCost(b, seq, x.elements / (b * seq), h), {x});
        x = i >= m.first_residual_layer ? residual(g, y, x) : y;
    }
    return x;
}

// Normalised Bahdanau attention of the first decoder layer's states over the encoder outputs:
// projections of queries and keys, additive scores (which keep their tanh for backward),
// softmax, and the context as the probability-weighted sum of encoder outputs.
Tensor bahdanauAttention(GraphBuilder& g, const GnmtArch& m, Tensor queries, Tensor encoded) {
    const int64_t b = g.batch(), h = m.hidden, seq = m.seq_len, rows = b * seq;
    const Tensor q = g.add("query_proj", linearCost(rows, h, h, false), {queries});
    const Tensor k = g.add("key_proj", linearCost(rows, h, h, false), {encoded});
    const int64_t pair_units = b * seq * seq * h;
    OpCost scores;
    scores.kind = "attention";
    scores.fwd_flops = kAdditiveScoreFlopsPerElement * static_cast<double>(pair_units);
    scores.bwd_flops = 2 * scores.fwd_flops;
    scores.params = h + 1 + h;  // v, its normalising scalar, the normalisation bias
    scores.output_elements = b * seq * seq;
    scores.saved_elements = pair_units;
    const Tensor s = g.add("scores", scores, {q, k});
    const Tensor p = g.add("softmax", softmaxCost(s.elements), {s});
    return g.add("context", activationMatmulCost(2.0 * static_cast<double>(pair_units), rows * h), {p, encoded});
}

// dec0 feeds the attention; dec1..dec<layers-1> read the previous layer's output concatenated
// with the attention context, residuals from the third layer on.
Tensor gnmtDecoder(GraphBuilder& g, const GnmtArch& m, Tensor embedded, Tensor encoded) {
    const int64_t b = g.batch(), h = m.hidden, seq = m.seq_len;
    g.beginLayer("dec0");
    Tensor x = g.add("lstm", lstmCost(b, seq, h, h), {embedded});
    g.beginLayer("attention");
    const Tensor context = bahdanauAttention(g, m, x, encoded);
    for (int i = 1; i < m.layers; ++i) {
        g.beginLayer("dec" + std::to_string(i));
        const Tensor in = concatFeatures(g, "concat", x, context);
        const Tensor y = g.add("lstm", lstmCost(b, seq, 2 * h, h), {in});
        x = i >= m.first_residual_layer ? residual(g, y, x) : y;
    }
    return x;
}

}  // namespace

void buildGnmt(GraphBuilder& g, const GnmtArch& m) {
    const int64_t rows = g.batch() * m.seq_len, h = m.hidden;
    g.beginLayer("embed");
    // Encoder and decoder share one embedding table (the reference's --share-embedding default).
    const Tensor source = g.add("encoder_embed", embeddingCost(rows, m.vocab, h));
    const Tensor target = g.add("decoder_embed", embeddingCost(rows, m.vocab, h, /*owns_table=*/false));
    const Tensor encoded = gnmtEncoder(g, m, source);
    const Tensor decoded = gnmtDecoder(g, m, target, encoded);
    g.beginLayer("head");
    const Tensor logits = g.add("classifier", linearCost(rows, h, m.vocab, true), {decoded});
    g.add("loss", crossEntropyCost(rows, m.vocab), {logits});
}

std::vector<ZooEntry> rnnEntries() {
    const GnmtArch& a = std::get<GnmtArch>(*publishedArchitecture("gnmt-8"));
    return {{"gnmt-8", "gnmt",
             "GNMT-8 (Wu et al. 2016, as the MLPerf v0.5/v0.6 translation reference and NVIDIA GNMT v2 that "
             "PipeDream trains): " + std::to_string(a.layers) + " encoder (first bidirectional) + " +
                 std::to_string(a.layers) + " decoder LSTM layers of " + std::to_string(a.hidden) +
                 ", normalised Bahdanau attention, shared " + std::to_string(a.vocab) +
                 "-token embedding, default sequence " + std::to_string(a.seq_len) +
                 " (reference --train-max-length); 160.7M parameters, the reference implementation's per-module "
                 "count",
             static_cast<int>(a.seq_len), 160.67e6}};
}

}  // namespace hippie::zoo
