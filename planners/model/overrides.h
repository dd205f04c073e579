#pragma once
// Size overrides as users write them, "layers=2,seq_len=128": parsed into a ModelSpec by
// every front end (hippie-plan --override, the studio's Model panel, hippie-engine) and
// written back in the same canonical form (graph names, reports).
#include <string>

#include "planners/model/graph.h"

namespace hippie {

// Parses comma-separated key=value pairs into spec: seq_len into spec.seq_len, every other key
// into spec.overrides (a later pair wins over an earlier one with the same key). Only the
// syntax is checked here (one line naming the bad item); resolveArchitecture() checks keys and
// ranges against the model's family. Empty text changes nothing.
void applyOverrideText(ModelSpec& spec, const std::string& text);

// Sets one override: "seq_len" goes to spec.seq_len (a whole number, and refused when spec.zoo
// names a model without a sequence), any other key to spec.overrides.
void setOverride(ModelSpec& spec, const std::string& key, double value);

// The overrides of a zoo spec in canonical form: its family's key order (architecture.h),
// seq_len included when set and not the model's default; "" when there are none.
std::string overrideText(const ModelSpec& spec);

// The same without seq_len: only spec.overrides, for a control or flag that sits beside a
// separate sequence length.
std::string sizeOverrideText(const ModelSpec& spec);

// The graph name of a zoo spec: "gpt2-small", or "gpt2-small[layers=2,seq_len=128]" with
// overrides.
std::string zooGraphName(const ModelSpec& spec);

}  // namespace hippie
