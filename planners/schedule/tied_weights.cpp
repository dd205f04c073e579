#include "planners/schedule/tied_weights.h"

#include <algorithm>
#include <set>
#include <string>

#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"

namespace hippie {

namespace {

// The zoo op owning each tied table (zoo_transformers.cpp), by family; the user is the head.
const char* tiedOwnerOp(const std::string& family) {
    if (family == "gpt") return "embed.token_embed";
    if (family == "bert") return "embed.word_embed";
    if (family == "transformer") return "embed.source_embed";
    return nullptr;
}

}  // namespace

std::vector<TiedWeightUse> tiedWeights(const Graph& graph) {
    if (graph.source.zoo.empty()) return {};
    const ZooEntry* entry = findZooModel(graph.source.zoo);
    if (!entry) return {};
    const char* owner = tiedOwnerOp(entry->family);
    if (!owner) return {};
    for (size_t op = 0; op < graph.ops.size(); ++op)
        if (graph.ops[op].name == owner)
            return {TiedWeightUse{graph.ops[op].layer, graph.layerCount() - 1, static_cast<int>(op), graph.ops[op].param_bytes}};
    return {};
}

void addTiedWeightReductions(Program& program, const Graph& graph) {
    std::vector<int> segment_of_op(graph.ops.size(), -1);
    for (size_t s = 0; s < program.segments.size(); ++s)
        for (int op : program.segments[s].ops) segment_of_op[static_cast<size_t>(op)] = static_cast<int>(s);
    for (const TiedWeightUse& t : tiedWeights(graph)) {
        int user_segment = -1;
        for (size_t op = 0; op < graph.ops.size(); ++op)
            if (graph.ops[op].layer == t.user_layer) user_segment = segment_of_op[op];
        const int owner_segment = segment_of_op[static_cast<size_t>(t.owner_op)];
        if (owner_segment < 0 || user_segment < 0) continue;
        const auto& owners = program.segment_devices[static_cast<size_t>(owner_segment)];
        const auto& users = program.segment_devices[static_cast<size_t>(user_segment)];
        if (owners == users) continue;  // one device holds both: the layers share the tensor
        // Tensor parallelism splits the table and the head alike (by vocabulary): rank k's
        // copies are summed among the rank-k devices, one group per rank (lowering refuses
        // different degrees on the two segments).
        const int tp = program.tpOf(owner_segment);
        for (int k = 0; k < tp; ++k) {
            Bucket b;
            b.segment = owner_segment;
            b.tied_segment = user_segment;
            b.ops = {t.owner_op};
            b.bytes = rankParamBytes(graph, TensorSplit{tp, program.sequence_parallel}, t.owner_op);
            const int bucket = static_cast<int>(program.buckets.size());
            program.buckets.push_back(b);
            std::set<int> members;
            for (const auto* lanes : {&owners, &users})
                for (size_t i = static_cast<size_t>(k); i < lanes->size(); i += static_cast<size_t>(tp)) members.insert((*lanes)[i]);
            const int group = static_cast<int>(program.groups.size());
            program.groups.emplace_back(members.begin(), members.end());
            Instr ar;
            ar.kind = InstrKind::AllReduce;
            ar.bucket = bucket;
            ar.group = group;
            for (size_t s = 0; s < program.streams.size(); ++s) {
                if (!members.count(program.devices[s])) continue;
                auto& stream = program.streams[s];
                auto opt = std::find_if(stream.begin(), stream.end(), [](const Instr& in) { return in.kind == InstrKind::OptimizerStep; });
                stream.insert(opt, ar);
            }
        }
    }
}

}  // namespace hippie
