#pragma once
// Options that name a model (--model, --seq-len, --override, --precision), shared by
// show-graph, simulate and compare, and the graph they describe.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "planners/model/graph.h"

namespace hippie::cli {

struct ModelOptions {
    std::string model;              // zoo name or graph JSON file
    int seq_len = 0;                // 0: the model's default
    std::string overrides;          // "layers=2,seq_len=128": size overrides of a zoo model
    std::string precision = "fp32";
};

// Adds the options to `app`, bound to `opts`, and returns them, --model first (so a caller
// can require or exclude them).
std::vector<CLI::Option*> addModelOptions(CLI::App& app, ModelOptions& opts);

// The graph for `batch_size` samples (zoo models; a graph file keeps its own batch size).
// Throws Error for an unknown model, a missing or malformed file, a bad precision, or an
// override the model does not accept (one line naming the key).
Graph buildGraph(const ModelOptions& opts, int batch_size);

// Rebuilds the graph a ModelSpec (as recorded in a plan) describes.
Graph buildGraph(const ModelSpec& spec);

}  // namespace hippie::cli
