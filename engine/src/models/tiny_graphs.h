#pragma once
// Graphs of the engine's tiny trainable models. The zoo's models (GPT-2 small and up) are far
// too large to train on a CPU in seconds, so the engine trains scaled-down configurations with
// the zoo's layer structure (embed / block<i> / head for transformers, stem / block<i> / head
// for ResNet, conv<s>_<i> / fc6..fc8 for VGG, fc<i> for the MLP), built with the zoo's own
// cost formulas. Layer i of these Graphs is layer i of the LibTorch module list
// (models/tiny_models.h). Two deliberate differences from the zoo: the GPT LM head and the BERT
// MLM decoder own their weights (a weight tied across pipeline stages would need a gradient
// exchange between stages), and the ResNet uses basic blocks (two 3x3 convolutions).
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie::engine {

struct TinyConfig {
    std::string name;     // "gpt-tiny"
    std::string family;   // "gpt", "bert", "mlp", "resnet", "vgg"
    std::string description;
    int default_seq_len = 0;  // 0 for models without a sequence
    int vocab = 0;        // transformers
    int d_model = 0;
    int heads = 0;
    int blocks = 0;       // transformer blocks, residual blocks, hidden layers
    int inputs = 0;       // MLP input features
    int hidden = 0;       // MLP hidden width, VGG fc width
    int classes = 0;      // MLP / CNN classes
    int image_side = 0;   // CNN input side (3 channels)
    int channels = 0;     // CNN first-stage channels
};

const std::vector<TinyConfig>& tinyModels();
const TinyConfig* findTinyModel(const std::string& name);  // nullptr if unknown
std::string tinyModelNames();                               // "gpt-tiny, bert-tiny, ..."

// The Graph for `spec.batch_size` samples of the tiny model `cfg` (spec.seq_len 0 = default).
Graph buildTinyGraph(const TinyConfig& cfg, const ModelSpec& spec);

}  // namespace hippie::engine
