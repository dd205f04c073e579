#pragma once
// The architecture table: every size of every zoo model, in one place. The zoo's Graph
// builders (planners/model/zoo*.cpp) and the engine's LibTorch builders (engine/) both build
// a model from the struct resolveArchitecture() returns, so the two cannot disagree on a
// dimension. Each struct says, per Graph layer, which modules the layer holds, in what
// order and with what parameters: "layer i of the Graph is layer i of the module list, with
// the same name", and the parameters of a layer are exactly the ones listed for it.
//
// Conventions every family shares:
// - Linear(in, out[, bias]) is y = x W^T + b with W out x in, as torch::nn::Linear; "no bias"
//   where said. LayerNorm(d) and BatchNorm2d(c) have a weight and a bias (2d / 2c parameters;
//   BatchNorm's running statistics are buffers, not parameters).
// - Conv(out, kh x kw, stride, pad) has no bias unless said (a batch norm follows).
// - A tied weight (an LM head that reuses the token embedding) is owned, and counted, by the
//   layer that holds the embedding; the layer that reuses it owns only what is said.
// - seq_len is tokens a sample; image_side is the input's height and width in pixels.
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

// ---- Transformers ---------------------------------------------------------------------------
// Attention everywhere: a fused QKV Linear(d_model, 3 d_model) (self-attention) split into
// heads of d_model / heads, scaled dot-product softmax, then Linear(d_model, d_model) "proj".
// Cross-attention (transformer decoder) has Linear(d_model, d_model) "q" from the decoder and a
// fused Linear(d_model, 2 d_model) "kv" from the encoder output. All attention Linears have a
// bias. The feed-forward is Linear(d_model, d_ff) "fc1", activation, Linear(d_ff, d_model) "fc2".

// Dropout while training (Srivastava et al. 2014), as each model was published: `hidden` on the
// embedding's output and on each sub-layer's output before its residual add (Vaswani et al.
// 2017, section 5.4: "residual dropout"), `attention` on the attention probabilities before
// their product with V. 0 = none: the Graph then has no dropout op there (and the engine runs
// none). Graph ops, per block: "<prefix>_dropout" on the probabilities (prefix attn, or cross
// for cross-attention), "<prefix>_resid_dropout" on the attention's output projection,
// "mlp_dropout" on fc2's output; "embed_dropout" after the embedding (GPT and BERT: on its
// output, after BERT's LayerNorm; the Transformer: "source_dropout" and "target_dropout").
struct Dropout {
    double hidden = 0;
    double attention = 0;
};

// GPT-2 / GPT-3: decoder-only, pre-LN, causal self-attention, GELU (tanh approximation).
// Graph layers, in order:
//   "embed":  token_embed Embedding(vocab, d_model), position_embed Embedding(positions,
//             d_model) (learned, positions 0..seq_len-1), their sum.
//   "block<i>", i = 0..layers-1: x += attn(ln1(x)); x += mlp(ln2(x)), with ln1, ln2
//             LayerNorm(d_model), attn_qkv, attn_proj, mlp_fc1, mlp_fc2 as above.
//             Parameters: 4 d_model^2 + 4 d_model (attention) + 2 d_model d_ff + d_ff + d_model
//             (MLP) + 4 d_model (norms).
//   "head":   ln_f LayerNorm(d_model), lm_head: logits = x token_embed.weight^T (tied, no
//             bias: the layer owns only ln_f's 2 d_model), softmax cross-entropy over vocab
//             against the next token.
struct GptArch {
    int layers = 0;
    int64_t d_model = 0;
    int64_t heads = 0;      // divides d_model
    int64_t d_ff = 0;       // 4 d_model in every published size
    int64_t vocab = 0;      // 50257 (GPT-2 BPE, also GPT-3's)
    int64_t positions = 0;  // rows of the position table: n_ctx (or the 'positions' override), grown
                            // to seq_len when a longer sequence is asked without 'positions'
    int64_t seq_len = 0;    // resolved: the model's n_ctx unless overridden
    Dropout dropout;
};

