// GPT, BERT and the Transformer (big) as LibTorch layers, following architecture.h and the
// wiring of planners/model/zoo_transformers.cpp op for op.
#include <cmath>
#include <functional>
#include <limits>

#include "engine/src/models/attention_core.h"
#include "engine/src/models/zoo_layers.h"

namespace hippie::engine {

namespace nn = torch::nn;
using torch::Tensor;

namespace {

// Sinusoidal positions (Vaswani et al. 2017, section 3.5): wavelengths up to 10000 * 2 pi.
constexpr double kSinusoidBase = 10000.0;

nn::LayerNorm layerNorm(int64_t d) { return nn::LayerNorm(nn::LayerNormOptions({d})); }

// Scaled dot-product attention of q [b, sq, d] over k, v [b, skv, d] in `heads` heads; with
// `recompute_core`, its scores and probabilities are recomputed in backward, not kept. Dropout
// of probability p on the probabilities, at `op`, these heads being the whole layer's from
// `first_head` on.
struct AttentionDropout {
    double p = 0;
    std::string op;
    int64_t first_head = 0;
};
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads, bool causal, bool recompute_core,
              const AttentionDropout& dropout) {
    const int64_t b = q.size(0), sq = q.size(1), skv = k.size(1), d = q.size(2);
    TORCH_CHECK(d % heads == 0, "d_model ", d, " is not a multiple of the ", heads, " heads");
    const int64_t dh = d / heads;
    auto split = [&](const Tensor& t, int64_t s) { return t.reshape({b, s, heads, dh}).transpose(1, 2); };
    const CoreDropout core_dropout{dropout.p, DropoutSite{dropout.op, dropout.first_head * sq * skv}};
    const Tensor ctx = attentionCore(split(q, sq), split(k, skv), split(v, skv), causal, recompute_core, core_dropout);
    return ctx.transpose(1, 2).reshape({b, sq, d});
}

struct BlockShape {
    int64_t d_model = 0, heads = 0, d_ff = 0;
    bool pre_norm = true;
    bool causal = true;
    bool gelu = true;   // else ReLU
    bool cross = false; // decoder block of an encoder-decoder
    Dropout dropout{};
};

// Dropout of a [b, seq, d] activation at the Graph op `op` (x itself when p is 0); with sequence
// parallelism `x` is this rank's part of the sequence (the ranks' parts in rank order).
Tensor hiddenDropout(const Tensor& x, double p, const std::string& op, const TpContext& tp, bool training) {
    const bool sequence_split = tp.enabled() && tp.sequence_parallel;
    const int64_t offset = sequence_split ? tp.rank() * x.size(1) * x.size(2) : 0;
    return dropout(x, p, DropoutSite{op, offset}, training);
}

// The Graph name of an embedding layer's output: its dropout's when it has one.
std::string embedOutput(double p, const std::string& op, const std::string& dropout_op) {
    return "embed." + (p > 0 ? dropout_op : op);
}

// One transformer block: zoo_transformers.cpp's preNormBlock / postNormBlock. Split by tensor
// parallelism (Megatron-LM), attention by heads (the fused QKV projection by columns: this
// rank's heads of Q, K and V; the output projection by rows) and the MLP (fc1 by columns, fc2
// by rows), each split pair entered through f and left through g (models/tensor_parallel.h).
// The LayerNorms and residual adds run whole on every rank, or with sequence parallelism on
// this rank's part of the sequence (the pairs then all-gather and reduce-scatter it).
class Block : public LayerModule {
public:
    Block(const BlockShape& s, std::string name, std::string input, std::string memory)
        : s_(s), name_(std::move(name)), input_(std::move(input)), memory_(std::move(memory)), heads_(s.heads) {
        const int64_t d = s.d_model;
        norm1 = register_module(s.pre_norm ? "ln1" : "attn_norm", layerNorm(d));
        qkv = register_module("attn_qkv", nn::Linear(d, 3 * d));
        proj = register_module("attn_proj", nn::Linear(d, d));
        if (s.cross) {
            norm_cross = register_module(s.pre_norm ? "ln_cross" : "cross_norm", layerNorm(d));
            cross_q = register_module("cross_q", nn::Linear(d, d));
            cross_kv = register_module("cross_kv", nn::Linear(d, 2 * d));
            cross_proj = register_module("cross_proj", nn::Linear(d, d));
        }
        norm2 = register_module(s.pre_norm ? "ln2" : "mlp_norm", layerNorm(d));
        fc1 = register_module("mlp_fc1", nn::Linear(d, s.d_ff));
        fc2 = register_module("mlp_fc2", nn::Linear(s.d_ff, d));
        qkv_ = dense(qkv.ptr());
        proj_ = dense(proj.ptr());
        fc1_ = dense(fc1.ptr());
        fc2_ = dense(fc2.ptr());
        if (s.cross) {
            cross_q_ = dense(cross_q.ptr());
            cross_kv_ = dense(cross_kv.ptr());
            cross_proj_ = dense(cross_proj.ptr());
        }
    }
    // `whole` split over `tp`: its LayerNorms, and this rank's slices of its linears.
    Block(const Block& whole, const TpContext& tp)
        : s_(whole.s_),
          name_(whole.name_),
          input_(whole.input_),
          memory_(whole.memory_),
          heads_(whole.s_.heads / tp.size()),
          recompute_cores_(whole.recompute_cores_),
          tp_(tp) {
        norm1 = register_module(s_.pre_norm ? "ln1" : "attn_norm", whole.norm1);
        qkv_ = column("attn_qkv", whole.qkv, tp, 3);  // this rank's heads of Q, K and V
        proj_ = row("attn_proj", whole.proj, tp);
        if (s_.cross) {
            norm_cross = register_module(s_.pre_norm ? "ln_cross" : "cross_norm", whole.norm_cross);
            cross_q_ = column("cross_q", whole.cross_q, tp, 1);
            cross_kv_ = column("cross_kv", whole.cross_kv, tp, 2);  // this rank's heads of K and V
            cross_proj_ = row("cross_proj", whole.cross_proj, tp);
        }
        norm2 = register_module(s_.pre_norm ? "ln2" : "mlp_norm", whole.norm2);
        fc1_ = column("mlp_fc1", whole.fc1, tp, 1);
        fc2_ = row("mlp_fc2", whole.fc2, tp);
    }
    void run(Live& live) override {
        Tensor x = live.at(input_);
        const Tensor memory = s_.cross ? live.at(memory_) : Tensor();
        if (s_.pre_norm) {
            x = x + hidden(selfAttention(norm1->forward(x)), "attn_resid_dropout");
            if (s_.cross) x = x + hidden(crossAttention(norm_cross->forward(x), memory), "cross_resid_dropout");
            x = x + hidden(mlp(norm2->forward(x)), "mlp_dropout");
            live[name_ + ".mlp_residual"] = x;
            return;
        }
        x = norm1->forward(x + hidden(selfAttention(x), "attn_resid_dropout"));
        if (s_.cross) x = norm_cross->forward(x + hidden(crossAttention(x, memory), "cross_resid_dropout"));
        live[name_ + ".mlp_norm"] = norm2->forward(x + hidden(mlp(x), "mlp_dropout"));
    }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<Block>(*this, tp); }
    std::map<std::string, ParamSplit> tensorParallelSplits() const override { return splits_; }
    bool setSelectiveRecompute(bool on) override {
        recompute_cores_ = on;
        return true;
    }

