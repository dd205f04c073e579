#pragma once
// A ModelSpec's size overrides in the graph and plan JSON formats: an optional "overrides"
// object of numbers ({"layers": 2, "width_mult": 0.5}) next to "zoo" and "seq_len". Files
// that carry overrides are written as the format's version 2 so that a build that does not
// know them refuses the file instead of rebuilding the published size.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planners/model/graph.h"

namespace hippie {

// The lowest format version that can carry `spec`: 1 without overrides, 2 with.
int modelSpecFormatVersion(const ModelSpec& spec);

// Adds "overrides" to `model` (the spec's JSON object) when there are any.
void writeOverrides(nlohmann::json& model, const ModelSpec& spec);

// Reads the optional "overrides" of `model` into spec (spec.zoo already read): every value a
// number, the zoo model's family must accept every key within its range. Throws Error
// prefixed with `where` ("plan.json: model: overrides: ...").
void readOverrides(const nlohmann::json& model, const std::string& where, ModelSpec& spec);

}  // namespace hippie
