// The engine's LibTorch builders against the zoo's Graphs (no Qt: LibTorch and Qt 6 are not
// linked together). For every zoo model at its published size, layer by layer (one layer at a
// time, freed before the next, so gpt3-13b fits in memory): the same layer count and names,
// and each layer's parameters equal the Graph's parameters of that layer. For every model at a
// small size: a forward through all layers produces, under each crossing op's name, a tensor
// of exactly the bytes the Graph's edges say leave that op for later layers (what the
// Program's sends carry), and the loss is finite (for token models, within 0.5 of a uniform
// guess over the vocabulary: the published initialisations). Selective recomputation: the
// layers holding the Graph's attention cores, and only they, take it, and every parameter's
// gradient through them equals the stored path's.
// Args: [MODEL...] (default: every zoo model).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/src/models/trainable.h"
#include "engine/src/models/zoo_layers.h"
#include "planners/model/architecture.h"
#include "planners/model/attention_core.h"
#include "planners/model/zoo.h"

namespace he = hippie::engine;
using hippie::Graph;
using hippie::ModelSpec;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        std::cout << "FAIL: " << what << "\n";
        ++failures;
    }
}

constexpr int64_t kFp32Bytes = 4;

int64_t paramCount(const he::LayerPtr& l) {
    int64_t n = 0;
    for (const auto& p : l->parameters()) n += p.numel();
    return n;
}

void publishedSize(const hippie::ZooEntry& e) {
    ModelSpec spec;
    spec.zoo = e.name;
    const Graph g = hippie::buildZooModel(spec);
    const hippie::Architecture arch = hippie::resolveArchitecture(spec);
    const auto layers = g.layers();
    check(he::zooLayerCount(arch) == g.layerCount(), e.name + ": " + std::to_string(he::zooLayerCount(arch)) + " engine layers, graph has " +
                                                           std::to_string(g.layerCount()));
    int64_t total = 0;
    int built = 0;
    const int count = std::min(he::zooLayerCount(arch), g.layerCount());
    for (int i = 0; i < count; ++i) {
        const hippie::Layer& gl = layers[static_cast<size_t>(i)];
        check(he::zooLayerName(arch, i) == gl.name, e.name + " layer " + std::to_string(i) + ": engine '" + he::zooLayerName(arch, i) +
                                                        "', graph '" + gl.name + "'");
        // Building a published-size layer fills every parameter from LibTorch's one serial
        // generator (gpt3-13b's 40 blocks took 4 of this test's 9 minutes). Inside a run of
        // layers the Graph gives equal parameter bytes (a transformer's blocks), the first and
        // the last are built; the ones between come from the same builder call.
        const auto bytes = [&](int k) { return layers[static_cast<size_t>(k)].param_bytes; };
        if (i > 0 && i + 1 < count && bytes(i - 1) == gl.param_bytes && bytes(i + 1) == gl.param_bytes) {
            total += gl.param_bytes / kFp32Bytes;
            continue;
        }
        ++built;
        torch::NoGradGuard no_grad;
        const int64_t n = paramCount(he::buildZooLayer(arch, i, he::LayerInit::Constructed));  // freed at the end of the statement
        total += n;
        check(n * kFp32Bytes == gl.param_bytes, e.name + " layer " + gl.name + ": engine " + std::to_string(n) + " parameters, graph " +
                                                    std::to_string(gl.param_bytes / kFp32Bytes));
    }
    std::cout << e.name << ": " << g.layerCount() << " layers (" << built << " built), " << total << " parameters (graph "
              << g.paramCount() << ")\n";
}

// Small sizes that run in a second, with the overrides each family accepts.
std::map<std::string, double> smallOverrides(const std::string& family) {
    if (family == "gpt" || family == "bert") return {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"vocab", 64}};
    if (family == "transformer") return {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"d_ff", 64}, {"vocab", 64}};
    if (family == "gnmt") return {{"layers", 3}, {"hidden", 16}, {"vocab", 64}};
    if (family == "resnet")
        return {{"blocks1", 1}, {"blocks2", 2}, {"blocks3", 1}, {"blocks4", 1}, {"width_mult", 0.125}, {"image_size", 64}, {"classes", 10}};
    if (family == "vgg")
        return {{"convs1", 1}, {"convs2", 1}, {"convs3", 2}, {"convs4", 1}, {"convs5", 1}, {"width_mult", 0.0625}, {"fc_width", 32},
                {"image_size", 32}, {"classes", 10}};
    if (family == "inception") return {{"width_mult", 0.0625}, {"image_size", 299}, {"classes", 10}};  // 299: the aux head needs it
    return {{"layers", 2}, {"inputs", 32}, {"hidden", 64}, {"classes", 10}};
}

