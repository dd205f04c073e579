#pragma once
// LibTorch builders of the zoo's models, from the same architecture table the zoo's Graph
// builders read (planners/model/architecture.h): layer i of the Graph is buildZooLayer(arch, i),
// with the same name and exactly the Graph's parameters for that layer (a tied weight is
// counted by the layer that owns it). Each layer reads and writes the live tensors under the
// names of the Graph ops that produce them (models/layer.h).
#include <string>

#include "engine/src/models/layer.h"
#include "planners/model/architecture.h"

namespace hippie::engine {

int zooLayerCount(const Architecture& arch);
std::string zooLayerName(const Architecture& arch, int layer);
// How a built layer's parameters start: as the published model initialises them, or as the
// LibTorch modules construct them (enough for counting parameters: the extra pass over
// gpt3-13b's 13e9 parameters is minutes on a CPU).
enum class LayerInit { Published, Constructed };

// Layer `layer`, freshly initialised from the global torch generator.
LayerPtr buildZooLayer(const Architecture& arch, int layer, LayerInit init = LayerInit::Published);
// The same layer split by tensor parallelism over `tp` (models/tensor_parallel.h): the layer
// above, built and initialised whole from the generator's current state, then cut to this
// rank's slices, so that the tp ranks together hold exactly the whole layer's parameters.
LayerPtr buildZooLayer(const Architecture& arch, int layer, const TpContext& tp);

// "" when the engine trains `arch` split over `tp` ranks (with sequence parallelism when
// `sequence_parallel`); otherwise why not, naming the sizes that do not divide.
std::string tensorParallelProblem(const Architecture& arch, int tp, bool sequence_parallel);

// Per family (zoo_transformer_layers.cpp, zoo_cnn_layers.cpp, zoo_rnn_layers.cpp).
std::vector<std::string> gptLayerNames(const GptArch& a);
LayerPtr gptLayer(const GptArch& a, int layer, LayerInit init = LayerInit::Published);
std::vector<std::string> bertLayerNames(const BertArch& a);
LayerPtr bertLayer(const BertArch& a, int layer, LayerInit init = LayerInit::Published);
std::vector<std::string> transformerLayerNames(const TransformerArch& a);
LayerPtr transformerLayer(const TransformerArch& a, int layer, LayerInit init = LayerInit::Published);
std::vector<std::string> resnetLayerNames(const ResNetArch& a);
LayerPtr resnetLayer(const ResNetArch& a, int layer);
std::vector<std::string> vggLayerNames(const VggArch& a);
LayerPtr vggLayer(const VggArch& a, int layer);
std::vector<std::string> inceptionLayerNames(const InceptionArch& a);
LayerPtr inceptionLayer(const InceptionArch& a, int layer);
std::vector<std::string> gnmtLayerNames(const GnmtArch& a);
LayerPtr gnmtLayer(const GnmtArch& a, int layer);
std::vector<std::string> mlpLayerNames(const MlpArch& a);
LayerPtr mlpLayer(const MlpArch& a, int layer);

}  // namespace hippie::engine
