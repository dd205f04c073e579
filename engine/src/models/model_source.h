#pragma once
// Which model a Plan trains: a zoo model (with its size overrides) or a tiny model named in
// `model.zoo`; a graph JSON file of a zoo model (its source names it), written by `hippie-engine
// profile` (a tiny model) or by `hippie-engine inspect` (its source.file names the TorchScript
// .pt); or a TorchScript .pt named directly.
#include <optional>
#include <string>

#include "engine/src/models/tiny_graphs.h"
#include "planners/model/graph.h"

namespace hippie::engine {

struct ResolvedModel {
    std::optional<ModelSpec> zoo;        // a zoo model, or
    const TinyConfig* config = nullptr;  // a tiny model, or
    std::string script_file;             // a TorchScript module (layer i = top-level child i)
    Graph graph;  // what the plan was made for and what lowering uses; empty when the plan names
                  // a .pt directly (the caller builds it with scriptGraph once the input shape is known)
};

// Throws Error naming the plan file and the model when the engine cannot train it.
ResolvedModel resolveTrainableModel(const ModelSpec& spec, const std::string& plan_file);

}  // namespace hippie::engine
