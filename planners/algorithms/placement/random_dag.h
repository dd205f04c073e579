#pragma once
// A generated random layered DAG for scale tests: `levels` levels of ops between one input
// and one loss op; each op reads 1..max_inputs ops of the level before (sometimes of the
// one before that), and every op is read by someone. Costs are drawn log-uniformly from
// the ranges below, for `batch_size` samples. The same options and seed give the same graph.
#include <cstdint>

#include "planners/model/graph.h"

namespace hippie::placement {

struct RandomDagOptions {
    int ops = 20000;               // including the input and the loss
    int width = 100;               // ops per level
    int max_inputs = 3;
    double skip_probability = 0.1;  // an input comes from two levels back
    double weighted_share = 0.3;    // ops with parameters
    double min_fwd_flops = 1e7, max_fwd_flops = 1e9;
    int64_t min_output_bytes = 64 << 10, max_output_bytes = 2 << 20;
    int64_t min_param_bytes = 64 << 10, max_param_bytes = 2 << 20;
    int batch_size = 1;
    uint64_t seed = 1;
};

// Ops are numbered level by level (a topological order); an op's layer is its level.
Graph randomLayeredDag(const RandomDagOptions& options = {});

}  // namespace hippie::placement