// The zoo model at its small overrides, two samples (of 8 tokens where it reads sequences).
ModelSpec smallSpec(const hippie::ZooEntry& e) {
    ModelSpec spec;
    spec.zoo = e.name;
    spec.batch_size = 2;
    spec.overrides = smallOverrides(e.family);
    if (e.default_seq_len > 0) spec.seq_len = 8;
    return spec;
}

void wiring(const hippie::ZooEntry& e) {
    const ModelSpec spec = smallSpec(e);
    const Graph g = hippie::buildZooModel(spec);
    const auto model = he::makeZooTrainable(spec);
    const auto layers = model->layers(0, model->layerCount() - 1, 1, torch::Device(torch::kCPU));
    // Bytes leaving each op for later layers, by op name, and the layer reading it last.
    std::map<std::string, int64_t> crossing;
    std::map<std::string, int> last_reader;
    for (const hippie::Edge& edge : g.edges) {
        const hippie::Op& src = g.ops[static_cast<size_t>(edge.src)];
        const int reader = g.ops[static_cast<size_t>(edge.dst)].layer;
        if (reader == src.layer) continue;
        crossing[src.name] = std::max(crossing[src.name], edge.bytes);
        last_reader[src.name] = std::max(last_reader[src.name], reader);
    }
    const he::Batch batch = model->synthetic(spec.batch_size, 1, 0);
    he::Live live{{he::kDataKey, batch.inputs}};
    for (size_t i = 0; i < layers.size(); ++i) {
        if (const auto tied = layers[i]->tiedWeight())
            layers[i]->setTied(*layers.at(static_cast<size_t>(tied->owner_layer))->named_parameters().find(tied->owner_param));
        try {
            layers[i]->run(live);
        } catch (const std::exception& ex) {
            check(false, e.name + " layer " + std::to_string(i) + " forward: " + std::string(ex.what()).substr(0, 300));
            return;
        }
        for (const auto& [name, bytes] : crossing) {
            const int producer = g.ops[static_cast<size_t>([&] {
                                           for (size_t k = 0; k < g.ops.size(); ++k)
                                               if (g.ops[k].name == name) return k;
                                           return size_t{0};
                                       }())]
                                     .layer;
            if (producer != static_cast<int>(i)) continue;
            auto it = live.find(name);
            check(it != live.end(), e.name + ": layer " + std::to_string(i) + " does not produce '" + name + "', which a later layer reads");
            if (it != live.end())
                check(static_cast<int64_t>(it->second.numel()) * kFp32Bytes == bytes,
                      e.name + ": '" + name + "' has " + std::to_string(it->second.numel() * kFp32Bytes) + " bytes, the graph's edges " +
                          std::to_string(bytes));
        }
    }
    const double loss = model->loss(live, batch.targets).item<double>();
    check(std::isfinite(loss) && loss > 0, e.name + ": loss " + std::to_string(loss));
    // Token models start as their papers' initialisation does: near a uniform guess over the
    // vocabulary (BERT adds its two-way next-sentence guess), not an order of magnitude above it.
    const auto arch = hippie::resolveArchitecture(spec);
    double uniform = 0;
    if (const auto* a = std::get_if<hippie::GptArch>(&arch)) uniform = std::log(static_cast<double>(a->vocab));
    if (const auto* a = std::get_if<hippie::BertArch>(&arch)) uniform = std::log(static_cast<double>(a->vocab)) + std::log(2.0);
    double tolerance = 0.5;
    if (const auto* a = std::get_if<hippie::TransformerArch>(&arch)) {
        uniform = std::log(static_cast<double>(a->vocab));
        // Its one embedding table scales tokens by sqrt(d_model) into the residual stream and
        // scores the output with the same rows: the decoder's own input token starts ahead.
        tolerance = 1.5;
    }
    if (const auto* a = std::get_if<hippie::GnmtArch>(&arch)) uniform = std::log(static_cast<double>(a->vocab));
    if (uniform > 0)
        check(std::abs(loss - uniform) < tolerance,
              e.name + ": initial loss " + std::to_string(loss) + ", a uniform guess is " + std::to_string(uniform));
}