    nn::LayerNorm norm1{nullptr}, norm_cross{nullptr}, norm2{nullptr};
    // The whole block's linears (null when split).
    nn::Linear qkv{nullptr}, proj{nullptr}, cross_q{nullptr}, cross_kv{nullptr}, cross_proj{nullptr}, fc1{nullptr}, fc2{nullptr};

private:
    using Dense = std::function<Tensor(const Tensor&)>;
    template <class M>
    static Dense dense(std::shared_ptr<M> m) {
        return [m](const Tensor& x) { return m->forward(x); };
    }
    Dense column(const std::string& name, const nn::Linear& whole, const TpContext& tp, int64_t chunks) {
        auto m = register_module(name, ColumnParallelLinear(whole, tp, chunks));
        for (const auto& [param, split] : m->splits()) splits_[name + "." + param] = split;
        return dense(m);
    }
    Dense row(const std::string& name, const nn::Linear& whole, const TpContext& tp) {
        auto m = register_module(name, RowParallelLinear(whole, tp));
        for (const auto& [param, split] : m->splits()) splits_[name + "." + param] = split;
        return dense(m);
    }
    Tensor selfAttention(const Tensor& x) {
        const auto parts = qkv_(x).chunk(3, 2);
        return proj_(attend(parts[0], parts[1], parts[2], heads_, s_.causal, recompute_cores_, probsDropout("attn_dropout")));
    }
    Tensor crossAttention(const Tensor& x, const Tensor& memory) {
        const auto kv = cross_kv_(memory).chunk(2, 2);
        return cross_proj_(attend(cross_q_(x), kv[0], kv[1], heads_, false, recompute_cores_, probsDropout("cross_dropout")));
    }
    // This rank's heads are the layer's from rank x heads_ on.
    AttentionDropout probsDropout(const char* op) const {
        return {is_training() ? s_.dropout.attention : 0.0, name_ + "." + op, tp_.rank() * heads_};
    }
    Tensor hidden(const Tensor& x, const char* op) const { return hiddenDropout(x, s_.dropout.hidden, name_ + "." + op, tp_, is_training()); }
    Tensor mlp(const Tensor& x) {
        const Tensor h = fc1_(x);
        return fc2_(s_.gelu ? torch::gelu(h, "tanh") : torch::relu(h));
    }
    BlockShape s_;
    std::string name_, input_, memory_;
    int64_t heads_;  // this rank's
    bool recompute_cores_ = false;  // selective recomputation of the attention cores
    TpContext tp_;                  // this rank's, when split
    Dense qkv_, proj_, cross_q_, cross_kv_, cross_proj_, fc1_, fc2_;
    std::map<std::string, ParamSplit> splits_;
};

