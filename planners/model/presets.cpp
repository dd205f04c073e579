#include "planners/model/presets.h"

#include <algorithm>

namespace hippie {

const std::vector<ModelPreset>& modelPresets() {
    static const std::vector<ModelPreset> presets = {
        {"gpt-tiny", "gpt2-small",
         {{"layers", 4}, {"d_model", 32}, {"heads", 2}, {"d_ff", 128}, {"vocab", 64}, {"positions", 16}}, 16,
         "gpt2-small at 4 pre-LN blocks, d_model 32, 2 heads, vocabulary 64, 16 tokens"},
        {"bert-tiny", "bert-base",
         {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"d_ff", 128}, {"vocab", 64}, {"positions", 16}}, 16,
         "bert-base at 2 post-LN blocks, d_model 32, 2 heads, vocabulary 64, 16 tokens, MLM + NSP"},
        {"mlp-tiny", "mlp", {{"layers", 4}, {"hidden", 64}, {"inputs", 32}, {"classes", 10}}, 0,
         "mlp at 32 inputs, 4 ReLU hidden layers of 64, 10 classes"},
        {"resnet-tiny", "resnet50",
         {{"blocks1", 1}, {"blocks2", 1}, {"blocks3", 1}, {"blocks4", 1}, {"width_mult", 0.125}, {"image_size", 64}, {"classes", 10}}, 0,
         "resnet50 at one bottleneck block a stage, 1/8 of its channels (stem 8), 64x64 images (its last stage 2x2), 10 classes"},
        {"vgg-tiny", "vgg16",
         {{"convs1", 1}, {"convs2", 1}, {"convs3", 1}, {"convs4", 1}, {"convs5", 1}, {"width_mult", 0.125}, {"fc_width", 64},
          {"image_size", 32}, {"classes", 10}},
         0, "vgg16 at one convolution a stage, 1/8 of its channels (8 to 64), fc6/fc7 of 64, 32x32 images, 10 classes"},
    };
    return presets;
}

const ModelPreset* findModelPreset(const std::string& name) {
    for (const ModelPreset& p : modelPresets())
        if (p.name == name) return &p;
    return nullptr;
}

std::string presetNames() {
    std::string s;
    for (const ModelPreset& p : modelPresets()) s += (s.empty() ? "" : ", ") + p.name;
    return s;
}

ModelSpec expandPreset(ModelSpec spec) {
    const ModelPreset* p = findModelPreset(spec.zoo);
    if (!p) return spec;
    const bool own_positions = spec.overrides.count("positions") > 0;
    spec.zoo = p->zoo;
    for (const auto& [key, value] : p->overrides) spec.overrides.emplace(key, value);  // the spec's own stay
    if (spec.seq_len == 0) spec.seq_len = p->seq_len;
    // A longer sequence than the preset's gets a position table as long, unless it was given.
    if (!own_positions && spec.overrides.count("positions"))
        spec.overrides["positions"] = std::max(spec.overrides["positions"], static_cast<double>(spec.seq_len));
    return spec;
}

}  // namespace hippie
