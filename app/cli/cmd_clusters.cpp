// hippie-plan clusters: the built-in cluster presets.
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/format.h"
#include "app/cli/table.h"
#include "planners/cluster/cluster_json.h"

namespace hippie::cli {

namespace {

// "2 x 8" when every node has the same number of devices, else "8+4".
std::string shape(const Cluster& c) {
    std::set<int> sizes;
    std::vector<std::string> each;
    for (const Node& n : c.nodes) {
        sizes.insert(n.devices);
        each.push_back(std::to_string(n.devices));
    }
    if (sizes.size() == 1) return std::to_string(c.nodes.size()) + " x " + each.front();
    return joined(each, "+");
}

std::vector<std::string> deviceTypes(const Cluster& c) {
    std::set<std::string> types;
    for (const Node& n : c.nodes) types.insert(n.device.type);
    return {types.begin(), types.end()};
}

// The smallest device's memory, and the smallest usable for tensors: what a plan must fit in.
int64_t smallest(const Cluster& c, int64_t (*bytes)(const DeviceSpec&)) {
    int64_t least = 0;
    for (size_t i = 0; i < c.nodes.size(); ++i)
        if (i == 0 || bytes(c.nodes[i].device) < least) least = bytes(c.nodes[i].device);
    return least;
}
int64_t deviceMemoryBytes(const Cluster& c) {
    return smallest(c, [](const DeviceSpec& d) { return d.memory_bytes; });
}
int64_t usableMemoryBytes(const Cluster& c) {
    return smallest(c, [](const DeviceSpec& d) { return d.usableBytes(); });
}

void printTable() {
    Table t({{"name"}, {"nodes x devices"}, {"device"}, {"memory GiB", Align::Right}, {"for tensors", Align::Right}, {"description"}});
    for (const ClusterPreset& p : clusterPresets()) {
        const Cluster c = buildClusterPreset(p.name);
        t.addRow({p.name, shape(c), joined(deviceTypes(c), ", "), gib(deviceMemoryBytes(c)), gib(usableMemoryBytes(c)), p.description});
    }
    t.print(std::cout);
}

void printJson() {
    nlohmann::json out = nlohmann::json::array();
    for (const ClusterPreset& p : clusterPresets()) {
        const Cluster c = buildClusterPreset(p.name);
        out.push_back({{"name", p.name},
                       {"nodes", c.nodes.size()},
                       {"devices", c.deviceCount()},
                       {"device_types", deviceTypes(c)},
                       {"device_memory_bytes", deviceMemoryBytes(c)},
                       {"usable_memory_bytes", usableMemoryBytes(c)},
                       {"description", p.description}});
    }
    std::cout << out.dump(2) << '\n';
}

}  // namespace

Command addClustersCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("clusters", "List the built-in cluster presets");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "print JSON instead of a table");
    return {sub, [json] {
                if (*json) printJson();
                else printTable();
                return kExitOk;
            }};
}

}  // namespace hippie::cli