// A head whose projection reuses the embedding table of layer 0.
// Split by tensor parallelism, the table is this rank's rows of the vocabulary (the embedding
// is split the same way) and the head computes this rank's columns of the logits.
class TiedHead : public LayerModule {
public:
    TiedHead(std::string owner_param, TpContext tp = {}) : owner_param_(std::move(owner_param)), tp_(std::move(tp)) {}
    std::optional<TiedWeight> tiedWeight() const override { return TiedWeight{0, owner_param_}; }
    void setTied(const Tensor& w) override { table_ = w; }

protected:
    Tensor project(const Tensor& x) const {
        TORCH_CHECK(table_.defined(), "the tied weight ", owner_param_, " was not handed to the head");
        if (tp_.enabled()) return vocabParallelLogits(x, table_, tp_);
        return torch::matmul(x, table_.t());
    }
    const TpContext& tp() const { return tp_; }

private:
    std::string owner_param_;
    TpContext tp_;
    Tensor table_;
};

Tensor positionsOf(const Tensor& tokens) { return torch::arange(tokens.size(1), tokens.options().dtype(torch::kLong)); }

// ---- GPT ------------------------------------------------------------------------------------

// Split by tensor parallelism: the token table by vocabulary (models/tensor_parallel.h); with
// sequence parallelism the output is this rank's part of the sequence, positions included.
class GptEmbed : public LayerModule {
public:
    explicit GptEmbed(const GptArch& a)
        : token_embed(register_module("token_embed", nn::Embedding(a.vocab, a.d_model))),
          position_embed(register_module("position_embed", nn::Embedding(a.positions, a.d_model))) {
        lookup_ = [e = token_embed.ptr()](const Tensor& t) { return e->forward(t); };
        p_ = a.dropout.hidden;
    }
    GptEmbed(const GptEmbed& whole, const TpContext& tp) : tp_(tp), p_(whole.p_) {
        auto split = register_module("token_embed", VocabParallelEmbedding(whole.token_embed, tp));
        position_embed = register_module("position_embed", whole.position_embed);
        lookup_ = [split](const Tensor& t) { return split->forward(t); };
    }
    void run(Live& live) override {
        const Tensor tokens = live.at(kDataKey);
        const Tensor sum = lookup_(tokens) + sequenceShard(position_embed->forward(positionsOf(tokens)).unsqueeze(0), tp_);
        const std::string out = embedOutput(p_, "sum", "embed_dropout");
        live[out] = hiddenDropout(sum, p_, out, tp_, is_training());
    }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<GptEmbed>(*this, tp); }
    std::map<std::string, ParamSplit> tensorParallelSplits() const override {
        if (!tp_.enabled()) return {};
        return {{"token_embed.weight", ParamSplit{0, 1}}};
    }
    nn::Embedding token_embed{nullptr}, position_embed{nullptr};  // token_embed: null when split

