#pragma once
// Plan JSON ("format":"hippie-plan","version":1), schema in resources/schemas/plan.schema.json.
// Includes the derived process groups so the engine and the CLI can show them.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planners/schedule/plan.h"

namespace hippie {

// Most micro-batches per iteration a plan may ask for: pipelines use a few times their depth, and
// lowering and simulation take time in proportion (a million take minutes).
inline constexpr int kMaxMicroBatches = 1 << 16;

nlohmann::json planToJson(const Plan& p);
Plan planFromJson(const nlohmann::json& j, const std::string& where = "plan");
Plan loadPlanFile(const std::string& path);
void savePlanFile(const Plan& p, const std::string& path);

}  // namespace hippie
