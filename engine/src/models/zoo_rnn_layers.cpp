// GNMT as LibTorch layers, following architecture.h and the wiring of
// planners/model/zoo_rnn.cpp op for op.
#include "engine/src/models/zoo_layers.h"

namespace hippie::engine {

namespace nn = torch::nn;
using torch::Tensor;

namespace {

nn::LSTM lstm(int64_t in, int64_t hidden) { return nn::LSTM(nn::LSTMOptions(in, hidden).batch_first(true)); }

Tensor runLstm(nn::LSTM& m, const Tensor& x) { return std::get<0>(m->forward(x)); }

// Input: [b, 2, seq] token ids, source then target; one table for both.
class GnmtEmbed : public LayerModule {
public:
    explicit GnmtEmbed(const GnmtArch& a) : encoder_embed(register_module("encoder_embed", nn::Embedding(a.vocab, a.hidden))) {}
    void run(Live& live) override {
        const Tensor tokens = live.at(kDataKey);
        live["embed.encoder_embed"] = encoder_embed->forward(tokens.select(1, 0));
        live["embed.decoder_embed"] = encoder_embed->forward(tokens.select(1, 1));
    }
    nn::Embedding encoder_embed;
};

class GnmtBidirectional : public LayerModule {
public:
    explicit GnmtBidirectional(const GnmtArch& a)
        : lstm_forward(register_module("lstm_forward", lstm(a.hidden, a.hidden))),
          lstm_backward(register_module("lstm_backward", lstm(a.hidden, a.hidden))) {}
    void run(Live& live) override {
        const Tensor x = live.at("embed.encoder_embed");
        const Tensor fwd = runLstm(lstm_forward, x);
        const Tensor bwd = runLstm(lstm_backward, x.flip(1)).flip(1);
        live["enc0.concat"] = torch::cat({fwd, bwd}, 2);
    }
    nn::LSTM lstm_forward, lstm_backward;
};

// An LSTM layer whose input is `input` (concatenated with `context` when given), with a
// residual add of `skip` when `skip` is not empty.
class GnmtLayer : public LayerModule {
public:
    GnmtLayer(std::string name, int64_t in, int64_t hidden, std::string input, std::string context, std::string skip)
        : name_(std::move(name)), input_(std::move(input)), context_(std::move(context)), skip_(std::move(skip)),
          lstm_(register_module("lstm", lstm(in, hidden))) {}
    void run(Live& live) override {
        Tensor x = live.at(input_);
        if (!context_.empty()) x = torch::cat({x, live.at(context_)}, 2);
        const Tensor y = runLstm(lstm_, x);
        if (skip_.empty()) live[name_ + ".lstm"] = y;
        else live[name_ + ".residual"] = y + live.at(skip_);
    }

private:
    std::string name_, input_, context_, skip_;
    nn::LSTM lstm_;
};

// Normalised Bahdanau attention: score(q, k) = g v/|v| . tanh(W_q q + W_k k + b).
class GnmtAttention : public LayerModule {
public:
    GnmtAttention(const GnmtArch& a, std::string queries, std::string keys)
        : queries_(std::move(queries)), keys_(std::move(keys)),
          query_proj(register_module("query_proj", nn::Linear(nn::LinearOptions(a.hidden, a.hidden).bias(false)))),
          key_proj(register_module("key_proj", nn::Linear(nn::LinearOptions(a.hidden, a.hidden).bias(false)))),
          v(register_parameter("v", torch::rand({a.hidden}) * 2 - 1)),
          g(register_parameter("g", torch::full({1}, 1.0 / std::sqrt(static_cast<double>(a.hidden))))),
          b(register_parameter("b", torch::zeros({a.hidden}))) {}
    void run(Live& live) override {
        const Tensor keys = live.at(keys_);
        const Tensor q = query_proj->forward(live.at(queries_)).unsqueeze(2);  // [b, tq, 1, h]
        const Tensor k = key_proj->forward(keys).unsqueeze(1);                   // [b, 1, tk, h]
        const Tensor scores = torch::matmul(torch::tanh(q + k + b), g * v / v.norm());  // [b, tq, tk]
        live["attention.context"] = torch::matmul(torch::softmax(scores, -1), keys);
    }

private:
    std::string queries_, keys_;

public:
    nn::Linear query_proj, key_proj;
    Tensor v, g, b;
};

class GnmtHead : public LayerModule {
public:
    GnmtHead(const GnmtArch& a, std::string input)
        : input_(std::move(input)), classifier(register_module("classifier", nn::Linear(a.hidden, a.vocab))) {}
    void run(Live& live) override { live["head.classifier"] = classifier->forward(live.at(input_)); }

private:
    std::string input_;

public:
    nn::Linear classifier;
};

// The tensor layer i of one side hands on: "<side><i>.residual" or ".lstm".
std::string sideOutput(const GnmtArch& a, const char* side, int i) {
    if (i == 0) return std::string(side) == "enc" ? "enc0.concat" : "dec0.lstm";
    return side + std::to_string(i) + (i >= a.first_residual_layer ? ".residual" : ".lstm");
}

}  // namespace

std::vector<std::string> gnmtLayerNames(const GnmtArch& a) {
    std::vector<std::string> n{"embed"};
    for (int i = 0; i < a.layers; ++i) n.push_back("enc" + std::to_string(i));
    n.push_back("dec0");
    n.push_back("attention");
    for (int i = 1; i < a.layers; ++i) n.push_back("dec" + std::to_string(i));
    n.push_back("head");
    return n;
}

LayerPtr gnmtLayer(const GnmtArch& a, int layer) {
    const int64_t h = a.hidden;
    if (layer == 0) return std::make_shared<GnmtEmbed>(a);
    if (layer == 1) return std::make_shared<GnmtBidirectional>(a);
    if (layer <= a.layers) {
        const int i = layer - 1;
        const std::string prev = sideOutput(a, "enc", i - 1);
        return std::make_shared<GnmtLayer>("enc" + std::to_string(i), i == 1 ? 2 * h : h, h, prev, "",
                                           i >= a.first_residual_layer ? prev : "");
    }
    const std::string encoded = sideOutput(a, "enc", a.layers - 1);
    if (layer == a.layers + 1) return std::make_shared<GnmtLayer>("dec0", h, h, "embed.decoder_embed", "", "");
    if (layer == a.layers + 2) return std::make_shared<GnmtAttention>(a, "dec0.lstm", encoded);
    const int i = layer - a.layers - 2;  // dec1 at layers + 3
    if (i < a.layers) {
        const std::string prev = sideOutput(a, "dec", i - 1);
        return std::make_shared<GnmtLayer>("dec" + std::to_string(i), 2 * h, h, prev, "attention.context",
                                           i >= a.first_residual_layer ? prev : "");
    }
    return std::make_shared<GnmtHead>(a, sideOutput(a, "dec", a.layers - 1));
}

}  // namespace hippie::engine