private:
    TpContext tp_;
    double p_ = 0;  // dropout on the sum
    std::function<Tensor(const Tensor&)> lookup_;
};

class GptHead : public TiedHead {
public:
    GptHead(const GptArch& a, std::string input)
        : TiedHead("token_embed.weight"), input_(std::move(input)), ln_f(register_module("ln_f", layerNorm(a.d_model))) {}
    GptHead(const GptHead& whole, const TpContext& tp)
        : TiedHead("token_embed.weight", tp), input_(whole.input_), ln_f(register_module("ln_f", whole.ln_f)) {}
    void run(Live& live) override { live["head.lm_head"] = project(ln_f->forward(live.at(input_))); }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<GptHead>(*this, tp); }

private:
    std::string input_;

public:
    nn::LayerNorm ln_f;
};

std::string blockName(int i) { return "block" + std::to_string(i); }

// ---- BERT -----------------------------------------------------------------------------------

// Token ids in, with a fixed segment pattern (first half sentence A, second half B).
// Split by tensor parallelism: the word table by vocabulary; with sequence parallelism the
// output (after the LayerNorm, which runs on it) is this rank's part of the sequence.
class BertEmbed : public LayerModule {
public:
    explicit BertEmbed(const BertArch& a)
        : word_embed(register_module("word_embed", nn::Embedding(a.vocab, a.d_model))),
          position_embed(register_module("position_embed", nn::Embedding(a.positions, a.d_model))),
          segment_embed(register_module("segment_embed", nn::Embedding(a.segments, a.d_model))),
          norm(register_module("norm", layerNorm(a.d_model))) {
        lookup_ = [e = word_embed.ptr()](const Tensor& t) { return e->forward(t); };
        p_ = a.dropout.hidden;
    }
    BertEmbed(const BertEmbed& whole, const TpContext& tp) : tp_(tp), p_(whole.p_) {
        auto split = register_module("word_embed", VocabParallelEmbedding(whole.word_embed, tp));
        position_embed = register_module("position_embed", whole.position_embed);
        segment_embed = register_module("segment_embed", whole.segment_embed);
        norm = register_module("norm", whole.norm);
        lookup_ = [split](const Tensor& t) { return split->forward(t); };
    }
    void run(Live& live) override {
        const Tensor tokens = live.at(kDataKey);
        const Tensor positions = positionsOf(tokens);
        const Tensor segments = (positions >= tokens.size(1) / 2).to(torch::kLong);
        const Tensor where = (position_embed->forward(positions) + segment_embed->forward(segments)).unsqueeze(0);
        const Tensor x = norm->forward(lookup_(tokens) + sequenceShard(where, tp_));
        const std::string out = embedOutput(p_, "norm", "embed_dropout");
        live[out] = hiddenDropout(x, p_, out, tp_, is_training());
    }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<BertEmbed>(*this, tp); }
    std::map<std::string, ParamSplit> tensorParallelSplits() const override {
        if (!tp_.enabled()) return {};
        return {{"word_embed.weight", ParamSplit{0, 1}}};
    }
    nn::Embedding word_embed{nullptr}, position_embed{nullptr}, segment_embed{nullptr};  // word_embed: null when split
    nn::LayerNorm norm{nullptr};

private:
    TpContext tp_;
    double p_ = 0;  // dropout after the LayerNorm
    std::function<Tensor(const Tensor&)> lookup_;
};

