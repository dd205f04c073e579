#pragma once
// Validator: proves a Program is well-formed. Every send has exactly one matching receive
// (same tensor, micro-batch and devices), every segment runs forward before backward for each
// micro-batch on each replica, inputs are received before they are used, all-reduce groups
// post the same buckets in the same order, each TensorParallel instruction follows its
// compute instruction with the collectives that compute's ops have, in a tp group of its
// device whose members all run the same ones, and executing the streams with the semantics of
// program.h finishes (no deadlock).
#include <string>
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/program.h"

namespace hippie {

struct ValidationResult {
    bool ok = true;
    std::vector<std::string> problems;  // each names the device, instruction and what is wrong
};

ValidationResult validate(const Program& program, const Graph& graph);

}  // namespace hippie
