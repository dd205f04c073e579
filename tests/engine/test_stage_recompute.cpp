// Full recomputation in the engine's Stage is activation checkpointing per layer: a stage of
// four recomputed layers keeps only the layers' outputs after its forward, and its backward
// rebuilds one layer at a time, right before that layer's backward, releasing the rebuild
// (its autograd graph and the activations saved in it) before the next rebuild starts. The
// zb-h1 input pass keeps every rebuilt layer's graph for its weight pass, which releases them.
// Where the Program checkpoints the stage's input alone, the four layers are rebuilt together.
// Gradients (of the weights and of the stage's input) equal a stage that recomputes nothing,
// bit for bit (the same CPU kernels run on the same values). A backward without its
// Recompute, or a second Recompute of the same micro-batch, is refused with a message.
// Args: none.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/runtime/stage.h"

namespace he = hippie::engine;
using torch::Tensor;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

using Graphs = std::vector<std::weak_ptr<torch::autograd::Node>>;

// A chained layer of two linears; it notes the autograd node of every output it produces with
// a graph (a rebuild inside backward, or a forward that keeps activations).
class TrackedLayer : public he::LayerModule {
public:
    TrackedLayer(int64_t width, Graphs* graphs) : graphs_(graphs) {
        up_ = register_module("up", torch::nn::Linear(width, 2 * width));
        down_ = register_module("down", torch::nn::Linear(2 * width, width));
    }
    Tensor forward(Tensor x) override {
        Tensor y = torch::tanh(down_(torch::tanh(up_(x))));
        if (y.requires_grad()) graphs_->push_back(y.grad_fn());
        return y;
    }

private:
    torch::nn::Linear up_{nullptr}, down_{nullptr};
    Graphs* graphs_;
};

int alive(const Graphs& g) {
    int n = 0;
    for (const auto& w : g) n += !w.expired();
    return n;
}

constexpr int kLayers = 4;
constexpr int64_t kWidth = 8, kBatch = 3;

struct Built {
    std::unique_ptr<he::Stage> stage;
    std::vector<he::LayerPtr> layers;
};

// The same four layers (seeded) as one segment whose input comes from another segment.
Built build(bool recompute, Graphs* graphs, bool per_layer = true) {
    torch::manual_seed(7);
    Built b;
    for (int i = 0; i < kLayers; ++i) b.layers.push_back(std::make_shared<TrackedLayer>(kWidth, graphs));
    he::SegmentIO io;
    io.first_layer = 0;
    io.last_layer = kLayers - 1;
    io.inputs = {{he::kChainKey, 0}};
    io.outputs = {he::kChainKey};
    io.keep.assign(kLayers, {he::kChainKey});
    b.stage = std::make_unique<he::Stage>(1, b.layers, std::vector<bool>(kLayers, recompute), io, false, false, per_layer);
    return b;
}

std::vector<Tensor> weightGrads(const he::Stage& st) {
    std::vector<Tensor> out;
    for (const Tensor& p : st.parameters()) out.push_back(p.grad().clone());
    return out;
}

bool sameGrads(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].defined() || !b[i].defined() || !torch::equal(a[i], b[i])) return false;
    return true;
}