class BertHead : public TiedHead {
public:
    BertHead(const BertArch& a, std::string input)
        : TiedHead("word_embed.weight"), input_(std::move(input)),
          pooler(register_module("pooler", nn::Linear(a.d_model, a.d_model))),
          nsp(register_module("nsp", nn::Linear(a.d_model, 2))),
          mlm_transform(register_module("mlm_transform", nn::Linear(a.d_model, a.d_model))),
          mlm_norm(register_module("mlm_norm", layerNorm(a.d_model))),
          mlm_decoder_bias(register_parameter("mlm_decoder_bias", torch::zeros({a.vocab}))) {}
    // Split: the decoder's table and bias by vocabulary; pooler, NSP and transform whole. With
    // sequence parallelism the input is this rank's part of the sequence: the transform and
    // its LayerNorm run on it, and the decoder all-gathers it (vocabParallelLogits).
    BertHead(const BertHead& whole, const TpContext& tp)
        : TiedHead("word_embed.weight", tp), input_(whole.input_), pooler(register_module("pooler", whole.pooler)),
          nsp(register_module("nsp", whole.nsp)), mlm_transform(register_module("mlm_transform", whole.mlm_transform)),
          mlm_norm(register_module("mlm_norm", whole.mlm_norm)),
          mlm_decoder_bias(register_parameter("mlm_decoder_bias", shardOf(whole.mlm_decoder_bias, ParamSplit{0, 1}, tp.rank(), tp.size()))) {}
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<BertHead>(*this, tp); }
    std::map<std::string, ParamSplit> tensorParallelSplits() const override {
        if (!tp().enabled()) return {};
        return {{"mlm_decoder_bias", ParamSplit{0, 1}}};
    }
    void run(Live& live) override {
        const Tensor x = live.at(input_);
        live["head.nsp"] = nextSentenceLogits(x);
        const Tensor h = mlm_norm->forward(torch::gelu(mlm_transform->forward(x), "tanh"));
        live["head.mlm_decoder"] = project(h) + mlm_decoder_bias;
    }

private:
    // The pooler reads the first token. With sequence parallelism it lives on tp rank 0 alone
    // (Megatron's pooler all-gathers the whole sequence instead): rank 0's logits are the
    // loss's, with their gradient, and the other ranks receive their values for the loss
    // without one (a loss-statistics all-reduce, which no TensorParallel instruction lists).
    // The pooler's and NSP's gradients are then rank 0's alone, and summing the whole
    // parameters' gradients over the tp group at the step counts them once.
    Tensor nextSentenceLogits(const Tensor& x) {
        const Tensor mine = nsp->forward(torch::tanh(pooler->forward(x.select(1, 0))));
        if (!tp().enabled() || !tp().sequence_parallel) return mine;
        const bool first = tp().rank() == 0;
        const Tensor shared = tp().group->allReduceSum(first ? mine.detach() : torch::zeros_like(mine), TpGroup::Purpose::LossStatistics);
        return first ? mine : shared;
    }

    std::string input_;

public:
    nn::Linear pooler, nsp, mlm_transform;
    nn::LayerNorm mlm_norm;
    Tensor mlm_decoder_bias;
};

// ---- Transformer (big) ----------------------------------------------------------------------

Tensor sinusoids(int64_t seq, int64_t d, const torch::TensorOptions& opt) {
    const Tensor pos = torch::arange(seq, opt).unsqueeze(1);
    const Tensor i = torch::arange(0, d, 2, opt);
    const Tensor angle = pos / torch::pow(kSinusoidBase, i / static_cast<double>(d));
    Tensor pe = torch::zeros({seq, d}, opt);
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)}, torch::sin(angle));
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                  torch::cos(angle).narrow(1, 0, d / 2));
    return pe;
}

