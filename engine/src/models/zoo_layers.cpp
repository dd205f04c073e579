#include "engine/src/models/zoo_layers.h"

namespace hippie::engine {

namespace {

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::vector<std::string> layerNames(const Architecture& arch) {
    return std::visit(Overloaded{[](const GptArch& a) { return gptLayerNames(a); }, [](const BertArch& a) { return bertLayerNames(a); },
                                 [](const TransformerArch& a) { return transformerLayerNames(a); },
                                 [](const ResNetArch& a) { return resnetLayerNames(a); }, [](const VggArch& a) { return vggLayerNames(a); },
                                 [](const InceptionArch& a) { return inceptionLayerNames(a); },
                                 [](const GnmtArch& a) { return gnmtLayerNames(a); }, [](const MlpArch& a) { return mlpLayerNames(a); }},
                      arch);
}

}  // namespace

int zooLayerCount(const Architecture& arch) { return static_cast<int>(layerNames(arch).size()); }

std::string zooLayerName(const Architecture& arch, int layer) { return layerNames(arch).at(static_cast<size_t>(layer)); }

LayerPtr buildZooLayer(const Architecture& arch, int layer, LayerInit init) {
    return std::visit(Overloaded{[&](const GptArch& a) { return gptLayer(a, layer, init); },
                                 [&](const BertArch& a) { return bertLayer(a, layer, init); },
                                 [&](const TransformerArch& a) { return transformerLayer(a, layer, init); },
                                 [&](const ResNetArch& a) { return resnetLayer(a, layer); },
                                 [&](const VggArch& a) { return vggLayer(a, layer); },
                                 [&](const InceptionArch& a) { return inceptionLayer(a, layer); },
                                 [&](const GnmtArch& a) { return gnmtLayer(a, layer); },
                                 [&](const MlpArch& a) { return mlpLayer(a, layer); }},
                      arch);
}

}  // namespace hippie::engine
