#include "planners/model/overrides_json.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/common/json_read.h"
#include "planners/model/architecture.h"

namespace hippie {

using nlohmann::json;
using namespace json_read;

namespace {
constexpr int kVersionWithoutOverrides = 1;
constexpr int kVersionWithOverrides = 2;
}  // namespace

int modelSpecFormatVersion(const ModelSpec& spec) {
    return spec.overrides.empty() ? kVersionWithoutOverrides : kVersionWithOverrides;
}

void writeOverrides(json& model, const ModelSpec& spec) {
    if (spec.overrides.empty()) return;
    json o = json::object();
    for (const auto& [key, value] : spec.overrides) {
        // Whole numbers as JSON integers, so files read as people write them.
        if (std::floor(value) == value && std::abs(value) < 9.0e15) o[key] = static_cast<int64_t>(value);
        else o[key] = value;
    }
    model["overrides"] = std::move(o);
}

void readOverrides(const json& model, const std::string& where, ModelSpec& spec) {
    const json* o = optionalObject(model, "overrides", where);
    if (!o) return;
    const std::string w = at(where, "overrides");
    if (!o->empty() && spec.zoo.empty()) fail(w, "size overrides apply to zoo models only, and 'zoo' is empty");
    for (const auto& [key, value] : o->items()) {
        if (!value.is_number()) failField(w, key, "must be a number (got " + describe(value) + ")");
        spec.overrides[key] = value.get<double>();
    }
    if (spec.overrides.empty()) return;
    try {
        resolveArchitecture(spec);
    } catch (const Error& e) {
        fail(w, e.what());
    }
}

}  // namespace hippie