// Input: [b, 2, seq] token ids, source then target.
// Split by tensor parallelism: the shared table by vocabulary; with sequence parallelism both
// outputs are this rank's part of their sequence (the decoder's cross-attention all-gathers
// the encoder's output as its K and V projection's input).
class TransformerEmbed : public LayerModule {
public:
    explicit TransformerEmbed(const TransformerArch& a)
        : d_(a.d_model), source_embed(register_module("source_embed", nn::Embedding(a.vocab, a.d_model))) {
        lookup_ = [e = source_embed.ptr()](const Tensor& t) { return torch::embedding(e->weight, t); };
        p_ = a.dropout.hidden;
    }
    TransformerEmbed(const TransformerEmbed& whole, const TpContext& tp) : d_(whole.d_), tp_(tp), p_(whole.p_) {
        auto split = register_module("source_embed", VocabParallelEmbedding(whole.source_embed, tp));
        lookup_ = [split](const Tensor& t) { return split->forward(t); };
    }
    void run(Live& live) override {
        const Tensor tokens = live.at(kDataKey);
        const double scale = std::sqrt(static_cast<double>(d_));
        const Tensor pe = sequenceShard(
            sinusoids(tokens.size(2), d_, torch::TensorOptions().dtype(torch::kFloat).device(tokens.device())).unsqueeze(0), tp_);
        const std::string source = embedOutput(p_, "source_position", "source_dropout");
        const std::string target = embedOutput(p_, "target_position", "target_dropout");
        live[source] = hiddenDropout(lookup_(tokens.select(1, 0)) * scale + pe, p_, source, tp_, is_training());
        live[target] = hiddenDropout(lookup_(tokens.select(1, 1)) * scale + pe, p_, target, tp_, is_training());
    }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<TransformerEmbed>(*this, tp); }
    std::map<std::string, ParamSplit> tensorParallelSplits() const override {
        if (!tp_.enabled()) return {};
        return {{"source_embed.weight", ParamSplit{0, 1}}};
    }
    int64_t d_;
    nn::Embedding source_embed{nullptr};  // null when split

private:
    TpContext tp_;
    double p_ = 0;  // dropout on the sums with the positions
    std::function<Tensor(const Tensor&)> lookup_;
};

class TransformerHead : public TiedHead {
public:
    explicit TransformerHead(std::string input) : TiedHead("source_embed.weight"), input_(std::move(input)) {}
    TransformerHead(const TransformerHead& whole, const TpContext& tp) : TiedHead("source_embed.weight", tp), input_(whole.input_) {}
    void run(Live& live) override { live["head.output_proj"] = project(live.at(input_)); }
    LayerPtr splitTensorParallel(const TpContext& tp) const override { return std::make_shared<TransformerHead>(*this, tp); }

private:
    std::string input_;
};

// ---- initialisation ---------------------------------------------------------------------------

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// GPT-2 and BERT initialise every matrix (embeddings, projections, heads) from N(0, 0.02) and
// every bias to zero (Radford et al. 2019; BERT's initializer_range); GPT-2 scales the
// projections that write into the residual stream by 1/sqrt(2 x blocks). LayerNorm stays (1, 0).
// LibTorch's defaults instead (N(0, 1) embeddings tied to the LM head) start the loss near 20
// for a vocabulary of 100, not at ln(vocab).
LayerPtr normalInit(LayerPtr layer, double std, int blocks) {
    torch::NoGradGuard no_grad;
    const double residual_std = std / std::sqrt(2.0 * std::max(blocks, 1));
    for (auto& p : layer->named_parameters(/*recurse=*/true)) {
        Tensor& t = p.value();
        if (t.dim() >= 2) {
            const bool residual = endsWith(p.key(), "attn_proj.weight") || endsWith(p.key(), "cross_proj.weight") ||
                                  endsWith(p.key(), "mlp_fc2.weight");
            t.normal_(0.0, residual ? residual_std : std);
        } else if (endsWith(p.key(), "bias")) {
            t.zero_();
        }
    }
    return layer;
}

// The Transformer (Vaswani et al. 2017) scales its shared embedding by sqrt(d_model) on the way
// in and uses it as the output projection: entries of N(0, 1/d_model) give unit-variance inputs
// and logits of about unit scale. Its other layers keep LibTorch's (fan-in scaled) defaults.
LayerPtr transformerEmbedInit(LayerPtr layer, int64_t d_model) {
    torch::NoGradGuard no_grad;
    for (auto& p : layer->named_parameters(/*recurse=*/true))
        if (endsWith(p.key(), "embed.weight")) p.value().normal_(0.0, 1.0 / std::sqrt(static_cast<double>(d_model)));
    return layer;
}

constexpr double kInitStd = 0.02;

}  // namespace

// ---- builders -------------------------------------------------------------------------------

std::vector<std::string> gptLayerNames(const GptArch& a) {
    std::vector<std::string> n{"embed"};
    for (int i = 0; i < a.layers; ++i) n.push_back(blockName(i));
    n.push_back("head");
    return n;
}

