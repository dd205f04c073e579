#pragma once
// Which model a Plan trains: a tiny model named in `model.zoo`, or a graph JSON file (written
// by `hippie-engine profile`) whose graph is one of them.
#include <string>

#include "engine/src/models/tiny_graphs.h"
#include "planners/model/graph.h"

namespace hippie::engine {

struct ResolvedModel {
    const TinyConfig* config = nullptr;
    Graph graph;  // what the plan was made for and what lowering uses
};

// Throws Error naming the plan file and the model when the engine cannot train it.
ResolvedModel resolveTrainableModel(const ModelSpec& spec, const std::string& plan_file);

}  // namespace hippie::engine
