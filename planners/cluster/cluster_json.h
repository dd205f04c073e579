#pragma once
// Cluster JSON ("format":"hippie-cluster","version":1), schema in
// resources/schemas/cluster.schema.json, and the built-in presets.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planners/cluster/cluster.h"

namespace hippie {

struct ClusterPreset {
    std::string name;
    std::string description;
};
const std::vector<ClusterPreset>& clusterPresets();
Cluster buildClusterPreset(const std::string& name);  // Error lists the known presets

nlohmann::json clusterToJson(const Cluster& c);
Cluster clusterFromJson(const nlohmann::json& j, const std::string& where = "cluster");
Cluster loadClusterFile(const std::string& path);
void saveClusterFile(const Cluster& c, const std::string& path);
// A preset name or a path to a cluster JSON file.
Cluster loadCluster(const std::string& preset_or_file);

}  // namespace hippie
