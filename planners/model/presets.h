#pragma once
// Presets: named size overrides of zoo models, small enough that a step of 16 samples takes
// milliseconds on one CPU core. "gpt-tiny" is gpt2-small at 4 blocks of width 32, nothing else:
// the same Graph builder, the same engine layers, the same data and loss. They are the test
// fixtures of the engine, the jobs and the studio, and a quick start on a laptop.
//
// A preset name is accepted wherever a zoo name is (plan and graph files, `--model` of
// hippie-plan and hippie-engine) and replaced there by what it stands for (expandPreset), so
// nothing downstream knows presets: a plan of gpt-tiny records gpt2-small with its overrides.
#include <map>
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

struct ModelPreset {
    std::string name;         // "gpt-tiny"
    std::string zoo;          // the zoo model it sizes: "gpt2-small"
    std::map<std::string, double> overrides;  // architecture.h's keys of that model's family
    int seq_len = 0;          // tokens a sample; 0 for models without a sequence
    std::string description;  // one line
};

const std::vector<ModelPreset>& modelPresets();
const ModelPreset* findModelPreset(const std::string& name);  // nullptr if unknown
std::string presetNames();                                     // "gpt-tiny, bert-tiny, ..."

// `spec` with a preset's name replaced by its zoo model and overrides; the spec's own
// overrides win over the preset's, and its seq_len (when not 0) over the preset's. Any other
// spec is returned as it is.
ModelSpec expandPreset(ModelSpec spec);

}  // namespace hippie
