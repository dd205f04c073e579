#include "planners/model/architecture.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>

#include "planners/common/error.h"
#include "planners/model/presets.h"

namespace hippie {
namespace {

// ---- The published sizes ----------------------------------------------------------------------

constexpr int64_t kGptVocab = 50257;  // GPT-2 BPE, also used by GPT-3
constexpr int64_t kBertVocab = 30522;  // WordPiece, uncased
constexpr int64_t kBertPositions = 512;
constexpr int64_t kBertSegments = 2;
constexpr int64_t kImageNetClasses = 1000;
constexpr int64_t kRgbChannels = 3;
constexpr int64_t kImageNetSide = 224;     // ResNet, VGG
constexpr int64_t kInceptionSide = 299;    // Inception-v3
constexpr int64_t kFeedForwardRatio = 4;   // d_ff = 4 d_model in every zoo transformer

// GPT-2's training configuration (resid_pdrop, embd_pdrop, attn_pdrop of the released model's
// Hugging Face config) and Megatron-LM's defaults (--hidden-dropout, --attention-dropout), which
// its GPT-3 recipes keep; Brown et al. 2020 state none.
constexpr Dropout kGptDropout{0.1, 0.1};
// Devlin et al. 2019, appendix A.2: "a dropout probability of 0.1 on all layers"
// (hidden_dropout_prob, attention_probs_dropout_prob).
constexpr Dropout kBertDropout{0.1, 0.1};
// Vaswani et al. 2017, Table 3 "big" (English-German): residual dropout 0.3; no dropout on the
// attention probabilities (section 5.4).
constexpr Dropout kTransformerBigDropout{0.3, 0.0};
// Simonyan & Zisserman 2015, section 3.1: "dropout regularisation for the first two
// fully-connected layers (dropout ratio set to 0.5)".
constexpr double kVggDropout = 0.5;

GptArch gpt(int layers, int64_t d_model, int64_t heads, int64_t n_ctx) {
    return {layers, d_model, heads, kFeedForwardRatio * d_model, kGptVocab, n_ctx, n_ctx, kGptDropout};
}

BertArch bert(int layers, int64_t d_model, int64_t heads) {
    return {layers, d_model, heads, kFeedForwardRatio * d_model, kBertVocab, kBertPositions, kBertSegments,
            kBertPositions, kBertDropout};
}

// Vaswani et al. 2017, Table 3 "big"; Vaswani et al. batch by ~25k tokens, not by a fixed
// length; tensor2tensor's transformer_big (behind the MLPerf Transformer reference) caps
// sequences at max_length 256.
TransformerArch transformerBig() { return {6, 1024, 16, 4096, 37000, 256, kTransformerBigDropout}; }

ResNetArch resnet(std::array<int, 4> blocks) {
    ResNetArch a;
    a.blocks_per_stage = blocks;
    a.stage_widths = {64, 128, 256, 512};
    a.stem_channels = 64;
    a.in_channels = kRgbChannels;
    a.image_side = kImageNetSide;
    a.classes = kImageNetClasses;
    return a;
}

VggArch vgg(std::array<int, 5> convs) {
    VggArch a;
    a.convs_per_stage = convs;
    a.stage_channels = {64, 128, 256, 512, 512};
    a.fc_width = 4096;
    a.in_channels = kRgbChannels;
    a.image_side = kImageNetSide;
    a.classes = kImageNetClasses;
    a.dropout = kVggDropout;
    return a;
}

// ---- Inception-v3, torchvision's layout ------------------------------------------------------

using Step = InceptionStep;
using Branch = InceptionBranch;

Step conv(const char* name, int64_t out, int64_t kernel, int64_t stride = 1, int64_t pad = 0) {
    return {Step::Kind::Conv, name, out, kernel, kernel, stride, pad, pad};
}
// Factorised kh x kw convolutions, padded to keep the spatial size.
Step rect(const char* name, int64_t out, int64_t kernel_h, int64_t kernel_w) {
    return {Step::Kind::Conv, name, out, kernel_h, kernel_w, 1, (kernel_h - 1) / 2, (kernel_w - 1) / 2};
}
Step avgPoolSame(const char* name) { return {Step::Kind::AvgPool, name, 0, 3, 3, 1, 1, 1}; }
Step maxPoolHalve(const char* name) { return {Step::Kind::MaxPool, name, 0, 3, 3, 2, 0, 0}; }

InceptionModule inceptionA(const char* name, int64_t pool_features) {
    return {name,
            {{{conv("branch1x1", 64, 1)}, {}},
             {{conv("branch5x5_1", 48, 1), conv("branch5x5_2", 64, 5, 1, 2)}, {}},
             {{conv("branch3x3dbl_1", 64, 1), conv("branch3x3dbl_2", 96, 3, 1, 1), conv("branch3x3dbl_3", 96, 3, 1, 1)},
              {}},
             {{avgPoolSame("branch_pool_avg"), conv("branch_pool", pool_features, 1)}, {}}}};
}

InceptionModule inceptionB(const char* name) {
    return {name,
            {{{conv("branch3x3", 384, 3, 2)}, {}},
             {{conv("branch3x3dbl_1", 64, 1), conv("branch3x3dbl_2", 96, 3, 1, 1), conv("branch3x3dbl_3", 96, 3, 2)},
              {}},
             {{maxPoolHalve("branch_pool")}, {}}}};
}

InceptionModule inceptionC(const char* name, int64_t c7) {
    return {name,
            {{{conv("branch1x1", 192, 1)}, {}},
             {{conv("branch7x7_1", c7, 1), rect("branch7x7_2", c7, 1, 7), rect("branch7x7_3", 192, 7, 1)}, {}},
             {{conv("branch7x7dbl_1", c7, 1), rect("branch7x7dbl_2", c7, 7, 1), rect("branch7x7dbl_3", c7, 1, 7),
               rect("branch7x7dbl_4", c7, 7, 1), rect("branch7x7dbl_5", 192, 1, 7)},
              {}},
             {{avgPoolSame("branch_pool_avg"), conv("branch_pool", 192, 1)}, {}}}};
}

InceptionModule inceptionD(const char* name) {
    return {name,
            {{{conv("branch3x3_1", 192, 1), conv("branch3x3_2", 320, 3, 2)}, {}},
             {{conv("branch7x7x3_1", 192, 1), rect("branch7x7x3_2", 192, 1, 7), rect("branch7x7x3_3", 192, 7, 1),
               conv("branch7x7x3_4", 192, 3, 2)},
              {}},
             {{maxPoolHalve("branch_pool")}, {}}}};
}

// Two branches fork again into parallel 1x3 and 3x1 convolutions.
InceptionModule inceptionE(const char* name) {
    return {name,
            {{{conv("branch1x1", 320, 1)}, {}},
             {{conv("branch3x3_1", 384, 1)}, {rect("branch3x3_2a", 384, 1, 3), rect("branch3x3_2b", 384, 3, 1)}},
             {{conv("branch3x3dbl_1", 448, 1), conv("branch3x3dbl_2", 384, 3, 1, 1)},
              {rect("branch3x3dbl_3a", 384, 1, 3), rect("branch3x3dbl_3b", 384, 3, 1)}},
             {{avgPoolSame("branch_pool_avg"), conv("branch_pool", 192, 1)}, {}}}};
}

InceptionArch inceptionV3() {
    InceptionArch a;
    a.stem = {{conv("conv1a", 32, 3, 2), false},
              {conv("conv2a", 32, 3), false},
              {conv("conv2b", 64, 3, 1, 1), true},
              {conv("conv3b", 80, 1), false},
              {conv("conv4a", 192, 3), true}};
    a.modules = {inceptionA("mixed_5b", 32), inceptionA("mixed_5c", 64), inceptionA("mixed_5d", 64),
                 inceptionB("mixed_6a"),     inceptionC("mixed_6b", 128), inceptionC("mixed_6c", 160),
                 inceptionC("mixed_6d", 160), inceptionC("mixed_6e", 192), inceptionD("mixed_7a"),
                 inceptionE("mixed_7b"),     inceptionE("mixed_7c")};
    a.aux_logits = true;
    a.aux_after = "mixed_6e";
    a.aux_conv0_channels = 128;
    a.aux_conv1_channels = 768;
    a.in_channels = kRgbChannels;
    a.image_side = kInceptionSide;
    a.classes = kImageNetClasses;
    return a;
}

// GNMT-8 as the MLPerf v0.5/v0.6 reference: 4 + 4 LSTM layers of 1024, residuals from the
// third layer, 32320-token shared vocabulary, --train-max-length 50.
GnmtArch gnmt8() { return {4, 1024, 32320, 2, 50}; }

// A plain deep MLP for scheduling experiments: wide and uniform, every layer costs about the same.
MlpArch mlp() { return {8, 1024, 4096, kImageNetClasses}; }

const std::vector<std::pair<std::string, Architecture>>& table() {
    static const std::vector<std::pair<std::string, Architecture>> models = {
        {"gpt2-small", gpt(12, 768, 12, 1024)},
        {"gpt2-medium", gpt(24, 1024, 16, 1024)},
        {"gpt2-large", gpt(36, 1280, 20, 1024)},
        {"gpt2-xl", gpt(48, 1600, 25, 1024)},
        // Brown et al. 2020, Table 2.1. For 1.3B it prints 24 heads beside d_head 128 and d_model
        // 2048, which are 16 heads; 24 split 2048 into no whole head, so the table takes 16 (as
        // GPT-Neo 1.3B does). Heads change no parameter count.
        {"gpt3-1.3b", gpt(24, 2048, 16, 2048)},
        {"gpt3-2.7b", gpt(32, 2560, 32, 2048)},
        {"gpt3-6.7b", gpt(32, 4096, 32, 2048)},
        // Table 2.1 prints d_model 5140 beside 40 heads of d_head 128, which is 5120; 5140 splits
        // into no whole head, so the table takes 5120 (12.85B parameters, 1.1% under the
        // published 13.0B).
        {"gpt3-13b", gpt(40, 5120, 40, 2048)},
        {"bert-base", bert(12, 768, 12)},
        {"bert-large", bert(24, 1024, 16)},
        {"transformer-big", transformerBig()},
        {"resnet50", resnet({3, 4, 6, 3})},
        {"resnet101", resnet({3, 4, 23, 3})},
        {"resnet152", resnet({3, 8, 36, 3})},
        {"vgg16", vgg({2, 2, 3, 3, 3})},
        {"vgg19", vgg({2, 2, 4, 4, 4})},
        {"inception-v3", inceptionV3()},
        {"gnmt-8", gnmt8()},
        {"mlp", mlp()},
    };
    return models;
}

// ---- Override keys ----------------------------------------------------------------------------

constexpr double kMaxDepth = 1024;       // layers / blocks / convolutions a stage
constexpr double kMaxWidth = 65536;      // d_model, hidden, channels, fc width
constexpr double kMaxFeedForward = 4 * kMaxWidth;
constexpr double kMaxVocab = 1 << 22;    // vocabularies and classes
constexpr double kMaxSeq = 65536;
constexpr double kMaxImageSide = 4096;
constexpr double kMaxDropout = 0.9;
constexpr double kMinWidthMult = 1.0 / 64;
constexpr double kMaxWidthMult = 16;
// Bound on the per-sample element count of the largest activation (attention scores, additive
// attention's pairs), so a graph of up to kMaxBatch samples counts its bytes without overflow.
constexpr double kMaxSampleElements = 1099511627776.0;  // 2^40
// Smallest image the CNNs' downsampling leaves at least one pixel of (ResNet, VGG: /32).
constexpr int64_t kMinDownsampledSide = 32;

OverrideKey key(const char* k, const char* meaning, double min, double max, bool integer = true) {
    return {k, meaning, min, max, integer};
}

const std::map<std::string, std::vector<OverrideKey>>& keyTable() {
    static const auto keys = [] {
        const OverrideKey layers = key("layers", "transformer blocks", 1, kMaxDepth);
        const OverrideKey d_model = key("d_model", "model width; heads must divide it", 1, kMaxWidth);
        const OverrideKey heads = key("heads", "attention heads; must divide d_model", 1, kMaxWidth);
        const OverrideKey d_ff = key("d_ff", "feed-forward width (default 4 d_model)", 1, kMaxFeedForward);
        const OverrideKey vocab = key("vocab", "vocabulary size", 2, kMaxVocab);
        const OverrideKey positions = key("positions", "rows of the learned position table; at least seq_len", 1, kMaxSeq);
        const OverrideKey seq_len = key("seq_len", "tokens a sample", 1, kMaxSeq);
        const OverrideKey width_mult =
            key("width_mult", "multiplies every convolution's channels (rounded, at least 1)", kMinWidthMult,
                kMaxWidthMult, false);
        const OverrideKey classes = key("classes", "output classes", 2, kMaxVocab);
        const OverrideKey dropout =
            key("dropout", "dropout probability on the embedding and each sub-layer's output; 0: none", 0, kMaxDropout, false);
        const OverrideKey attention_dropout =
            key("attention_dropout", "dropout probability on the attention probabilities; 0: none", 0, kMaxDropout, false);
        std::map<std::string, std::vector<OverrideKey>> t;
        t["gpt"] = {layers, d_model, heads, d_ff, vocab, positions, seq_len, dropout, attention_dropout};
        t["bert"] = {layers, d_model, heads, d_ff, vocab, positions, seq_len, dropout, attention_dropout};
        t["transformer"] = {key("layers", "encoder blocks = decoder blocks", 1, kMaxDepth), d_model, heads, d_ff,
                            vocab, key("seq_len", "source = target tokens a sample", 1, kMaxSeq), dropout, attention_dropout};
        t["resnet"] = {key("blocks1", "bottleneck blocks in stage 1", 1, kMaxDepth),
                       key("blocks2", "bottleneck blocks in stage 2", 1, kMaxDepth),
                       key("blocks3", "bottleneck blocks in stage 3", 1, kMaxDepth),
                       key("blocks4", "bottleneck blocks in stage 4", 1, kMaxDepth),
                       width_mult,
                       key("image_size", "image height and width in pixels", kMinDownsampledSide, kMaxImageSide),
                       classes};
        t["vgg"] = {key("convs1", "convolutions in stage 1", 1, kMaxDepth),
                    key("convs2", "convolutions in stage 2", 1, kMaxDepth),
                    key("convs3", "convolutions in stage 3", 1, kMaxDepth),
                    key("convs4", "convolutions in stage 4", 1, kMaxDepth),
                    key("convs5", "convolutions in stage 5", 1, kMaxDepth),
                    width_mult,
                    key("fc_width", "width of fc6 and fc7", 1, kMaxWidth),
                    key("image_size", "image height and width in pixels", kMinDownsampledSide, kMaxImageSide),
                    classes, key("dropout", "dropout probability on fc6's and fc7's outputs; 0: none", 0, kMaxDropout, false)};
        t["inception"] = {width_mult,
                          key("image_size", "image height and width in pixels (299 or more with aux_logits=1)", 75,
                              kMaxImageSide),
                          classes, key("aux_logits", "1: train the auxiliary classifier too, 0: drop it", 0, 1)};
        t["gnmt"] = {key("layers", "LSTM layers a side (the first encoder layer bidirectional)", 2, kMaxDepth),
                     key("hidden", "LSTM and embedding width", 1, kMaxWidth), vocab,
                     key("seq_len", "source = target tokens a sample", 1, kMaxSeq)};
        t["mlp"] = {key("layers", "hidden layers", 1, kMaxDepth), key("hidden", "hidden layer width", 1, kMaxWidth),
                    key("inputs", "input features", 1, kMaxVocab), classes};
        return t;
    }();
    return keys;
}

std::string formatNumber(double v) {
    std::ostringstream s;
    s.precision(12);
    s << v;
    return s.str();
}

std::string keyList(const std::vector<OverrideKey>& keys) {
    std::string s;
    for (const OverrideKey& k : keys) s += (s.empty() ? "" : ", ") + k.key;
    return s;
}

// Checks every override's key and range; the cross-key rules are the families' own.
void checkKeys(const ModelSpec& spec, const std::string& family) {
    const std::vector<OverrideKey>& keys = overrideKeys(family);
    for (const auto& entry : spec.overrides) {
        // Named copies, not structured bindings: clang 14 (the sanitizer build) cannot capture those.
        const std::string& name = entry.first;
        const double value = entry.second;
        const auto k = std::find_if(keys.begin(), keys.end(), [&](const OverrideKey& o) { return o.key == name; });
        if (name == "seq_len" && k != keys.end())
            throw Error("override 'seq_len' of '" + spec.zoo + "' belongs in the model's sequence length, not in its "
                        "size overrides");
        if (k == keys.end())
            throw Error("override '" + name + "' is not a size of '" + spec.zoo + "' (family " + family +
                        "); it accepts: " + keyList(keys));
        const bool whole = std::floor(value) == value;
        if (!(value >= k->min && value <= k->max) || (k->integer && !whole))
            throw Error("override '" + name + "' of '" + spec.zoo + "' is " + formatNumber(value) + "; it must be " +
                        (k->integer ? "a whole number" : "a number") + " from " + formatNumber(k->min) + " to " +
                        formatNumber(k->max));
    }
}

// The value of `key` when overridden (checkKeys kept it in range).
std::optional<double> numberOverride(const ModelSpec& spec, const char* key) {
    const auto it = spec.overrides.find(key);
    if (it == spec.overrides.end()) return std::nullopt;
    return it->second;
}

// The same as an integer (checkKeys made it whole).
std::optional<int64_t> intOverride(const ModelSpec& spec, const char* key) {
    if (const auto v = numberOverride(spec, key)) return static_cast<int64_t>(*v);
    return std::nullopt;
}

double widthMult(const ModelSpec& spec) { return numberOverride(spec, "width_mult").value_or(1.0); }

int64_t scaled(int64_t channels, double mult) {
    return std::max<int64_t>(1, std::llround(static_cast<double>(channels) * mult));
}

[[noreturn]] void failCombination(const ModelSpec& spec, const std::string& what) {
    throw Error("overrides of '" + spec.zoo + "': " + what);
}

// The sequence length: spec.seq_len, or the published one when 0.
int64_t sequence(const ModelSpec& spec, int64_t published) { return spec.seq_len > 0 ? spec.seq_len : published; }

void checkSequence(const ModelSpec& spec, int64_t seq) {
    if (seq > static_cast<int64_t>(kMaxSeq))
        failCombination(spec, "seq_len " + std::to_string(seq) + " is above " + formatNumber(kMaxSeq));
}

// d_model, heads and d_ff of a transformer; d_ff follows d_model (x4) unless given.
void resolveWidths(const ModelSpec& spec, int64_t& d_model, int64_t& heads, int64_t& d_ff) {
    const int64_t published_d_model = d_model;
    d_model = intOverride(spec, "d_model").value_or(d_model);
    heads = intOverride(spec, "heads").value_or(heads);
    d_ff = intOverride(spec, "d_ff").value_or(d_model == published_d_model ? d_ff : kFeedForwardRatio * d_model);
    if (d_model % heads != 0)
        failCombination(spec, "heads " + std::to_string(heads) + " must divide d_model " + std::to_string(d_model) +
                                  " (set 'heads' or 'd_model')");
}

void checkAttentionSize(const ModelSpec& spec, int64_t heads, int64_t seq) {
    if (static_cast<double>(heads) * static_cast<double>(seq) * static_cast<double>(seq) > kMaxSampleElements)
        failCombination(spec, "heads x seq_len^2 = " + std::to_string(heads) + " x " + std::to_string(seq) +
                                  "^2 attention scores a sample is above 2^40; lower 'heads' or 'seq_len'");
}

int64_t positionsFor(const ModelSpec& spec, int64_t published, int64_t seq) {
    if (const auto p = intOverride(spec, "positions")) {
        if (*p < seq)
            failCombination(spec, "positions " + std::to_string(*p) + " is below seq_len " + std::to_string(seq) +
                                      "; a sample needs a position for each token");
        return *p;
    }
    return std::max(published, seq);  // a longer sequence grows the table so the model stays buildable
}

// GPT, BERT and the Transformer share their keys; only the first two have a learned position table.
template <class TransformerLike>
TransformerLike resolveTransformer(const ModelSpec& spec, TransformerLike a) {
    a.layers = static_cast<int>(intOverride(spec, "layers").value_or(a.layers));
    resolveWidths(spec, a.d_model, a.heads, a.d_ff);
    a.vocab = intOverride(spec, "vocab").value_or(a.vocab);
    a.seq_len = sequence(spec, a.seq_len);
    checkSequence(spec, a.seq_len);
    checkAttentionSize(spec, a.heads, a.seq_len);
    if constexpr (requires { a.positions; }) a.positions = positionsFor(spec, a.positions, a.seq_len);
    a.dropout.hidden = numberOverride(spec, "dropout").value_or(a.dropout.hidden);
    a.dropout.attention = numberOverride(spec, "attention_dropout").value_or(a.dropout.attention);
    return a;
}

GptArch resolve(const ModelSpec& spec, const GptArch& a) { return resolveTransformer(spec, a); }
BertArch resolve(const ModelSpec& spec, const BertArch& a) { return resolveTransformer(spec, a); }
TransformerArch resolve(const ModelSpec& spec, const TransformerArch& a) { return resolveTransformer(spec, a); }

ResNetArch resolve(const ModelSpec& spec, ResNetArch a) {
    for (size_t s = 0; s < a.blocks_per_stage.size(); ++s)
        a.blocks_per_stage[s] = static_cast<int>(
            intOverride(spec, ("blocks" + std::to_string(s + 1)).c_str()).value_or(a.blocks_per_stage[s]));
    const double m = widthMult(spec);
    for (int64_t& w : a.stage_widths) w = scaled(w, m);
    a.stem_channels = scaled(a.stem_channels, m);
    a.image_side = intOverride(spec, "image_size").value_or(a.image_side);
    a.classes = intOverride(spec, "classes").value_or(a.classes);
    return a;
}

VggArch resolve(const ModelSpec& spec, VggArch a) {
    for (size_t s = 0; s < a.convs_per_stage.size(); ++s)
        a.convs_per_stage[s] = static_cast<int>(
            intOverride(spec, ("convs" + std::to_string(s + 1)).c_str()).value_or(a.convs_per_stage[s]));
    const double m = widthMult(spec);
    for (int64_t& c : a.stage_channels) c = scaled(c, m);
    a.fc_width = intOverride(spec, "fc_width").value_or(a.fc_width);
    a.image_side = intOverride(spec, "image_size").value_or(a.image_side);
    a.classes = intOverride(spec, "classes").value_or(a.classes);
    a.dropout = numberOverride(spec, "dropout").value_or(a.dropout);
    return a;
}

int64_t outSide(int64_t in, int64_t kernel, int64_t stride, int64_t pad) { return (in + 2 * pad - kernel) / stride + 1; }

// The side of Inception's feature map after each layer, checking it stays at least one pixel
// wide (and, with the auxiliary classifier, that its 5x5 convolution still fits).
void checkInceptionSide(const ModelSpec& spec, const InceptionArch& a) {
    const std::string fix = "; raise 'image_size'" + std::string(a.aux_logits ? " or set aux_logits=0" : "");
    auto fail = [&](const std::string& where) {
        failCombination(spec, "image_size " + std::to_string(a.image_side) + " is too small: " + where +
                                  " would have no pixels left" + fix);
    };
    auto through = [&](int64_t side, const InceptionStep& s, const std::string& where) {
        const int64_t h = outSide(side, s.kernel_h, s.stride, s.pad_h), w = outSide(side, s.kernel_w, s.stride, s.pad_w);
        if (h < 1 || w < 1) fail(where);
        return std::min(h, w);
    };
    int64_t side = a.image_side;
    const InceptionStep pool = maxPoolHalve("maxpool");
    for (const InceptionStemLayer& l : a.stem) {
        side = through(side, l.conv, l.conv.name);
        if (l.max_pool_after) side = through(side, pool, l.conv.name + " max pool");
    }
    for (const InceptionModule& m : a.modules) {
        int64_t out = side;
        for (const InceptionBranch& b : m.branches) {
            int64_t s = side;
            for (const InceptionStep& step : b.chain) s = through(s, step, m.name + "." + step.name);
            out = s;
        }
        side = out;
        if (a.aux_logits && m.name == a.aux_after) {
            const InceptionStep aux_pool{InceptionStep::Kind::AvgPool, "aux_pool", 0, a.aux_pool_kernel,
                                         a.aux_pool_kernel, a.aux_pool_stride, 0, 0};
            const InceptionStep aux_conv1 = conv("aux_conv1", 1, a.aux_conv1_kernel);
            through(through(side, aux_pool, "the auxiliary pool"), aux_conv1, "the auxiliary 5x5 convolution");
        }
    }
}

InceptionArch resolve(const ModelSpec& spec, InceptionArch a) {
    const double m = widthMult(spec);
    auto scaleStep = [m](InceptionStep& s) {
        if (s.kind == InceptionStep::Kind::Conv) s.out_channels = scaled(s.out_channels, m);
    };
    for (InceptionStemLayer& l : a.stem) scaleStep(l.conv);
    for (InceptionModule& mod : a.modules)
        for (InceptionBranch& b : mod.branches) {
            for (InceptionStep& s : b.chain) scaleStep(s);
            for (InceptionStep& s : b.fork) scaleStep(s);
        }
    a.aux_conv0_channels = scaled(a.aux_conv0_channels, m);
    a.aux_conv1_channels = scaled(a.aux_conv1_channels, m);
    a.image_side = intOverride(spec, "image_size").value_or(a.image_side);
    a.classes = intOverride(spec, "classes").value_or(a.classes);
    a.aux_logits = intOverride(spec, "aux_logits").value_or(a.aux_logits ? 1 : 0) != 0;
    checkInceptionSide(spec, a);
    return a;
}

GnmtArch resolve(const ModelSpec& spec, GnmtArch a) {
    a.layers = static_cast<int>(intOverride(spec, "layers").value_or(a.layers));
    a.hidden = intOverride(spec, "hidden").value_or(a.hidden);
    a.vocab = intOverride(spec, "vocab").value_or(a.vocab);
    a.seq_len = sequence(spec, a.seq_len);
    checkSequence(spec, a.seq_len);
    if (static_cast<double>(a.seq_len) * static_cast<double>(a.seq_len) * static_cast<double>(a.hidden) >
        kMaxSampleElements)
        failCombination(spec, "seq_len^2 x hidden = " + std::to_string(a.seq_len) + "^2 x " + std::to_string(a.hidden) +
                                  " attention terms a sample is above 2^40; lower 'seq_len' or 'hidden'");
    return a;
}

MlpArch resolve(const ModelSpec& spec, MlpArch a) {
    a.hidden_layers = static_cast<int>(intOverride(spec, "layers").value_or(a.hidden_layers));
    a.hidden = intOverride(spec, "hidden").value_or(a.hidden);
    a.inputs = intOverride(spec, "inputs").value_or(a.inputs);
    a.classes = intOverride(spec, "classes").value_or(a.classes);
    return a;
}

std::string knownNames() {
    std::string s;
    for (const auto& [name, arch] : table()) s += (s.empty() ? "" : ", ") + name;
    return s;
}

}  // namespace

const char* familyOf(const Architecture& arch) {
    struct Name {
        const char* operator()(const GptArch&) const { return "gpt"; }
        const char* operator()(const BertArch&) const { return "bert"; }
        const char* operator()(const TransformerArch&) const { return "transformer"; }
        const char* operator()(const ResNetArch&) const { return "resnet"; }
        const char* operator()(const VggArch&) const { return "vgg"; }
        const char* operator()(const InceptionArch&) const { return "inception"; }
        const char* operator()(const GnmtArch&) const { return "gnmt"; }
        const char* operator()(const MlpArch&) const { return "mlp"; }
    };
    return std::visit(Name{}, arch);
}

int64_t sequenceLength(const Architecture& arch) {
    return std::visit(
        [](const auto& a) -> int64_t {
            if constexpr (requires { a.seq_len; }) return a.seq_len;
            else return 0;
        },
        arch);
}

const Architecture* publishedArchitecture(const std::string& name) {
    for (const auto& [n, arch] : table())
        if (n == name) return &arch;
    return nullptr;
}

Architecture resolveArchitecture(const ModelSpec& given) {
    const ModelSpec spec = expandPreset(given);  // a preset is the zoo model it sizes
    const Architecture* published = publishedArchitecture(spec.zoo);
    if (!published) throw Error("unknown zoo model '" + spec.zoo + "'; known models: " + knownNames() + "; presets: " + presetNames());
    if (spec.seq_len < 0) throw Error("zoo model '" + spec.zoo + "': sequence length must be positive (or 0 for the "
                                      "model's default), got " + std::to_string(spec.seq_len));
    checkKeys(spec, familyOf(*published));
    return std::visit([&](const auto& a) -> Architecture { return resolve(spec, a); }, *published);
}

const std::vector<OverrideKey>& overrideKeys(const std::string& family) {
    static const std::vector<OverrideKey> none;
    const auto it = keyTable().find(family);
    return it == keyTable().end() ? none : it->second;
}

std::vector<std::pair<std::string, double>> defaultOverrideValues(const std::string& name) {
    const Architecture* arch = publishedArchitecture(name);
    if (!arch) return {};
    std::map<std::string, double> v;
    auto set = [&v](const std::string& k, auto x) { v[k] = static_cast<double>(x); };
    std::visit(
        [&](const auto& a) {
            using A = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<A, GptArch> || std::is_same_v<A, BertArch> ||
                          std::is_same_v<A, TransformerArch>) {
                set("layers", a.layers);
                set("d_model", a.d_model);
                set("heads", a.heads);
                set("d_ff", a.d_ff);
                set("vocab", a.vocab);
                set("seq_len", a.seq_len);
                if constexpr (!std::is_same_v<A, TransformerArch>) set("positions", a.positions);
                set("dropout", a.dropout.hidden);
                set("attention_dropout", a.dropout.attention);
            } else if constexpr (std::is_same_v<A, ResNetArch>) {
                for (size_t s = 0; s < a.blocks_per_stage.size(); ++s)
                    set("blocks" + std::to_string(s + 1), a.blocks_per_stage[s]);
                set("width_mult", 1);
                set("image_size", a.image_side);
                set("classes", a.classes);
            } else if constexpr (std::is_same_v<A, VggArch>) {
                for (size_t s = 0; s < a.convs_per_stage.size(); ++s)
                    set("convs" + std::to_string(s + 1), a.convs_per_stage[s]);
                set("width_mult", 1);
                set("fc_width", a.fc_width);
                set("image_size", a.image_side);
                set("classes", a.classes);
                set("dropout", a.dropout);
            } else if constexpr (std::is_same_v<A, InceptionArch>) {
                set("width_mult", 1);
                set("image_size", a.image_side);
                set("classes", a.classes);
                set("aux_logits", a.aux_logits ? 1 : 0);
            } else if constexpr (std::is_same_v<A, GnmtArch>) {
                set("layers", a.layers);
                set("hidden", a.hidden);
                set("vocab", a.vocab);
                set("seq_len", a.seq_len);
            } else {
                set("layers", a.hidden_layers);
                set("hidden", a.hidden);
                set("inputs", a.inputs);
                set("classes", a.classes);
            }
        },
        *arch);
    std::vector<std::pair<std::string, double>> out;
    for (const OverrideKey& k : overrideKeys(familyOf(*arch))) out.emplace_back(k.key, v.at(k.key));
    return out;
}

}  // namespace hippie