// BERT: encoder, post-LN, bidirectional self-attention, GELU; pre-training heads MLM + NSP.
// Graph layers:
//   "embed":  word_embed Embedding(vocab, d_model), position_embed Embedding(positions,
//             d_model), segment_embed Embedding(segments, d_model), their sum, norm LayerNorm.
//   "block<i>": x = attn_norm(x + attn(x)); x = mlp_norm(x + mlp(x)) with attn_qkv,
//             attn_proj, attn_norm, mlp_fc1, mlp_fc2, mlp_norm (LayerNorm(d_model) each).
//   "head":   pooler Linear(d_model, d_model) + tanh on the first ([CLS]) token, nsp
//             Linear(d_model, 2); mlm_transform Linear(d_model, d_model), GELU, mlm_norm
//             LayerNorm(d_model), mlm_decoder: x word_embed.weight^T (tied) + its own bias
//             (vocab). Loss: cross-entropy over vocab at every token plus the 2-way NSP loss.
struct BertArch {
    int layers = 0;
    int64_t d_model = 0;
    int64_t heads = 0;
    int64_t d_ff = 0;       // 4 d_model
    int64_t vocab = 0;      // 30522 (uncased WordPiece)
    int64_t positions = 0;  // 512 (or the 'positions' override), grown to a longer seq_len likewise
    int64_t segments = 0;   // 2: sentence A / B
    int64_t seq_len = 0;
    Dropout dropout;
};

// Transformer (big), Vaswani et al. 2017: encoder-decoder, post-LN, ReLU, one vocabulary table
// shared by source, target and the output projection; source and target are seq_len long.
// Graph layers:
//   "embed":  source_embed Embedding(vocab, d_model) (owns the shared table), x sqrt(d_model)
//             plus the sinusoidal encoding ("source_position", no parameters); target_embed
//             the same table (owns nothing), "target_position" likewise.
//   "enc<i>", i = 0..layers-1: BERT's post-LN block with ReLU (attn_*, attn_norm, mlp_*,
//             mlp_norm) over the source.
//   "dec<i>", i = 0..layers-1: causal self-attention (attn_qkv, attn_proj, attn_norm), then
//             cross-attention over the output of enc<layers-1> (cross_q, cross_kv, cross_proj,
//             cross_norm), then the ReLU MLP (mlp_fc1, mlp_fc2, mlp_norm). Every decoder layer
//             reads the encoder output: a pipeline stage holding dec<i> needs it.
//   "head":   output_proj: logits = x table^T (tied, no bias), cross-entropy over vocab.
struct TransformerArch {
    int layers = 0;        // per side: encoder blocks = decoder blocks
    int64_t d_model = 0;
    int64_t heads = 0;
    int64_t d_ff = 0;
    int64_t vocab = 0;     // 37000 shared BPE (WMT'14 en-de)
    int64_t seq_len = 0;   // source and target tokens a sample (256)
    Dropout dropout;
};

// ---- Convolutional networks -----------------------------------------------------------------
// Images are in_channels x image_side x image_side. "conv-bn-relu" is Conv (no bias),
// BatchNorm2d, ReLU. The head's loss is softmax cross-entropy over `classes`.

// ResNet v1.5 (torchvision): bottleneck blocks, the stride on the 3x3 convolution.
// Graph layers:
//   "stem":   conv1 conv-bn-relu(stem_channels, stem_kernel, stride 2, pad stem_kernel/2),
//             maxpool 3x3 stride 2 pad 1.
//   "block<n>", n numbered across stages (0 .. sum(blocks_per_stage)-1), stage s of width
//             w = stage_widths[s]: conv1 conv-bn-relu(w, 1x1), conv2 conv-bn-relu(w, 3x3, stride,
//             pad 1), conv3 conv(expansion w, 1x1) + conv3_bn, plus the shortcut: the input, or
//             downsample conv(expansion w, 1x1, stride) + downsample_bn where the stride is not
//             1 or the channels change; residual add, ReLU. stride is 2 in the first block of
//             stages 1..3, 1 elsewhere.
//   "head":   global average pool, fc Linear(expansion stage_widths[3], classes) with bias.
struct ResNetArch {
    std::array<int, 4> blocks_per_stage{};  // {3,4,6,3} ResNet-50, {3,4,23,3} -101, {3,8,36,3} -152
    std::array<int64_t, 4> stage_widths{};  // bottleneck widths: 64,128,256,512 x width_mult
    int64_t stem_channels = 0;              // 64 x width_mult
    int64_t stem_kernel = 7;
    int64_t expansion = 4;                  // a block outputs expansion x its width
    int64_t in_channels = 3;
    int64_t image_side = 0;                 // 224
    int64_t classes = 0;                    // 1000
};

