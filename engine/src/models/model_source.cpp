#include "engine/src/models/model_source.h"

#include <filesystem>

#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"

namespace hippie::engine {

ResolvedModel resolveTrainableModel(const ModelSpec& spec, const std::string& plan_file) {
    ResolvedModel r;
    const std::string trainable = "the engine trains the zoo's models (hippie-plan models), their presets (" + presetNames() +
                                  "), graph files of either, and TorchScript modules";
    auto zoo = [&](const ModelSpec& given) {
        const ModelSpec s = expandPreset(given);
        try {
            r.graph = buildZooModel(s);
        } catch (const Error& e) {
            throw Error(plan_file + ": " + e.what());
        }
        r.zoo = s;
        return r;
    };
    if (!spec.zoo.empty()) {
        if (findZooModel(expandPreset(spec).zoo)) return zoo(spec);
        throw Error(plan_file + ": unknown model '" + spec.zoo + "'; " + trainable);
    }
    std::filesystem::path file(spec.file);
    if (file.is_relative() && !std::filesystem::exists(file)) file = std::filesystem::path(plan_file).parent_path() / file;
    if (file.extension() == ".pt") {
        if (!std::filesystem::exists(file)) throw Error(plan_file + ": the TorchScript file '" + spec.file + "' is not there");
        r.script_file = file.string();
        return r;
    }
    r.graph = loadGraphFile(file.string());
    if (!r.graph.source.zoo.empty() && findZooModel(r.graph.source.zoo)) {
        // A zoo graph saved to a file: the model it was built from is what trains.
        ModelSpec s = r.graph.source;
        const Graph saved = r.graph;
        zoo(s);
        if (r.graph.layerCount() != saved.layerCount() || r.graph.ops.size() != saved.ops.size())
            throw Error(plan_file + ": the graph in '" + spec.file + "' does not match the zoo model '" + s.zoo +
                        "' it names (rebuild it with this version)");
        r.graph = saved;
        return r;
    }
    if (std::filesystem::path(r.graph.source.file).extension() == ".pt") {
        // A graph from `inspect`: the module it measured is what trains.
        std::filesystem::path pt(r.graph.source.file);
        if (pt.is_relative() && !std::filesystem::exists(pt)) pt = file.parent_path() / pt;
        if (!std::filesystem::exists(pt))
            throw Error(plan_file + ": the graph in '" + spec.file + "' was measured from the TorchScript file '" + r.graph.source.file +
                        "', which is not there");
        r.script_file = pt.string();
        return r;
    }
    throw Error(plan_file + ": the graph in '" + spec.file + "' is '" + r.graph.name + "', which names no zoo model and no TorchScript file; " +
                trainable);
}

}  // namespace hippie::engine
