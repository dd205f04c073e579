// Plan -> lower -> validate -> simulate for whatever the readers accept. The input is one JSON
// document: a plan (run on the example graph and cluster), a graph (run with a two-stage 1F1B
// plan on the example cluster) or a cluster (the example plan on it). A plan that loads and
// passes checkPlan must lower to a Program the validator accepts and the simulator times to
// finite metrics; refusing it with hippie::Error is fine, anything else is a finding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/json_read.h"
#include "planners/cost/cost_model.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/balanced_stages.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"

namespace {

using namespace hippie;

const Graph& exampleGraph() {
    static const Graph g = loadGraphFile(HIPPIE_SOURCE_DIR "/resources/examples/tiny-mlp.graph.json");
    return g;
}

const Cluster& exampleCluster() {
    static const Cluster c = loadClusterFile(HIPPIE_SOURCE_DIR "/resources/examples/two-node.cluster.json");
    return c;
}

// Two 1F1B stages (one when the graph has one layer), two micro-batches of the graph's batch.
Plan planFor(const Graph& g) {
    Plan p;
    p.model = g.source;
    p.cluster = "two-node";
    p.schedule = ScheduleKind::OneFOneB;
    p.stages = balancedStages(g, std::min(2, g.layerCount()));
    p.micro_batches = 2;
    p.global_batch = 2 * std::max(1, g.batch_size);
    p.device_map = defaultDeviceMap(p.pipelineDepth(), p.dp);
    return p;
}

// Lowering and simulating are linear in micro-batches x devices (bench_simulator measures
// them); an accepted plan of 65,536 micro-batches takes 1.5 s in a release build but over
// libFuzzer's 10 s under ASan on a busy machine. Larger plans are read and checked only, so
// each input stays far inside the timeout and a timeout still means a hang.
constexpr int64_t kMaxSimulatedMicroBatchDevices = 4096;

void run(const Plan& plan, const Graph& graph, const Cluster& cluster) {
    checkPlan(plan, graph, cluster.deviceCount());
    if (static_cast<int64_t>(plan.micro_batches) * plan.deviceCount() > kMaxSimulatedMicroBatchDevices) return;
    const Program program = lower(plan, graph);
    const ValidationResult v = validate(program, graph);
    if (!v.ok) fuzz::finding("an accepted plan lowers to an invalid program: " + (v.problems.empty() ? std::string() : v.problems.front()));
    const CostModel cost(graph, cluster);
    const Trace t = simulate(program, plan, cost);
    if (!std::isfinite(t.metrics.iteration_time_s) || t.metrics.iteration_time_s < 0)
        fuzz::finding("a simulation returned iteration time " + std::to_string(t.metrics.iteration_time_s));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::expectOnlyErrors([&] {
        const nlohmann::json j = json_read::parseJson(fuzz::asText(data, size), "input");
        const std::string format = j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
        if (format == "hippie-graph") {
            const Graph g = graphFromJson(j, "graph");
            run(planFor(g), g, exampleCluster());
        } else if (format == "hippie-cluster") {
            run(planFor(exampleGraph()), exampleGraph(), clusterFromJson(j, "cluster"));
        } else {
            run(planFromJson(j, "plan"), exampleGraph(), exampleCluster());
        }
    });
    return 0;
}