// Layers as LibTorch constructs them; gptLayer() initialises them as the published model does.
static LayerPtr gptLayerUninitialised(const GptArch& a, int layer) {
    if (layer == 0) return std::make_shared<GptEmbed>(a);
    const std::string prev = layer == 1 ? embedOutput(a.dropout.hidden, "sum", "embed_dropout") : blockName(layer - 2) + ".mlp_residual";
    if (layer <= a.layers) {
        const BlockShape s{a.d_model, a.heads, a.d_ff, /*pre_norm=*/true, /*causal=*/true, /*gelu=*/true, /*cross=*/false, a.dropout};
        return std::make_shared<Block>(s, blockName(layer - 1), prev, "");
    }
    return std::make_shared<GptHead>(a, prev);
}

LayerPtr gptLayer(const GptArch& a, int layer, LayerInit init) {
    LayerPtr l = gptLayerUninitialised(a, layer);
    return init == LayerInit::Published ? normalInit(std::move(l), kInitStd, a.layers) : l;
}

std::vector<std::string> bertLayerNames(const BertArch& a) {
    std::vector<std::string> n{"embed"};
    for (int i = 0; i < a.layers; ++i) n.push_back(blockName(i));
    n.push_back("head");
    return n;
}

// Layers as LibTorch constructs them; bertLayer() initialises them as the published model does.
static LayerPtr bertLayerUninitialised(const BertArch& a, int layer) {
    if (layer == 0) return std::make_shared<BertEmbed>(a);
    const std::string prev = layer == 1 ? embedOutput(a.dropout.hidden, "norm", "embed_dropout") : blockName(layer - 2) + ".mlp_norm";
    if (layer <= a.layers) {
        const BlockShape s{a.d_model, a.heads, a.d_ff, /*pre_norm=*/false, /*causal=*/false, /*gelu=*/true, /*cross=*/false, a.dropout};
        return std::make_shared<Block>(s, blockName(layer - 1), prev, "");
    }
    return std::make_shared<BertHead>(a, prev);
}

LayerPtr bertLayer(const BertArch& a, int layer, LayerInit init) {
    LayerPtr l = bertLayerUninitialised(a, layer);
    return init == LayerInit::Published ? normalInit(std::move(l), kInitStd, a.layers) : l;
}

std::vector<std::string> transformerLayerNames(const TransformerArch& a) {
    std::vector<std::string> n{"embed"};
    for (int i = 0; i < a.layers; ++i) n.push_back("enc" + std::to_string(i));
    for (int i = 0; i < a.layers; ++i) n.push_back("dec" + std::to_string(i));
    n.push_back("head");
    return n;
}

LayerPtr transformerLayer(const TransformerArch& a, int layer, LayerInit init) {
    if (layer == 0) {
        LayerPtr embed = std::make_shared<TransformerEmbed>(a);
        return init == LayerInit::Published ? transformerEmbedInit(std::move(embed), a.d_model) : embed;
    }
    const int enc = layer - 1, dec = layer - 1 - a.layers;
    const std::string memory = "enc" + std::to_string(a.layers - 1) + ".mlp_norm";
    if (enc < a.layers) {
        const BlockShape s{a.d_model, a.heads, a.d_ff, /*pre_norm=*/false, /*causal=*/false, /*gelu=*/false, /*cross=*/false, a.dropout};
        const std::string prev =
            enc == 0 ? embedOutput(a.dropout.hidden, "source_position", "source_dropout") : "enc" + std::to_string(enc - 1) + ".mlp_norm";
        return std::make_shared<Block>(s, "enc" + std::to_string(enc), prev, "");
    }
    const std::string prev =
        dec == 0 ? embedOutput(a.dropout.hidden, "target_position", "target_dropout") : "dec" + std::to_string(dec - 1) + ".mlp_norm";
    if (dec < a.layers) {
        const BlockShape s{a.d_model, a.heads, a.d_ff, /*pre_norm=*/false, /*causal=*/true, /*gelu=*/false, /*cross=*/true, a.dropout};
        return std::make_shared<Block>(s, "dec" + std::to_string(dec), prev, memory);
    }
    return std::make_shared<TransformerHead>(prev);
}

}  // namespace hippie::engine
