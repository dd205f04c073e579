// Convolutional models of the zoo: ResNet-50/101/152 (torchvision, v1.5 strides), VGG-16/19
// and Inception-v3 with its real branches.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "planners/model/zoo_builder.h"

namespace hippie::zoo {
namespace {

constexpr int64_t kImageNetClasses = 1000;
constexpr int64_t kRgbChannels = 3;
constexpr int64_t kImageSide = 224;           // ResNet, VGG
constexpr int64_t kInceptionImageSide = 299;  // Inception-v3

// An NCHW activation: the tensor and its per-sample shape.
struct FeatureMap {
    Tensor tensor;
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;
};

// The input image: no op produces it, so the first convolution has no in-edge.
FeatureMap image(int64_t side) { return {Tensor{-1, 0}, kRgbChannels, side, side}; }

std::vector<Tensor> inputsOf(const FeatureMap& x) {
    if (x.tensor.op < 0) return {};
    return {x.tensor};
}

struct ConvShape {
    int64_t out_channels = 0;
    int64_t kernel_h = 1;
    int64_t kernel_w = 1;
    int64_t stride = 1;
    int64_t pad_h = 0;
    int64_t pad_w = 0;
    bool bias = false;  // false where a batch norm follows
};

ConvShape square(int64_t out, int64_t kernel, int64_t stride = 1, int64_t pad = 0, bool bias = false) {
    return {out, kernel, kernel, stride, pad, pad, bias};
}

// Inception's factorised kh x kw convolutions, padded to keep the spatial size.
ConvShape rect(int64_t out, int64_t kernel_h, int64_t kernel_w) {
    return {out, kernel_h, kernel_w, 1, (kernel_h - 1) / 2, (kernel_w - 1) / 2, false};
}

int64_t outSide(int64_t in, int64_t kernel, int64_t stride, int64_t pad) { return (in + 2 * pad - kernel) / stride + 1; }

// 2*K*K*Cin*Cout*Hout*Wout FLOPs a sample forward; backward computes the input and the weight
// gradient, twice forward.
FeatureMap conv(GraphBuilder& g, const std::string& name, const FeatureMap& x, const ConvShape& s) {
    const int64_t b = g.batch();
    const int64_t h = outSide(x.height, s.kernel_h, s.stride, s.pad_h);
    const int64_t w = outSide(x.width, s.kernel_w, s.stride, s.pad_w);
    const int64_t window = s.kernel_h * s.kernel_w * x.channels;  // inputs read per output element
    OpCost c;
    c.kind = "conv2d";
    c.fwd_flops = 2.0 * static_cast<double>(b * window * s.out_channels * h * w);
    c.bwd_flops = 2 * c.fwd_flops;
    c.params = window * s.out_channels + (s.bias ? s.out_channels : 0);
    c.output_elements = b * s.out_channels * h * w;
    // im2col turns a KxK convolution into one matmul over a (window x Hout*Wout) matrix per
    // sample; a 1x1 convolution already is a matmul and needs no workspace.
    c.temp_elements = s.kernel_h * s.kernel_w > 1 ? b * window * h * w : 0;
    return {g.add(name, c, inputsOf(x)), s.out_channels, h, w};
}

FeatureMap sameShape(const FeatureMap& x, Tensor t) { return {t, x.channels, x.height, x.width}; }

FeatureMap batchNorm(GraphBuilder& g, const std::string& name, const FeatureMap& x) {
    return sameShape(x, g.add(name, normCost("batchnorm", x.tensor.elements, x.channels), {x.tensor}));
}

FeatureMap relu(GraphBuilder& g, const std::string& name, const FeatureMap& x) {
    return sameShape(x, g.add(name, elementwiseCost("relu", x.tensor.elements, kReluFlopsPerElement), {x.tensor}));
}

FeatureMap add(GraphBuilder& g, const std::string& name, const FeatureMap& a, const FeatureMap& b) {
    return sameShape(a, g.add(name, elementwiseCost("add", a.tensor.elements, kAddFlopsPerElement), {a.tensor, b.tensor}));
}

// Max or average pooling: K*K FLOPs an output element.
FeatureMap pool(GraphBuilder& g, const std::string& name, const char* kind, const FeatureMap& x, int64_t kernel,
                int64_t stride, int64_t pad = 0) {
    const int64_t h = outSide(x.height, kernel, stride, pad), w = outSide(x.width, kernel, stride, pad);
    const OpCost c = elementwiseCost(kind, g.batch() * x.channels * h * w, static_cast<double>(kernel * kernel));
    return {g.add(name, c, {x.tensor}), x.channels, h, w};
}

// Global average pool to one value per channel: the classifier's input.
Tensor globalAvgPool(GraphBuilder& g, const std::string& name, const FeatureMap& x) {
    OpCost c = elementwiseCost("avgpool", x.tensor.elements, kAddFlopsPerElement);
    c.output_elements = g.batch() * x.channels;
    return g.add(name, c, {x.tensor});
}

FeatureMap concat(GraphBuilder& g, const std::string& name, const std::vector<FeatureMap>& parts) {
    std::vector<Tensor> inputs;
    int64_t channels = 0;
    for (const FeatureMap& p : parts) {
        inputs.push_back(p.tensor);
        channels += p.channels;
    }
    const FeatureMap& first = parts.front();
    const int64_t elements = g.batch() * channels * first.height * first.width;
    return {g.add(name, elementwiseCost("concat", elements, kCopyFlopsPerElement), inputs), channels, first.height,
            first.width};
}

// Convolution, batch norm, ReLU: ResNet's and Inception's basic unit ("BasicConv2d").
FeatureMap convBnRelu(GraphBuilder& g, const std::string& name, const FeatureMap& x, const ConvShape& s) {
    const FeatureMap y = batchNorm(g, name + "_bn", conv(g, name, x, s));
    return relu(g, name + "_relu", y);
}

// Linear classifier and softmax cross-entropy; Inception adds its auxiliary logits to the loss.
void classifier(GraphBuilder& g, Tensor features, int64_t in_features, const std::vector<Tensor>& extra_logits = {}) {
    const Tensor logits = g.add("fc", linearCost(g.batch(), in_features, kImageNetClasses, true), {features});
    std::vector<Tensor> loss_inputs{logits};
    loss_inputs.insert(loss_inputs.end(), extra_logits.begin(), extra_logits.end());
    g.add("loss", crossEntropyCost(g.batch(), kImageNetClasses), loss_inputs);
}

// ---- ResNet ---------------------------------------------------------------------------------

constexpr int64_t kResNetStemChannels = 64;
constexpr int64_t kBottleneckExpansion = 4;

// 1x1 reduce, 3x3 (carrying the stride, torchvision's "v1.5"), 1x1 expand, plus the shortcut
// (a strided 1x1 projection where the shape changes).
FeatureMap bottleneck(GraphBuilder& g, const FeatureMap& x, int64_t width, int64_t stride) {
    const int64_t out = kBottleneckExpansion * width;
    FeatureMap y = convBnRelu(g, "conv1", x, square(width, 1));
    y = convBnRelu(g, "conv2", y, square(width, 3, stride, 1));
    y = batchNorm(g, "conv3_bn", conv(g, "conv3", y, square(out, 1)));
    FeatureMap shortcut = x;
    if (stride != 1 || x.channels != out)
        shortcut = batchNorm(g, "downsample_bn", conv(g, "downsample", x, square(out, 1, stride)));
    return relu(g, "relu", add(g, "residual", y, shortcut));
}

void buildResNet(GraphBuilder& g, const std::array<int, 4>& blocks_per_stage) {
    g.beginLayer("stem");
    FeatureMap x = convBnRelu(g, "conv1", image(kImageSide), square(kResNetStemChannels, 7, 2, 3));
    x = pool(g, "maxpool", "maxpool", x, 3, 2, 1);
    int block = 0;
    for (size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
        const int64_t width = kResNetStemChannels << stage;
        for (int i = 0; i < blocks_per_stage[stage]; ++i) {
            g.beginLayer("block" + std::to_string(block++));
            x = bottleneck(g, x, width, stage > 0 && i == 0 ? 2 : 1);
        }
    }
    g.beginLayer("head");
    classifier(g, globalAvgPool(g, "avgpool", x), x.channels);
}

ZooModel resnetModel(int depth, const std::array<int, 4>& blocks, double published) {
    const std::string name = "resnet" + std::to_string(depth);
    const std::string description = "ResNet-" + std::to_string(depth) + " (He et al. 2016), bottleneck blocks " +
                                    std::to_string(blocks[0]) + "-" + std::to_string(blocks[1]) + "-" +
                                    std::to_string(blocks[2]) + "-" + std::to_string(blocks[3]) + ", 224x224; " +
                                    std::to_string(static_cast<int64_t>(published)) +
                                    " parameters (torchvision weights metadata)";
    return {{name, "resnet", description, 0, published}, [blocks](GraphBuilder& g, int64_t) { buildResNet(g, blocks); }};
}

// ---- VGG ------------------------------------------------------------------------------------

constexpr std::array<int64_t, 5> kVggStageChannels{64, 128, 256, 512, 512};
constexpr int64_t kVggFcWidth = 4096;

// One layer per convolution (with its ReLU, and the stage's max pool after its last one) and
// one per fully connected layer.
void buildVgg(GraphBuilder& g, const std::array<int, 5>& convs_per_stage) {
    FeatureMap x = image(kImageSide);
    for (size_t stage = 0; stage < convs_per_stage.size(); ++stage) {
        for (int i = 0; i < convs_per_stage[stage]; ++i) {
            g.beginLayer("conv" + std::to_string(stage + 1) + "_" + std::to_string(i + 1));
            x = relu(g, "relu", conv(g, "conv", x, square(kVggStageChannels[stage], 3, 1, 1, /*bias=*/true)));
            if (i + 1 == convs_per_stage[stage]) x = pool(g, "pool", "maxpool", x, 2, 2);
        }
    }
    const int64_t b = g.batch();
    Tensor h = x.tensor;  // flattened 512x7x7
    int64_t in = x.channels * x.height * x.width;
    for (const char* fc : {"fc6", "fc7"}) {
        g.beginLayer(fc);
        h = g.add("linear", linearCost(b, in, kVggFcWidth, true), {h});
        h = g.add("relu", elementwiseCost("relu", h.elements, kReluFlopsPerElement), {h});
        in = kVggFcWidth;
    }
    g.beginLayer("fc8");
    classifier(g, h, in);
}

ZooModel vggModel(int depth, const std::array<int, 5>& convs, double published) {
    const std::string name = "vgg" + std::to_string(depth);
    const std::string description = "VGG-" + std::to_string(depth) +
                                    " (Simonyan & Zisserman 2015), 224x224, no batch norm; " +
                                    std::to_string(static_cast<int64_t>(published)) +
                                    " parameters (torchvision weights metadata; paper Table 2: " +
                                    (depth == 16 ? "138M" : "144M") + ")";
    return {{name, "vgg", description, 0, published}, [convs](GraphBuilder& g, int64_t) { buildVgg(g, convs); }};
}

// ---- Inception-v3 ---------------------------------------------------------------------------
// torchvision's layout (Szegedy et al. 2016): each module's branches are separate op chains
// joined by one concat, so the graph forks and joins inside every module layer.

FeatureMap inceptionA(GraphBuilder& g, const FeatureMap& x, int64_t pool_features) {
    const FeatureMap b1 = convBnRelu(g, "branch1x1", x, square(64, 1));
    FeatureMap b5 = convBnRelu(g, "branch5x5_1", x, square(48, 1));
    b5 = convBnRelu(g, "branch5x5_2", b5, square(64, 5, 1, 2));
    FeatureMap b3 = convBnRelu(g, "branch3x3dbl_1", x, square(64, 1));
    b3 = convBnRelu(g, "branch3x3dbl_2", b3, square(96, 3, 1, 1));
    b3 = convBnRelu(g, "branch3x3dbl_3", b3, square(96, 3, 1, 1));
    FeatureMap bp = pool(g, "branch_pool_avg", "avgpool", x, 3, 1, 1);
    bp = convBnRelu(g, "branch_pool", bp, square(pool_features, 1));
    return concat(g, "concat", {b1, b5, b3, bp});
}

FeatureMap inceptionB(GraphBuilder& g, const FeatureMap& x) {
    const FeatureMap b3 = convBnRelu(g, "branch3x3", x, square(384, 3, 2));
    FeatureMap bd = convBnRelu(g, "branch3x3dbl_1", x, square(64, 1));
    bd = convBnRelu(g, "branch3x3dbl_2", bd, square(96, 3, 1, 1));
    bd = convBnRelu(g, "branch3x3dbl_3", bd, square(96, 3, 2));
    const FeatureMap bp = pool(g, "branch_pool", "maxpool", x, 3, 2);
    return concat(g, "concat", {b3, bd, bp});
}

FeatureMap inceptionC(GraphBuilder& g, const FeatureMap& x, int64_t c7) {
    const FeatureMap b1 = convBnRelu(g, "branch1x1", x, square(192, 1));
    FeatureMap b7 = convBnRelu(g, "branch7x7_1", x, square(c7, 1));
    b7 = convBnRelu(g, "branch7x7_2", b7, rect(c7, 1, 7));
    b7 = convBnRelu(g, "branch7x7_3", b7, rect(192, 7, 1));
    FeatureMap bd = convBnRelu(g, "branch7x7dbl_1", x, square(c7, 1));
    bd = convBnRelu(g, "branch7x7dbl_2", bd, rect(c7, 7, 1));
    bd = convBnRelu(g, "branch7x7dbl_3", bd, rect(c7, 1, 7));
    bd = convBnRelu(g, "branch7x7dbl_4", bd, rect(c7, 7, 1));
    bd = convBnRelu(g, "branch7x7dbl_5", bd, rect(192, 1, 7));
    FeatureMap bp = pool(g, "branch_pool_avg", "avgpool", x, 3, 1, 1);
    bp = convBnRelu(g, "branch_pool", bp, square(192, 1));
    return concat(g, "concat", {b1, b7, bd, bp});
}

FeatureMap inceptionD(GraphBuilder& g, const FeatureMap& x) {
    FeatureMap b3 = convBnRelu(g, "branch3x3_1", x, square(192, 1));
    b3 = convBnRelu(g, "branch3x3_2", b3, square(320, 3, 2));
    FeatureMap b7 = convBnRelu(g, "branch7x7x3_1", x, square(192, 1));
    b7 = convBnRelu(g, "branch7x7x3_2", b7, rect(192, 1, 7));
    b7 = convBnRelu(g, "branch7x7x3_3", b7, rect(192, 7, 1));
    b7 = convBnRelu(g, "branch7x7x3_4", b7, square(192, 3, 2));
    const FeatureMap bp = pool(g, "branch_pool", "maxpool", x, 3, 2);
    return concat(g, "concat", {b3, b7, bp});
}

// Two of InceptionE's branches fork again into parallel 1x3 and 3x1 convolutions.
FeatureMap inceptionE(GraphBuilder& g, const FeatureMap& x) {
    const FeatureMap b1 = convBnRelu(g, "branch1x1", x, square(320, 1));
    const FeatureMap b3 = convBnRelu(g, "branch3x3_1", x, square(384, 1));
    const FeatureMap b3a = convBnRelu(g, "branch3x3_2a", b3, rect(384, 1, 3));
    const FeatureMap b3b = convBnRelu(g, "branch3x3_2b", b3, rect(384, 3, 1));
    FeatureMap bd = convBnRelu(g, "branch3x3dbl_1", x, square(448, 1));
    bd = convBnRelu(g, "branch3x3dbl_2", bd, square(384, 3, 1, 1));
    const FeatureMap bda = convBnRelu(g, "branch3x3dbl_3a", bd, rect(384, 1, 3));
    const FeatureMap bdb = convBnRelu(g, "branch3x3dbl_3b", bd, rect(384, 3, 1));
    FeatureMap bp = pool(g, "branch_pool_avg", "avgpool", x, 3, 1, 1);
    bp = convBnRelu(g, "branch_pool", bp, square(192, 1));
    return concat(g, "concat", {b1, b3a, b3b, bda, bdb, bp});
}

// The auxiliary classifier on Mixed_6e, trained with the main loss (torchvision InceptionAux).
Tensor inceptionAuxLogits(GraphBuilder& g, const FeatureMap& mixed_6e) {
    FeatureMap x = pool(g, "aux_pool", "avgpool", mixed_6e, 5, 3);
    x = convBnRelu(g, "aux_conv0", x, square(128, 1));
    x = convBnRelu(g, "aux_conv1", x, square(768, 5));
    return g.add("aux_fc", linearCost(g.batch(), x.channels, kImageNetClasses, true), {x.tensor});
}

void buildInceptionV3(GraphBuilder& g) {
    struct StemConv {
        const char* name;
        ConvShape shape;
        bool then_pool;
    };
    const StemConv stem[] = {{"conv1a", square(32, 3, 2), false},
                             {"conv2a", square(32, 3), false},
                             {"conv2b", square(64, 3, 1, 1), true},
                             {"conv3b", square(80, 1), false},
                             {"conv4a", square(192, 3), true}};
    FeatureMap x = image(kInceptionImageSide);
    for (const StemConv& s : stem) {
        g.beginLayer(s.name);
        x = convBnRelu(g, "conv", x, s.shape);
        if (s.then_pool) x = pool(g, "maxpool", "maxpool", x, 3, 2);
    }
    using Module = FeatureMap (*)(GraphBuilder&, const FeatureMap&);
    const std::pair<const char*, Module> modules[] = {
        {"mixed_5b", [](GraphBuilder& b, const FeatureMap& in) { return inceptionA(b, in, 32); }},
        {"mixed_5c", [](GraphBuilder& b, const FeatureMap& in) { return inceptionA(b, in, 64); }},
        {"mixed_5d", [](GraphBuilder& b, const FeatureMap& in) { return inceptionA(b, in, 64); }},
        {"mixed_6a", inceptionB},
        {"mixed_6b", [](GraphBuilder& b, const FeatureMap& in) { return inceptionC(b, in, 128); }},
        {"mixed_6c", [](GraphBuilder& b, const FeatureMap& in) { return inceptionC(b, in, 160); }},
        {"mixed_6d", [](GraphBuilder& b, const FeatureMap& in) { return inceptionC(b, in, 160); }},
        {"mixed_6e", [](GraphBuilder& b, const FeatureMap& in) { return inceptionC(b, in, 192); }},
        {"mixed_7a", inceptionD},
        {"mixed_7b", inceptionE},
        {"mixed_7c", inceptionE},
    };
    FeatureMap mixed_6e;  // feeds the auxiliary classifier
    for (const auto& [name, module] : modules) {
        g.beginLayer(name);
        x = module(g, x);
        if (std::string(name) == "mixed_6e") mixed_6e = x;
    }
    g.beginLayer("head");
    const Tensor features = globalAvgPool(g, "avgpool", x);
    classifier(g, features, x.channels, {inceptionAuxLogits(g, mixed_6e)});
}

}  // namespace

std::vector<ZooModel> cnnModels() {
    return {
        resnetModel(50, {3, 4, 6, 3}, 25557032),
        resnetModel(101, {3, 4, 23, 3}, 44549160),
        resnetModel(152, {3, 8, 36, 3}, 60192808),
        vggModel(16, {2, 2, 3, 3, 3}, 138357544),
        vggModel(19, {2, 2, 4, 4, 4}, 143667240),
        {{"inception-v3", "inception",
          "Inception-v3 (Szegedy et al. 2016) as in torchvision, 299x299, with the auxiliary classifier; "
          "27161264 parameters (torchvision weights metadata)",
          0, 27161264},
         [](GraphBuilder& g, int64_t) { buildInceptionV3(g); }},
    };
}

}  // namespace hippie::zoo
