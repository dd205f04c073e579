#pragma once
// Plan JSON ("format":"hippie-plan","version":1), schema in resources/schemas/plan.schema.json.
// Includes the derived process groups so the engine and the CLI can show them.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planners/schedule/plan.h"

namespace hippie {

nlohmann::json planToJson(const Plan& p);
Plan planFromJson(const nlohmann::json& j, const std::string& where = "plan");
Plan loadPlanFile(const std::string& path);
void savePlanFile(const Plan& p, const std::string& path);

}  // namespace hippie
