#pragma once
// Which model a Plan trains: a zoo model (with its size overrides; a preset, planners/model/
// presets.h, is one) named in `model.zoo`; a graph JSON file of a zoo model (its source names
// it, as `hippie-engine profile` writes it) or written by `hippie-engine inspect` (its
// source.file names the TorchScript .pt); or a TorchScript .pt named directly.
#include <optional>
#include <string>

#include "planners/model/graph.h"

namespace hippie::engine {

struct ResolvedModel {
    std::optional<ModelSpec> zoo;  // a zoo model, or
    std::string script_file;       // a TorchScript module (layer i = top-level child i)
    Graph graph;  // what the plan was made for and what lowering uses; empty when the plan names
                  // a .pt directly (the caller builds it with scriptGraph once the input shape is known)
};

// Throws Error naming the plan file and the model when the engine cannot train it.
ResolvedModel resolveTrainableModel(const ModelSpec& spec, const std::string& plan_file);

}  // namespace hippie::engine
