// hippie-plan models: the zoo, with parameter and layer counts taken from the built graphs, and
// its presets (planners/model/presets.h) in the table.
#include <algorithm>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/format.h"
#include "app/cli/table.h"
#include "planners/model/architecture.h"
#include "planners/model/overrides.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"

namespace hippie::cli {

namespace {

struct ModelRow {
    const ZooEntry* entry = nullptr;
    int64_t params = 0;  // counted on the graph built for one sample
    int layers = 0;
};

// Building every model at batch size 1 takes a fraction of a second, so the table shows what
// the builders produce rather than the published figures alone.
std::vector<ModelRow> modelRows() {
    std::vector<ModelRow> rows;
    for (const ZooEntry& z : zooModels()) {
        ModelSpec spec;
        spec.zoo = z.name;
        const Graph g = buildZooModel(spec);
        rows.push_back({&z, g.paramCount(), g.layerCount()});
    }
    return rows;
}

void printTable(const std::vector<ModelRow>& rows) {
    Table t({{"name"}, {"family"}, {"params (M)", Align::Right}, {"layers", Align::Right}, {"description"}});
    for (const ModelRow& r : rows)
        t.addRow({r.entry->name, r.entry->family, millions(static_cast<double>(r.params)), std::to_string(r.layers),
                  r.entry->description});
    t.print(std::cout);
    // Presets: names for small sizes of the models above (test fixtures, quick starts on a laptop).
    Table presets({{"preset"}, {"of"}, {"params", Align::Right}, {"layers", Align::Right}, {"overrides"}});
    for (const ModelPreset& p : modelPresets()) {
        ModelSpec spec;
        spec.zoo = p.name;
        const Graph g = buildZooModel(spec);
        presets.addRow({p.name, p.zoo, std::to_string(g.paramCount()), std::to_string(g.layerCount()), overrideText(g.source)});
    }
    std::cout << "\nPresets (--model takes their names; a plan records the model and overrides they stand for):\n";
    presets.print(std::cout);
}

// The size overrides the model accepts (--override), each with its value in this model.
nlohmann::json overridesJson(const ZooEntry& z) {
    const Architecture* arch = publishedArchitecture(z.name);
    const std::vector<OverrideKey>& keys = overrideKeys(familyOf(*arch));
    nlohmann::json out = nlohmann::json::array();
    for (const auto& entry : defaultOverrideValues(z.name)) {
        // Named copies, not structured bindings: clang 14 (the sanitizer build) cannot capture those.
        const std::string& key = entry.first;
        const double value = entry.second;
        const auto k = std::find_if(keys.begin(), keys.end(), [&](const OverrideKey& o) { return o.key == key; });
        nlohmann::json j = {{"key", key}, {"meaning", k->meaning}};
        if (k->integer) {
            j["default"] = static_cast<int64_t>(value);
            j["min"] = static_cast<int64_t>(k->min);
            j["max"] = static_cast<int64_t>(k->max);
        } else {
            j["default"] = value;
            j["min"] = k->min;
            j["max"] = k->max;
        }
        j["integer"] = k->integer;
        out.push_back(std::move(j));
    }
    return out;
}

void printJson(const std::vector<ModelRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const ModelRow& r : rows)
        out.push_back({{"name", r.entry->name},
                       {"family", r.entry->family},
                       {"parameters", r.params},
                       {"published_parameters", r.entry->published_params},
                       {"layers", r.layers},
                       {"default_seq_len", r.entry->default_seq_len},
                       {"description", r.entry->description},
                       {"overrides", overridesJson(*r.entry)}});
    std::cout << out.dump(2) << '\n';
}

}  // namespace

Command addModelsCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("models", "List the model zoo (parameters counted on the built graphs)");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "print JSON instead of a table (with each model's --override keys and defaults)");
    return {sub, [json] {
                const std::vector<ModelRow> rows = modelRows();
                if (*json) printJson(rows);
                else printTable(rows);
                return kExitOk;
            }};
}

}  // namespace hippie::cli