void oneLayerAtATime(bool split) {
    const std::string how = split ? "zb-h1 (input pass, weight pass)" : "backward";
    torch::manual_seed(11);
    const Tensor x = torch::randn({kBatch, kWidth});
    const Tensor dy = torch::randn({kBatch, kWidth});

    Graphs plain_graphs;
    Built plain = build(false, &plain_graphs);
    plain.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    const he::Live plain_dx = plain.stage->backward(0, {{he::kChainKey, dy}});
    const auto plain_grads = weightGrads(*plain.stage);

    Graphs graphs;
    Built rc = build(true, &graphs);
    rc.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    check(graphs.empty(), how + ": the recomputed forward keeps no graph");
    rc.stage->recompute(0, nullptr);
    check(graphs.empty(), how + ": Recompute only arms the rebuilds (none has run)");
    std::vector<int> alive_at_rebuild;
    rc.stage->setRebuildWrapper([&](const std::function<void()>& rebuild) {
        alive_at_rebuild.push_back(alive(graphs));
        rebuild();
    });
    he::Live dx;
    if (split) {
        dx = rc.stage->backwardInput(0, {{he::kChainKey, dy}});
        check(alive(graphs) == kLayers, how + ": after the input pass every rebuilt layer's graph is kept for the weight pass (" +
                                            std::to_string(alive(graphs)) + " of " + std::to_string(kLayers) + ")");
        rc.stage->backwardWeight(0);
    } else {
        dx = rc.stage->backward(0, {{he::kChainKey, dy}});
    }
    check(static_cast<int>(alive_at_rebuild.size()) == kLayers,
          how + ": " + std::to_string(alive_at_rebuild.size()) + " rebuilds, one per recomputed layer");
    bool one_at_a_time = true, kept_growing = true;
    for (size_t i = 0; i < alive_at_rebuild.size(); ++i) {
        one_at_a_time = one_at_a_time && alive_at_rebuild[i] == 0;
        kept_growing = kept_growing && alive_at_rebuild[i] == static_cast<int>(i);
    }
    std::string seen;
    for (int n : alive_at_rebuild) seen += std::to_string(n) + " ";
    if (split) check(kept_growing, how + ": rebuilt graphs alive at each rebuild grow 0 1 2 3 (saw " + seen + ")");
    else check(one_at_a_time, how + ": no earlier rebuild is alive when the next starts (saw " + seen + ")");
    check(alive(graphs) == 0, how + ": every rebuild released after the backward");
    check(sameGrads(weightGrads(*rc.stage), plain_grads), how + ": weight gradients equal the stage without recomputation");
    check(dx.count(he::kChainKey) && plain_dx.count(he::kChainKey) && torch::equal(dx.at(he::kChainKey), plain_dx.at(he::kChainKey)),
          how + ": input gradients equal the stage without recomputation");
}

// Program::recompute_per_layer false: the four layers are one piece, rebuilt once from the
// stage's input, with the same gradients.
void wholeStageFromItsInput() {
    torch::manual_seed(11);
    const Tensor x = torch::randn({kBatch, kWidth});
    const Tensor dy = torch::randn({kBatch, kWidth});
    Graphs plain_graphs, graphs;
    Built plain = build(false, &plain_graphs);
    plain.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    const he::Live plain_dx = plain.stage->backward(0, {{he::kChainKey, dy}});
    Built rc = build(true, &graphs, false);
    rc.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    rc.stage->recompute(0, nullptr);
    int rebuilds = 0;
    rc.stage->setRebuildWrapper([&](const std::function<void()>& rebuild) {
        ++rebuilds;
        rebuild();
    });
    const he::Live dx = rc.stage->backward(0, {{he::kChainKey, dy}});
    check(rebuilds == 1 && static_cast<int>(graphs.size()) == kLayers,
          "stage input only: one rebuild of the four layers (" + std::to_string(rebuilds) + " rebuild(s), " + std::to_string(graphs.size()) +
              " layer graphs)");
    check(sameGrads(weightGrads(*rc.stage), weightGrads(*plain.stage)) && torch::equal(dx.at(he::kChainKey), plain_dx.at(he::kChainKey)),
          "stage input only: gradients equal the stage without recomputation");
}

template <class F>
void refused(const std::string& what, const std::string& expected, F&& f) {
    try {
        f();
        check(false, what + ": not refused");
    } catch (const std::exception& e) {
        const std::string msg = e.what();
        check(msg.find(expected) != std::string::npos, what + ": refused with \"" + msg.substr(0, msg.find('\n')) + "\"");
    }
}

void misuseIsRefused() {
    Graphs graphs;
    Built rc = build(true, &graphs);
    const Tensor x = torch::randn({kBatch, kWidth});
    rc.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    refused("backward without Recompute", "before its Recompute",
            [&] { rc.stage->backward(0, {{he::kChainKey, torch::ones({kBatch, kWidth})}}); });
    Built rc2 = build(true, &graphs);
    rc2.stage->forward(0, {{he::kChainKey, x}}, nullptr);
    rc2.stage->recompute(0, nullptr);
    refused("Recompute twice", "recomputed twice", [&] { rc2.stage->recompute(0, nullptr); });
}

}  // namespace

int main() {
    torch::set_num_threads(1);
    oneLayerAtATime(false);
    oneLayerAtATime(true);
    wholeStageFromItsInput();
    misuseIsRefused();
    std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)" : std::string("all checks passed")) << "\n";
    return failures ? 1 : 0;
}