std::string scientific(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

// One forward and backward of the small model, its layers' cores recomputed in backward or
// not: every parameter's gradient, by layer and name.
std::map<std::string, torch::Tensor> gradients(const std::vector<he::LayerPtr>& layers, const he::Trainable& model,
                                               const he::Batch& batch, const std::set<int>& core_layers, bool selective,
                                               const std::string& what) {
    he::Live live{{he::kDataKey, batch.inputs}};
    for (size_t i = 0; i < layers.size(); ++i) {
        for (auto& p : layers[i]->parameters()) p.mutable_grad().reset();
        const bool takes = layers[i]->setSelectiveRecompute(selective);
        check(takes == (core_layers.count(static_cast<int>(i)) > 0),
              what + ": layer " + std::to_string(i) + (takes ? " takes" : " refuses") + " selective recomputation but the graph has " +
                  (takes ? "no" : "an") + " attention core there");
    }
    for (const auto& layer : layers) layer->run(live);
    model.loss(live, batch.targets).backward();
    std::map<std::string, torch::Tensor> out;
    for (size_t i = 0; i < layers.size(); ++i)
        for (const auto& p : layers[i]->named_parameters())
            if (p.value().grad().defined()) out[std::to_string(i) + "." + p.key()] = p.value().grad().clone();
    return out;
}

void selectiveRecomputation(const hippie::ZooEntry& e) {
    const ModelSpec spec = smallSpec(e);
    const Graph g = hippie::buildZooModel(spec);
    std::set<int> core_layers;
    for (const hippie::AttentionCore& c : hippie::attentionCores(g)) core_layers.insert(g.ops[static_cast<size_t>(c.scores)].layer);
    const auto model = he::makeZooTrainable(spec);
    const auto layers = model->layers(0, model->layerCount() - 1, 1, torch::Device(torch::kCPU));
    for (const auto& layer : layers)
        if (const auto tied = layer->tiedWeight())
            layer->setTied(*layers.at(static_cast<size_t>(tied->owner_layer))->named_parameters().find(tied->owner_param));
    const he::Batch batch = model->synthetic(spec.batch_size, 1, 0);
    const auto stored = gradients(layers, *model, batch, core_layers, false, e.name);
    const auto recomputed = gradients(layers, *model, batch, core_layers, true, e.name);
    if (core_layers.empty()) return;
    check(stored.size() == recomputed.size() && !stored.empty(), e.name + ": selective recomputation changes which parameters get a gradient");
    for (const auto& [name, grad] : stored) {
        const auto it = recomputed.find(name);
        if (it == recomputed.end()) continue;
        const double scale = grad.abs().max().item<double>();
        const double diff = (grad - it->second).abs().max().item<double>();
        // fp32, the same operations: equal to rounding (a 1e-3 error in one gradient is far above).
        check(diff <= 1e-6 * std::max(scale, 1e-12),
              e.name + ": selective recomputation: gradient of " + name + " differs by " + scientific(diff) + " (largest " +
                  scientific(scale) + ")");
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> only(argv + 1, argv + argc);
    for (const hippie::ZooEntry& e : hippie::zooModels()) {
        if (!only.empty() && std::find(only.begin(), only.end(), e.name) == only.end()) continue;
        try {
            publishedSize(e);
            wiring(e);
            selectiveRecomputation(e);
        } catch (const std::exception& ex) {
            check(false, e.name + ": " + std::string(ex.what()).substr(0, 300));
        }
    }
    std::cout << (failures ? "FAILED: " + std::to_string(failures) : std::string("all zoo models match their graphs")) << "\n";
    return failures ? 1 : 0;
}