// VGG (no batch norm). Graph layers:
//   "conv<s>_<i>" (s = 1..5, i = 1..convs_per_stage[s-1]): Conv(stage_channels[s-1], 3x3,
//             stride 1, pad 1, WITH bias), ReLU; after a stage's last convolution a 2x2 max
//             pool, stride 2 ("pool", in that layer).
//   "fc6", "fc7": Linear(in, fc_width) with bias, ReLU; fc6's input is the last feature map
//             flattened: stage_channels[4] x (image_side/32)^2 (each pool halves, rounding
//             down); no adaptive pooling, no dropout.
//   "fc8":    fc Linear(fc_width, classes) with bias, cross-entropy.
struct VggArch {
    std::array<int, 5> convs_per_stage{};     // {2,2,3,3,3} VGG-16, {2,2,4,4,4} VGG-19
    std::array<int64_t, 5> stage_channels{};  // 64,128,256,512,512 x width_mult
    int64_t fc_width = 0;                     // 4096
    int64_t in_channels = 3;
    int64_t image_side = 0;                   // 224
    int64_t classes = 0;                      // 1000
    double dropout = 0;                       // on fc6's and fc7's outputs (0.5 published)
};

// One step of an Inception branch: a conv-bn-relu ("BasicConv2d", batch norm eps 0.001 in
// torchvision) or a pooling (no parameters). Average pools count the padding (PyTorch's
// default count_include_pad).
struct InceptionStep {
    enum class Kind { Conv, MaxPool, AvgPool };
    Kind kind = Kind::Conv;
    std::string name;          // op name in the Graph ("branch5x5_1", "branch_pool_avg")
    int64_t out_channels = 0;  // Conv only; a pool keeps its input's channels
    int64_t kernel_h = 1;
    int64_t kernel_w = 1;
    int64_t stride = 1;
    int64_t pad_h = 0;
    int64_t pad_w = 0;
};

// A branch applies `chain` in order to the module's input; when `fork` is not empty each of
// its steps is applied to the chain's output and their outputs take the chain's place in the
// concatenation, in order (InceptionE's parallel 1x3 and 3x1 convolutions).
struct InceptionBranch {
    std::vector<InceptionStep> chain;
    std::vector<InceptionStep> fork;
};

// A mixed module: its branches' outputs concatenated along channels, in order ("concat").
struct InceptionModule {
    std::string name;  // the Graph layer: "mixed_5b" ... "mixed_7c"
    std::vector<InceptionBranch> branches;
};

// A stem layer: one conv-bn-relu (op "conv"), then optionally a 3x3 stride-2 max pool
// ("maxpool"). The Graph layer is named after the convolution ("conv1a", ...).
struct InceptionStemLayer {
    InceptionStep conv;
    bool max_pool_after = false;
};

// Inception-v3 as in torchvision (Szegedy et al. 2016). Graph layers: the stem layers, the
// modules, then "head": global average pool, fc Linear(channels, classes) with bias; when
// aux_logits, the auxiliary classifier on the output of module `aux_after` is in "head" too:
// aux_pool avg pool aux_pool_kernel stride aux_pool_stride (no padding), aux_conv0
// conv-bn-relu(aux_conv0_channels, 1x1), aux_conv1 conv-bn-relu(aux_conv1_channels,
// aux_conv1_kernel), global average pool (the identity at 299x299), aux_fc
// Linear(aux_conv1_channels, classes) with bias; its logits join the main loss. The pipeline
// stage holding "head" therefore needs the output of `aux_after` as well as the last module's.
struct InceptionArch {
    std::vector<InceptionStemLayer> stem;
    std::vector<InceptionModule> modules;
    bool aux_logits = true;
    std::string aux_after;              // "mixed_6e"
    int64_t aux_pool_kernel = 5;
    int64_t aux_pool_stride = 3;
    int64_t aux_conv0_channels = 0;     // 128 x width_mult
    int64_t aux_conv1_channels = 0;     // 768 x width_mult
    int64_t aux_conv1_kernel = 5;
    int64_t in_channels = 3;
    int64_t image_side = 0;             // 299
    int64_t classes = 0;                // 1000
};

