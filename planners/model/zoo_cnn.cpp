// Convolutional models of the zoo: ResNet-50/101/152 (torchvision, v1.5 strides), VGG-16/19
// and Inception-v3 with its real branches.
#include <string>
#include <variant>
#include <vector>

#include "planners/model/zoo_builder.h"

namespace hippie::zoo {
namespace {

// An NCHW activation: the tensor and its per-sample shape.
struct FeatureMap {
    Tensor tensor;
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;
};

// The input image: no op produces it, so the first convolution has no in-edge.
FeatureMap image(int64_t channels, int64_t side) { return {Tensor{-1, 0}, channels, side, side}; }

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

int64_t outSide(int64_t in, int64_t kernel, int64_t stride, int64_t pad) { return (in + 2 * pad - kernel) / stride + 1; }

// 2*K*K*Cin*Cout*Hout*Wout FLOPs a sample forward; backward computes the input and the weight
// gradient, twice forward, or the weight gradient alone on the image.
FeatureMap conv(GraphBuilder& g, const std::string& name, const FeatureMap& x, const ConvShape& s) {
    const int64_t b = g.batch();
    const int64_t h = outSide(x.height, s.kernel_h, s.stride, s.pad_h);
    const int64_t w = outSide(x.width, s.kernel_w, s.stride, s.pad_w);
    const int64_t window = s.kernel_h * s.kernel_w * x.channels;  // inputs read per output element
    OpCost c;
    c.kind = "conv2d";
    c.fwd_flops = 2.0 * static_cast<double>(b * window * s.out_channels * h * w);
    c.bwd_flops = 2 * c.fwd_flops;
    if (x.tensor.op < 0) c = withoutInputGradient(c);
    c.params = window * s.out_channels + (s.bias ? s.out_channels : 0);
    c.output_elements = b * s.out_channels * h * w;
    // im2col turns a KxK convolution into one matmul over a (window x Hout*Wout) matrix per
    // sample; a 1x1 convolution already is a matmul and needs no workspace.
    c.temp_elements = s.kernel_h * s.kernel_w > 1 ? b * window * h * w : 0;
    return {g.add(name, c, inputsOf(x)), s.out_channels, h, w};
}

FeatureMap sameShape(const FeatureMap& x, Tensor t) { return {t, x.channels, x.height, x.width}; }

// Training BatchNorm normalises each channel over the micro-batch's samples and pixels and
// needs at least this many values: LibTorch refuses 1, and over 2 the normalised values are
// +-1 whatever the input, so the input gradient vanishes and what reaches earlier layers is
// rounding noise (ResNet-50 at 32x32 pixels in micro-batches of 2: the losses of pp2 x dp2 and
// of one process, equal at step 1, were 1e-3 apart at step 3).
constexpr int64_t kMinBatchNormValues = 3;

FeatureMap batchNorm(GraphBuilder& g, const std::string& name, const FeatureMap& x) {
    const int64_t pixels = x.height * x.width;
    const Tensor t = g.add(name, normCost("batchnorm", x.tensor.elements, x.channels), {x.tensor});
    const int64_t samples = (kMinBatchNormValues + pixels - 1) / pixels;
    g.requireMicroBatch(samples, "BatchNorm '" + g.opName(t) + "' normalises a " + std::to_string(x.height) + "x" +
                                     std::to_string(x.width) + " feature map per sample and needs " +
                                     std::to_string(kMinBatchNormValues) + " values a channel");
    return sameShape(x, t);
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
void classifier(GraphBuilder& g, Tensor features, int64_t in_features, int64_t classes,
                const std::vector<Tensor>& extra_logits = {}) {
    const Tensor logits = g.add("fc", linearCost(g.batch(), in_features, classes, true), {features});
    std::vector<Tensor> loss_inputs{logits};
    loss_inputs.insert(loss_inputs.end(), extra_logits.begin(), extra_logits.end());
    g.add("loss", crossEntropyCost(g.batch(), classes), loss_inputs);
}

// ---- ResNet ---------------------------------------------------------------------------------

// 1x1 reduce, 3x3 (carrying the stride, torchvision's "v1.5"), 1x1 expand, plus the shortcut
// (a strided 1x1 projection where the shape changes).
FeatureMap bottleneck(GraphBuilder& g, const FeatureMap& x, int64_t width, int64_t expansion, int64_t stride) {
    const int64_t out = expansion * width;
    FeatureMap y = convBnRelu(g, "conv1", x, square(width, 1));
    y = convBnRelu(g, "conv2", y, square(width, 3, stride, 1));
    y = batchNorm(g, "conv3_bn", conv(g, "conv3", y, square(out, 1)));
    FeatureMap shortcut = x;
    if (stride != 1 || x.channels != out)
        shortcut = batchNorm(g, "downsample_bn", conv(g, "downsample", x, square(out, 1, stride)));
    return relu(g, "relu", add(g, "residual", y, shortcut));
}

}  // namespace

void buildResNet(GraphBuilder& g, const ResNetArch& a) {
    g.beginLayer("stem");
    FeatureMap x = convBnRelu(g, "conv1", image(a.in_channels, a.image_side),
                              square(a.stem_channels, a.stem_kernel, 2, a.stem_kernel / 2));
    x = pool(g, "maxpool", "maxpool", x, 3, 2, 1);
    int block = 0;
    for (size_t stage = 0; stage < a.blocks_per_stage.size(); ++stage) {
        for (int i = 0; i < a.blocks_per_stage[stage]; ++i) {
            g.beginLayer("block" + std::to_string(block++));
            x = bottleneck(g, x, a.stage_widths[stage], a.expansion, stage > 0 && i == 0 ? 2 : 1);
        }
    }
    g.beginLayer("head");
    classifier(g, globalAvgPool(g, "avgpool", x), x.channels, a.classes);
}

// ---- VGG ------------------------------------------------------------------------------------

// One layer per convolution (with its ReLU, and the stage's max pool after its last one) and
// one per fully connected layer, fc6 and fc7 with their dropout.
void buildVgg(GraphBuilder& g, const VggArch& a) {
    FeatureMap x = image(a.in_channels, a.image_side);
    for (size_t stage = 0; stage < a.convs_per_stage.size(); ++stage) {
        for (int i = 0; i < a.convs_per_stage[stage]; ++i) {
            g.beginLayer("conv" + std::to_string(stage + 1) + "_" + std::to_string(i + 1));
            x = relu(g, "relu", conv(g, "conv", x, square(a.stage_channels[stage], 3, 1, 1, /*bias=*/true)));
            if (i + 1 == a.convs_per_stage[stage]) x = pool(g, "pool", "maxpool", x, 2, 2);
        }
    }
    const int64_t b = g.batch();
    Tensor h = x.tensor;  // flattened: 512x7x7 at 224x224
    int64_t in = x.channels * x.height * x.width;
    for (const char* fc : {"fc6", "fc7"}) {
        g.beginLayer(fc);
        h = g.add("linear", linearCost(b, in, a.fc_width, true), {h});
        h = g.add("relu", elementwiseCost("relu", h.elements, kReluFlopsPerElement), {h});
        if (a.dropout > 0) h = g.add("dropout", dropoutCost(h.elements), {h});
        in = a.fc_width;
    }
    g.beginLayer("fc8");
    classifier(g, h, in, a.classes);
}

// ---- Inception-v3 ---------------------------------------------------------------------------
// torchvision's layout (Szegedy et al. 2016): each module's branches are separate op chains
// joined by one concat, so the graph forks and joins inside every module layer.

namespace {

FeatureMap step(GraphBuilder& g, const FeatureMap& x, const InceptionStep& s) {
    switch (s.kind) {
    case InceptionStep::Kind::MaxPool:
    case InceptionStep::Kind::AvgPool: {
        // Every Inception pool is square.
        const char* kind = s.kind == InceptionStep::Kind::MaxPool ? "maxpool" : "avgpool";
        return pool(g, s.name, kind, x, s.kernel_h, s.stride, s.pad_h);
    }
    case InceptionStep::Kind::Conv:
        break;
    }
    return convBnRelu(g, s.name, x, {s.out_channels, s.kernel_h, s.kernel_w, s.stride, s.pad_h, s.pad_w, false});
}

FeatureMap inceptionModule(GraphBuilder& g, const FeatureMap& x, const InceptionModule& m) {
    std::vector<FeatureMap> parts;
    for (const InceptionBranch& b : m.branches) {
        FeatureMap y = x;
        for (const InceptionStep& s : b.chain) y = step(g, y, s);
        if (b.fork.empty()) parts.push_back(y);
        for (const InceptionStep& s : b.fork) parts.push_back(step(g, y, s));
    }
    return concat(g, "concat", parts);
}

// The auxiliary classifier (torchvision InceptionAux), trained with the main loss.
Tensor inceptionAuxLogits(GraphBuilder& g, const InceptionArch& a, const FeatureMap& features) {
    FeatureMap x = pool(g, "aux_pool", "avgpool", features, a.aux_pool_kernel, a.aux_pool_stride);
    x = convBnRelu(g, "aux_conv0", x, square(a.aux_conv0_channels, 1));
    x = convBnRelu(g, "aux_conv1", x, square(a.aux_conv1_channels, a.aux_conv1_kernel));
    // torchvision pools to 1x1 here; at 299x299 the map already is 1x1 and the pool is no op.
    Tensor flat = x.tensor;
    if (x.height * x.width > 1) flat = globalAvgPool(g, "aux_avgpool", x);
    return g.add("aux_fc", linearCost(g.batch(), x.channels, a.classes, true), {flat});
}

}  // namespace

void buildInception(GraphBuilder& g, const InceptionArch& a) {
    FeatureMap x = image(a.in_channels, a.image_side);
    for (const InceptionStemLayer& s : a.stem) {
        g.beginLayer(s.conv.name);
        InceptionStep c = s.conv;
        c.name = "conv";
        x = step(g, x, c);
        if (s.max_pool_after) x = pool(g, "maxpool", "maxpool", x, 3, 2);
    }
    FeatureMap aux_input;
    for (const InceptionModule& m : a.modules) {
        g.beginLayer(m.name);
        x = inceptionModule(g, x, m);
        if (m.name == a.aux_after) aux_input = x;
    }
    g.beginLayer("head");
    const Tensor features = globalAvgPool(g, "avgpool", x);
    std::vector<Tensor> extra;
    if (a.aux_logits) extra.push_back(inceptionAuxLogits(g, a, aux_input));
    classifier(g, features, x.channels, a.classes, extra);
}

// ---- Catalogue ------------------------------------------------------------------------------

namespace {

ZooEntry resnetEntry(int depth, double published) {
    const std::string name = "resnet" + std::to_string(depth);
    const ResNetArch& a = std::get<ResNetArch>(*publishedArchitecture(name));
    const auto& blocks = a.blocks_per_stage;
    const std::string description = "ResNet-" + std::to_string(depth) + " (He et al. 2016), bottleneck blocks " +
                                    std::to_string(blocks[0]) + "-" + std::to_string(blocks[1]) + "-" +
                                    std::to_string(blocks[2]) + "-" + std::to_string(blocks[3]) + ", " +
                                    std::to_string(a.image_side) + "x" + std::to_string(a.image_side) + "; " +
                                    std::to_string(static_cast<int64_t>(published)) +
                                    " parameters (torchvision weights metadata)";
    return {name, "resnet", description, 0, published};
}

ZooEntry vggEntry(int depth, double published) {
    const std::string name = "vgg" + std::to_string(depth);
    const VggArch& a = std::get<VggArch>(*publishedArchitecture(name));
    const std::string description = "VGG-" + std::to_string(depth) + " (Simonyan & Zisserman 2015), " +
                                    std::to_string(a.image_side) + "x" + std::to_string(a.image_side) +
                                    ", no batch norm; " + std::to_string(static_cast<int64_t>(published)) +
                                    " parameters (torchvision weights metadata; paper Table 2: " +
                                    (depth == 16 ? "138M" : "144M") + ")";
    return {name, "vgg", description, 0, published};
}

ZooEntry inceptionEntry() {
    const InceptionArch& a = std::get<InceptionArch>(*publishedArchitecture("inception-v3"));
    return {"inception-v3", "inception",
            "Inception-v3 (Szegedy et al. 2016) as in torchvision, " + std::to_string(a.image_side) + "x" +
                std::to_string(a.image_side) + ", with the auxiliary classifier; 27161264 parameters (torchvision "
                "weights metadata)",
            0, 27161264};
}

}  // namespace

std::vector<ZooEntry> cnnEntries() {
    return {resnetEntry(50, 25557032), resnetEntry(101, 44549160), resnetEntry(152, 60192808),
            vggEntry(16, 138357544),   vggEntry(19, 143667240),     inceptionEntry()};
}

}  // namespace hippie::zoo
