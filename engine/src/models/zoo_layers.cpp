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

LayerPtr buildZooLayer(const Architecture& arch, int layer, const TpContext& tp) {
    LayerPtr whole = buildZooLayer(arch, layer, LayerInit::Published);
    if (!tp.enabled()) return whole;
    const std::string problem = tensorParallelProblem(arch, tp.size(), tp.sequence_parallel);
    TORCH_CHECK(problem.empty(), problem);
    return whole->splitTensorParallel(tp);
}

namespace {

// Megatron's splits of a transformer: heads (and with them d_model), the MLP's hidden width and
// the vocabulary (embedding and LM head) over the ranks.
std::string transformerProblem(int64_t heads, int64_t d_ff, int64_t vocab, int tp) {
    std::string bad;
    auto need = [&](const char* what, int64_t n) {
        if (n % tp != 0) bad += std::string(bad.empty() ? "" : ", ") + what + " (" + std::to_string(n) + ")";
    };
    need("the attention heads", heads);
    need("the MLP width d_ff", d_ff);
    need("the vocabulary", vocab);
    if (bad.empty()) return "";
    return "tensor parallelism tp " + std::to_string(tp) + " does not divide " + bad +
           ": each of the tp ranks takes an equal share of the heads, of the MLP width and of the vocabulary; use a tp that "
           "divides them (or override the model's sizes)";
}

}  // namespace

std::string tensorParallelProblem(const Architecture& arch, int tp, bool sequence_parallel) {
    if (tp <= 1) return "";
    const std::string family = familyOf(arch);
    // Sequence parallelism splits the sequence (each of the Transformer's two) over the ranks.
    auto problem = [&](const auto& a) -> std::string {
        if (sequence_parallel && a.seq_len % tp != 0)
            return "sequence parallelism splits the sequence of " + std::to_string(a.seq_len) + " tokens over tp " +
                   std::to_string(tp) + " ranks, which does not divide it; use a sequence length that tp divides";
        return transformerProblem(a.heads, a.d_ff, a.vocab, tp);
    };
    if (const auto* a = std::get_if<GptArch>(&arch)) return problem(*a);
    if (const auto* a = std::get_if<BertArch>(&arch)) return problem(*a);
    if (const auto* a = std::get_if<TransformerArch>(&arch)) return problem(*a);
    return "tensor parallelism (tp " + std::to_string(tp) +
           ") splits the attention and MLP of the transformer models (gpt, bert, transformer); a " + family +
           " model has no split layers: plan it with tp 1";
}

}  // namespace hippie::engine