// ---- Recurrent ------------------------------------------------------------------------------

// GNMT (MLPerf / NVIDIA GNMT v2): LSTM layers as torch::nn::LSTM (weights W_ih 4h x in,
// W_hh 4h x h, biases b_ih and b_hh: 4h (in + h) + 8h parameters). Graph layers:
//   "embed":  encoder_embed Embedding(vocab, hidden), shared by decoder_embed (owns nothing).
//   "enc0":   bidirectional: lstm_forward and lstm_backward LSTM(hidden, hidden) over the
//             source (the backward one reversed), outputs concatenated (2 hidden features).
//   "enc<i>", i = 1..layers-1: lstm LSTM(in, hidden), in = 2 hidden for enc1, hidden after;
//             a residual add of the layer's input when i >= first_residual_layer.
//   "dec0":   lstm LSTM(hidden, hidden) over the target embedding.
//   "attention": normalised Bahdanau attention of dec0's outputs over enc<layers-1>'s:
//             query_proj, key_proj Linear(hidden, hidden, no bias); score = v . tanh(q + k + b)
//             with v normalised to norm g: parameters v (hidden), g (1), b (hidden); softmax over
//             source positions; context = probabilities x encoder outputs.
//   "dec<i>", i = 1..layers-1: lstm LSTM(2 hidden, hidden) over [previous output, context];
//             residual add of the previous output when i >= first_residual_layer. Every decoder
//             layer reads the attention context: a pipeline stage holding dec<i> needs it.
//   "head":   classifier Linear(hidden, vocab) with bias, cross-entropy.
struct GnmtArch {
    int layers = 0;                    // per side: 4 in GNMT-8; at least 2
    int64_t hidden = 0;                // 1024; also the embedding width
    int64_t vocab = 0;                 // 32320 (32317 BPE tokens padded to a multiple of 8)
    int first_residual_layer = 2;      // residuals from the third layer of each side on
    int64_t seq_len = 0;               // source and target tokens a sample (50)
};

// ---- MLP ------------------------------------------------------------------------------------

// Graph layers "fc<i>", i = 0..hidden_layers-1: linear Linear(in, hidden) with bias (in =
// inputs for fc0, hidden after), ReLU; "fc<hidden_layers>": Linear(hidden, classes) with
// bias, cross-entropy.
struct MlpArch {
    int hidden_layers = 0;  // 8
    int64_t inputs = 0;     // 1024 features a sample
    int64_t hidden = 0;     // 4096
    int64_t classes = 0;    // 1000
};

using Architecture =
    std::variant<GptArch, BertArch, TransformerArch, ResNetArch, VggArch, InceptionArch, GnmtArch, MlpArch>;

// The family name of an architecture: "gpt", "bert", "transformer", "resnet", "vgg",
// "inception", "gnmt" or "mlp" (ZooEntry::family).
const char* familyOf(const Architecture& arch);

// Tokens a sample of a sequence model (GPT, BERT, transformer, GNMT); 0 for the others.
int64_t sequenceLength(const Architecture& arch);

// The published architecture of zoo model `name` (sequence models at their default seq_len),
// or nullptr for a name the table does not know.
const Architecture* publishedArchitecture(const std::string& name);

// The architecture spec describes: the published one of spec.zoo (or of the zoo model a preset
// sizes, presets.h, with the preset's overrides) with spec.seq_len (0 = the
// model's default) and spec.overrides applied. Throws Error for an unknown model, a key the
// family does not accept (listing those it does) or a value out of its range (naming the key
// and the range). The result is what both the zoo Graph and the engine build.
Architecture resolveArchitecture(const ModelSpec& spec);

// An override key a family accepts.
struct OverrideKey {
    std::string key;       // "layers", "d_model", "width_mult", ...
    std::string meaning;   // one line for help texts and `hippie-plan models --json`
    double min = 0;        // inclusive range of the value
    double max = 0;
    bool integer = true;   // false only for width_mult
};

// The keys `family` accepts, in a stable order (seq_len included for sequence models).
const std::vector<OverrideKey>& overrideKeys(const std::string& family);

// The value each of the family's keys has in the published model `name` (width_mult: 1).
std::vector<std::pair<std::string, double>> defaultOverrideValues(const std::string& name);

}  // namespace hippie
