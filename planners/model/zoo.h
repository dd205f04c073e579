#pragma once
// Model zoo: op-level Graphs with analytic costs from the standard formulas. Each model is
// cut into layers (embedding, one per transformer block / residual block / stage, head) so
// pipeline planners can partition it; ops inside a layer keep their real branches.
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

struct ZooEntry {
    std::string name;         // "gpt2-small"
    std::string family;       // "gpt", "bert", "resnet", "vgg", "inception", "gnmt", "transformer", "mlp"
    std::string description;  // one line, with the published parameter count and its source
    int default_seq_len = 0;  // 0 for models without a sequence (CNNs, MLP)
    double published_params = 0;  // parameter count the builder must match within 2%
};

const std::vector<ZooEntry>& zooModels();
const ZooEntry* findZooModel(const std::string& name);  // nullptr if unknown

// Builds the zoo model named by spec.zoo (or the preset, presets.h) for spec.batch_size samples, spec.seq_len (0 = the
// model's default) and spec.precision. Throws Error for an unknown name (listing the known
// ones) or a non-positive batch size / sequence length.
Graph buildZooModel(const ModelSpec& spec);

}  // namespace hippie
