// ResNet, VGG, Inception-v3 and the MLP as LibTorch layers, following architecture.h and the
// wiring of planners/model/zoo_cnn.cpp and zoo.cpp op for op.
#include "engine/src/models/zoo_layers.h"

#include "engine/src/models/dropout.h"

namespace hippie::engine {

namespace nn = torch::nn;
using torch::Tensor;

namespace {

constexpr double kInceptionBatchNormEps = 0.001;  // torchvision BasicConv2d

nn::Conv2d conv2d(int64_t in, int64_t out, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w, bool bias) {
    return nn::Conv2d(nn::Conv2dOptions(in, out, torch::ExpandingArray<2>({kh, kw}))
                          .stride(stride)
                          .padding(torch::ExpandingArray<2>({pad_h, pad_w}))
                          .bias(bias));
}

// conv-bn-relu: zoo_cnn.cpp's convBnRelu (ResNet's and Inception's basic unit).
struct ConvBnRelu : nn::Module {
    ConvBnRelu(const std::string& name, int64_t in, int64_t out, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w,
               double eps = 1e-5)
        : conv(register_module(name, conv2d(in, out, kh, kw, stride, pad_h, pad_w, false))),
          bn(register_module(name + "_bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(eps)))) {}
    Tensor forward(const Tensor& x) { return torch::relu(bn->forward(conv->forward(x))); }
    nn::Conv2d conv;
    nn::BatchNorm2d bn;
};

// Cross-entropy heads end in a Linear over pooled features.
Tensor globalAvgPool(const Tensor& x) { return x.mean({2, 3}); }

// ---- ResNet ---------------------------------------------------------------------------------

class ResNetStem : public LayerModule {
public:
    explicit ResNetStem(const ResNetArch& a) {
        const int64_t k = a.stem_kernel;
        conv1 = std::make_shared<ConvBnRelu>("conv1", a.in_channels, a.stem_channels, k, k, 2, k / 2, k / 2);
        register_module("conv1", conv1);
    }
    void run(Live& live) override { live["stem.maxpool"] = torch::max_pool2d(conv1->forward(live.at(kDataKey)), 3, 2, 1); }
    std::shared_ptr<ConvBnRelu> conv1;
};

class Bottleneck : public LayerModule {
public:
    Bottleneck(std::string name, std::string input, int64_t in, int64_t width, int64_t expansion, int64_t stride)
        : name_(std::move(name)), input_(std::move(input)) {
        const int64_t out = expansion * width;
        conv1 = register_module("conv1", std::make_shared<ConvBnRelu>("conv", in, width, 1, 1, 1, 0, 0));
        conv2 = register_module("conv2", std::make_shared<ConvBnRelu>("conv", width, width, 3, 3, stride, 1, 1));
        conv3 = register_module("conv3", conv2d(width, out, 1, 1, 1, 0, 0, false));
        conv3_bn = register_module("conv3_bn", nn::BatchNorm2d(out));
        if (stride != 1 || in != out) {
            downsample = register_module("downsample", conv2d(in, out, 1, 1, stride, 0, 0, false));
            downsample_bn = register_module("downsample_bn", nn::BatchNorm2d(out));
        }
    }
    void run(Live& live) override {
        const Tensor x = live.at(input_);
        const Tensor y = conv3_bn->forward(conv3->forward(conv2->forward(conv1->forward(x))));
        const Tensor shortcut = downsample ? downsample_bn->forward(downsample->forward(x)) : x;
        live[name_ + ".relu"] = torch::relu(y + shortcut);
    }
    std::shared_ptr<ConvBnRelu> conv1, conv2;
    nn::Conv2d conv3{nullptr}, downsample{nullptr};
    nn::BatchNorm2d conv3_bn{nullptr}, downsample_bn{nullptr};

private:
    std::string name_, input_;
};

// A head with a single Linear classifier "fc" over the pooled (or flattened) input.
class LinearHead : public LayerModule {
public:
    LinearHead(std::string layer, std::string input, int64_t in, int64_t classes, bool pool, std::string op = "fc")
        : out_(std::move(layer) + "." + op), input_(std::move(input)), pool_(pool), fc(register_module(op, nn::Linear(in, classes))) {}
    void run(Live& live) override {
        const Tensor x = live.at(input_);
        live[out_] = fc->forward(pool_ ? globalAvgPool(x) : x.flatten(1));
    }

private:
    std::string out_, input_;
    bool pool_;

public:
    nn::Linear fc;
};

std::vector<std::pair<int, int>> resnetBlocks(const ResNetArch& a) {  // (stage, index in stage)
    std::vector<std::pair<int, int>> out;
    for (int s = 0; s < 4; ++s)
        for (int i = 0; i < a.blocks_per_stage[static_cast<size_t>(s)]; ++i) out.emplace_back(s, i);
    return out;
}

// ---- VGG ------------------------------------------------------------------------------------

struct VggConvLayer {
    std::string name;
    int64_t in = 0, out = 0;
    bool pool = false;
};

std::vector<VggConvLayer> vggConvs(const VggArch& a) {
    std::vector<VggConvLayer> out;
    int64_t in = a.in_channels;
    for (int s = 0; s < 5; ++s)
        for (int i = 0; i < a.convs_per_stage[static_cast<size_t>(s)]; ++i) {
            const int64_t c = a.stage_channels[static_cast<size_t>(s)];
            out.push_back({"conv" + std::to_string(s + 1) + "_" + std::to_string(i + 1), in, c, i + 1 == a.convs_per_stage[static_cast<size_t>(s)]});
            in = c;
        }
    return out;
}

std::string vggOutput(const VggConvLayer& l) { return l.name + (l.pool ? ".pool" : ".relu"); }

class VggConv : public LayerModule {
public:
    VggConv(VggConvLayer l, std::string input)
        : l_(std::move(l)), input_(std::move(input)), conv(register_module("conv", conv2d(l_.in, l_.out, 3, 3, 1, 1, 1, true))) {}
    void run(Live& live) override {
        Tensor x = torch::relu(conv->forward(live.at(input_)));
        if (l_.pool) x = torch::max_pool2d(x, 2, 2);
        live[vggOutput(l_)] = x;
    }

private:
    VggConvLayer l_;
    std::string input_;

public:
    nn::Conv2d conv;
};

// A fully connected layer: linear, then optionally ReLU and dropout (VGG's fc6 and fc7), its
// output under the Graph name of the last of them (denseOutput).
class Dense : public LayerModule {
public:
    Dense(std::string name, std::string input, int64_t in, int64_t out, bool relu, double dropout = 0)
        : name_(std::move(name)), input_(std::move(input)), relu_(relu), dropout_(dropout),
          linear(register_module("linear", nn::Linear(in, out))) {}
    void run(Live& live) override {
        const Tensor y = linear->forward(live.at(input_).flatten(1));
        if (!relu_) {
            live[name_ + ".linear"] = y;
            return;
        }
        const std::string out = denseOutput(name_, dropout_);
        live[out] = dropout(torch::relu(y), dropout_, DropoutSite{out}, is_training());
    }
    static std::string denseOutput(const std::string& name, double dropout) { return name + (dropout > 0 ? ".dropout" : ".relu"); }

private:
    std::string name_, input_;
    bool relu_;
    double dropout_;

public:
    nn::Linear linear;
};

// ---- Inception-v3 ---------------------------------------------------------------------------

// One branch step: a conv-bn-relu or a pool, named as its Graph op.
class InceptionStepModule : public nn::Module {
public:
    InceptionStepModule(const InceptionStep& s, int64_t in) : s_(s) {
        if (s.kind == InceptionStep::Kind::Conv) {
            unit = std::make_shared<ConvBnRelu>(s.name, in, s.out_channels, s.kernel_h, s.kernel_w, s.stride, s.pad_h, s.pad_w,
                                                kInceptionBatchNormEps);
            register_module("unit", unit);
        }
    }
    Tensor forward(const Tensor& x) {
        switch (s_.kind) {
        case InceptionStep::Kind::Conv: return unit->forward(x);
        case InceptionStep::Kind::MaxPool: return torch::max_pool2d(x, {s_.kernel_h, s_.kernel_w}, s_.stride, {s_.pad_h, s_.pad_w});
        case InceptionStep::Kind::AvgPool: return torch::avg_pool2d(x, {s_.kernel_h, s_.kernel_w}, s_.stride, {s_.pad_h, s_.pad_w});
        }
        return x;
    }
    int64_t outChannels(int64_t in) const { return s_.kind == InceptionStep::Kind::Conv ? s_.out_channels : in; }

private:
    InceptionStep s_;

public:
    std::shared_ptr<ConvBnRelu> unit;
};

int64_t inceptionModuleOut(const InceptionModule& m, int64_t in) {
    int64_t out = 0;
    for (const InceptionBranch& b : m.branches) {
        int64_t c = in;
        for (const InceptionStep& s : b.chain) c = s.kind == InceptionStep::Kind::Conv ? s.out_channels : c;
        if (b.fork.empty()) out += c;
        for (const InceptionStep& s : b.fork) out += s.kind == InceptionStep::Kind::Conv ? s.out_channels : c;
    }
    return out;
}

class InceptionStem : public LayerModule {
public:
    InceptionStem(const InceptionStemLayer& l, std::string name, std::string input, int64_t in)
        : name_(std::move(name)), input_(std::move(input)), pool_(l.max_pool_after) {
        InceptionStep conv = l.conv;
        conv.name = "conv";
        step = register_module("conv", std::make_shared<InceptionStepModule>(conv, in));
    }
    void run(Live& live) override {
        Tensor x = step->forward(live.at(input_));
        if (pool_) live[name_ + ".maxpool"] = torch::max_pool2d(x, 3, 2);
        else live[name_ + ".conv_relu"] = x;
    }
    std::shared_ptr<InceptionStepModule> step;

private:
    std::string name_, input_;
    bool pool_;
};

class InceptionMixed : public LayerModule {
public:
    InceptionMixed(const InceptionModule& m, std::string input, int64_t in) : name_(m.name), input_(std::move(input)) {
        for (const InceptionBranch& b : m.branches) {
            Branch br;
            int64_t c = in;
            for (const InceptionStep& s : b.chain) {
                br.chain.push_back(register_module(s.name, std::make_shared<InceptionStepModule>(s, c)));
                c = br.chain.back()->outChannels(c);
            }
            for (const InceptionStep& s : b.fork) br.fork.push_back(register_module(s.name, std::make_shared<InceptionStepModule>(s, c)));
            branches_.push_back(std::move(br));
        }
    }
    void run(Live& live) override {
        const Tensor x = live.at(input_);
        std::vector<Tensor> parts;
        for (Branch& b : branches_) {
            Tensor y = x;
            for (auto& s : b.chain) y = s->forward(y);
            if (b.fork.empty()) parts.push_back(y);
            for (auto& s : b.fork) parts.push_back(s->forward(y));
        }
        live[name_ + ".concat"] = torch::cat(parts, 1);
    }

private:
    struct Branch {
        std::vector<std::shared_ptr<InceptionStepModule>> chain, fork;
    };
    std::string name_, input_;
    std::vector<Branch> branches_;
};

// Main classifier over the last module, and the auxiliary classifier over `aux_after`.
class InceptionHead : public LayerModule {
public:
    InceptionHead(const InceptionArch& a, std::string input, int64_t in, std::string aux_input, int64_t aux_in)
        : a_(a), input_(std::move(input)), aux_input_(std::move(aux_input)), fc(register_module("fc", nn::Linear(in, a.classes))) {
        if (a.aux_logits) {
            aux_conv0 = register_module("aux_conv0", std::make_shared<ConvBnRelu>("conv", aux_in, a.aux_conv0_channels, 1, 1, 1, 0, 0,
                                                                                   kInceptionBatchNormEps));
            const int64_t k = a.aux_conv1_kernel;
            aux_conv1 = register_module("aux_conv1", std::make_shared<ConvBnRelu>("conv", a.aux_conv0_channels, a.aux_conv1_channels, k, k,
                                                                                   1, 0, 0, kInceptionBatchNormEps));
            aux_fc = register_module("aux_fc", nn::Linear(a.aux_conv1_channels, a.classes));
        }
    }
    void run(Live& live) override {
        live["head.fc"] = fc->forward(globalAvgPool(live.at(input_)));
        if (!a_.aux_logits) return;
        Tensor x = torch::avg_pool2d(live.at(aux_input_), a_.aux_pool_kernel, a_.aux_pool_stride);
        x = aux_conv1->forward(aux_conv0->forward(x));
        live["head.aux_fc"] = aux_fc->forward(globalAvgPool(x));
    }

private:
    InceptionArch a_;
    std::string input_, aux_input_;

public:
    nn::Linear fc;
    std::shared_ptr<ConvBnRelu> aux_conv0, aux_conv1;
    nn::Linear aux_fc{nullptr};
};

std::string stemOutput(const InceptionArch& a, size_t i, const std::vector<std::string>& names) {
    return names[i] + (a.stem[i].max_pool_after ? ".maxpool" : ".conv_relu");
}

}  // namespace

// ---- builders -------------------------------------------------------------------------------

std::vector<std::string> resnetLayerNames(const ResNetArch& a) {
    std::vector<std::string> n{"stem"};
    for (size_t i = 0; i < resnetBlocks(a).size(); ++i) n.push_back("block" + std::to_string(i));
    n.push_back("head");
    return n;
}

LayerPtr resnetLayer(const ResNetArch& a, int layer) {
    if (layer == 0) return std::make_shared<ResNetStem>(a);
    const auto blocks = resnetBlocks(a);
    const std::string prev = layer == 1 ? "stem.maxpool" : "block" + std::to_string(layer - 2) + ".relu";
    if (layer <= static_cast<int>(blocks.size())) {
        const auto [stage, index] = blocks[static_cast<size_t>(layer - 1)];
        const int64_t width = a.stage_widths[static_cast<size_t>(stage)];
        int64_t in = a.stem_channels;
        if (layer > 1) {
            const int prev_stage = blocks[static_cast<size_t>(layer - 2)].first;
            in = a.expansion * a.stage_widths[static_cast<size_t>(prev_stage)];
        }
        const int64_t stride = stage > 0 && index == 0 ? 2 : 1;
        return std::make_shared<Bottleneck>("block" + std::to_string(layer - 1), prev, in, width, a.expansion, stride);
    }
    return std::make_shared<LinearHead>("head", prev, a.expansion * a.stage_widths[3], a.classes, /*pool=*/true);
}

std::vector<std::string> vggLayerNames(const VggArch& a) {
    std::vector<std::string> n;
    for (const VggConvLayer& l : vggConvs(a)) n.push_back(l.name);
    for (const char* fc : {"fc6", "fc7", "fc8"}) n.push_back(fc);
    return n;
}

LayerPtr vggLayer(const VggArch& a, int layer) {
    const auto convs = vggConvs(a);
    const int n = static_cast<int>(convs.size());
    const std::string prev = layer == 0   ? kDataKey
                             : layer <= n ? vggOutput(convs[static_cast<size_t>(layer - 1)])
                                          : Dense::denseOutput(layer == n + 1 ? "fc6" : "fc7", a.dropout);
    if (layer < n) return std::make_shared<VggConv>(convs[static_cast<size_t>(layer)], prev);
    if (layer == n) {
        int64_t side = a.image_side;
        for (int s = 0; s < 5; ++s) side /= 2;
        return std::make_shared<Dense>("fc6", prev, a.stage_channels[4] * side * side, a.fc_width, true, a.dropout);
    }
    if (layer == n + 1) return std::make_shared<Dense>("fc7", prev, a.fc_width, a.fc_width, true, a.dropout);
    return std::make_shared<LinearHead>("fc8", prev, a.fc_width, a.classes, /*pool=*/false);
}

std::vector<std::string> inceptionLayerNames(const InceptionArch& a) {
    std::vector<std::string> n;
    for (const InceptionStemLayer& s : a.stem) n.push_back(s.conv.name);
    for (const InceptionModule& m : a.modules) n.push_back(m.name);
    n.push_back("head");
    return n;
}

LayerPtr inceptionLayer(const InceptionArch& a, int layer) {
    const auto names = inceptionLayerNames(a);
    // Channels and producer of every layer's output, in order.
    std::vector<int64_t> channels;
    std::vector<std::string> outputs;
    int64_t c = a.in_channels;
    for (size_t i = 0; i < a.stem.size(); ++i) {
        c = a.stem[i].conv.out_channels;
        channels.push_back(c);
        outputs.push_back(stemOutput(a, i, names));
    }
    for (const InceptionModule& m : a.modules) {
        c = inceptionModuleOut(m, c);
        channels.push_back(c);
        outputs.push_back(m.name + ".concat");
    }
    const size_t i = static_cast<size_t>(layer);
    const std::string prev = layer == 0 ? kDataKey : outputs[i - 1];
    const int64_t in = layer == 0 ? a.in_channels : channels[i - 1];
    if (i < a.stem.size()) return std::make_shared<InceptionStem>(a.stem[i], names[i], prev, in);
    if (i < a.stem.size() + a.modules.size()) return std::make_shared<InceptionMixed>(a.modules[i - a.stem.size()], prev, in);
    int64_t aux_in = 0;
    for (size_t k = 0; k < a.modules.size(); ++k)
        if (a.modules[k].name == a.aux_after) aux_in = channels[a.stem.size() + k];
    return std::make_shared<InceptionHead>(a, prev, in, a.aux_after + ".concat", aux_in);
}

std::vector<std::string> mlpLayerNames(const MlpArch& a) {
    std::vector<std::string> n;
    for (int i = 0; i <= a.hidden_layers; ++i) n.push_back("fc" + std::to_string(i));
    return n;
}

LayerPtr mlpLayer(const MlpArch& a, int layer) {
    const std::string name = "fc" + std::to_string(layer);
    const std::string prev = layer == 0 ? kDataKey : "fc" + std::to_string(layer - 1) + ".relu";
    const int64_t in = layer == 0 ? a.inputs : a.hidden;
    if (layer < a.hidden_layers) return std::make_shared<Dense>(name, prev, in, a.hidden, true);
    return std::make_shared<Dense>(name, prev, in, a.classes, false);
}

}  // namespace hippie::engine
