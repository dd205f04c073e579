// Planner comparison and planning-time scaling.
//   build-release/bin/bench_planners [table|scaling|all] [--family hybrid|any] [--budget SECONDS] [--repeat N]
// table:   every registered planner of the family on gpt3-1.3b, gpt3-13b, bert-large and
//          resnet152 x dgx-a100-2x8 and v100-4x4 (objective me-floor, the default: within 10%
//          of the best throughput, then least memory): throughput, peak memory and ME, each
//          relative to the best baseline under that objective, and planning time (wall clock
//          and this thread's CPU time).
// scaling: hippie's planning time for gpt3-13b on 8 to 128 A100s (DGX nodes; 8x8 and 16x8
//          are built in code), and on dgx-a100-4x8 for gpt3-13b cut or grown to 12, 24, 40,
//          80 and 96 blocks (the `layers` override); prints the command that produced it.
// Use a Release build: planning time is the point.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "planners/common/allocator.h"
#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/registry.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"

using namespace hippie;

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Samples per iteration: GPT-3's 0.5M-token batches at 2048 tokens (Brown et al. 2020,
// Table 2.1, smallest models), BERT's 256 sequences (Devlin et al. 2019), ResNet's 256 images
// (Goyal et al. 2017's base batch).
constexpr int kGptBatch = 512;
constexpr int kBertBatch = 256;
constexpr int kResNetBatch = 256;

struct Options {
    std::string what = "all";
    std::string family = "hybrid";
    double budget_s = 120;
    int repeat = 1;  // scaling: runs per row, the fastest reported (this machine may be shared)
};

struct Timed {
    PlannerResult result;
    double wall_s = 0;
    double cpu_s = 0;
};

double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Problem zooProblem(const std::string& model, const Cluster& cluster, const std::string& cluster_name, int global_batch,
                   const std::map<std::string, double>& overrides = {}) {
    ModelSpec spec;
    spec.zoo = model;
    spec.overrides = overrides;
    spec.batch_size = 1;
    spec.precision = Precision::FP16;
    Problem p;
    p.graph = buildZooModel(spec);
    p.cluster = cluster;
    p.cluster_name = cluster_name;
    p.global_batch = global_batch;
    p.optimizer = Optimizer::Adam;
    p.objective = Objective::MemoryEfficiencyWithThroughputFloor;
    p.throughput_floor = 0.9;
    return p;
}

int batchFor(const std::string& model) {
    if (model.rfind("gpt", 0) == 0) return kGptBatch;
    return model.rfind("bert", 0) == 0 ? kBertBatch : kResNetBatch;
}

Timed timedPlan(const std::string& planner, const Problem& problem, double budget_s) {
    PlanContext context(budget_s);
    const double cpu0 = threadCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    Timed t{makePlanner(planner)->plan(problem, context), 0, 0};
    t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.cpu_s = threadCpuSeconds() - cpu0;
    return t;
}

// DGX A100 nodes joined by the preset's InfiniBand links, for sizes no preset has.
Cluster dgxA100Nodes(int nodes) {
    Cluster c = buildClusterPreset("dgx-a100-2x8");
    const Node node = c.nodes.front();
    c.nodes.assign(static_cast<size_t>(nodes), node);
    c.name = "dgx-a100-" + std::to_string(nodes) + "x8";
    return c;
}

std::string shortPlan(const Plan& p) {
    std::string s = std::to_string(p.pipelineDepth()) + "x" + std::to_string(p.dp) + (p.tp > 1 ? " t" + std::to_string(p.tp) : "") +
                    (p.sequence_parallel ? " sp" : "") + (p.zero_stage > 0 ? " z" + std::to_string(p.zero_stage) : "") + " m" +
                    std::to_string(p.micro_batches);
    if (!p.recompute_layers.empty()) s += " rc" + std::to_string(p.recompute_layers.size());
    return s;
}

// The reference: the best baseline under the problem's objective (as hippie-plan compare).
const Timed* reference(const Problem& problem, const std::vector<std::pair<std::string, Timed>>& rows) {
    std::vector<PlannerResult> results;
    for (const auto& row : rows) results.push_back(row.second.result);
    const int i = referenceResult(problem, results);
    return i >= 0 ? &rows[static_cast<size_t>(i)].second : nullptr;
}

void printTable(const Problem& problem, const std::string& model, const std::string& cluster,
                const std::vector<std::pair<std::string, Timed>>& rows) {
    const Timed* ref = reference(problem, rows);
    std::printf("\n%s on %s (global batch %d, objective %s; relative to %s)\n", model.c_str(), cluster.c_str(), batchFor(model),
                toString(problem.objective),
                ref ? ref->result.planner.c_str() : "nothing: no baseline fits");
    std::printf("  %-16s %-14s %10s %9s %9s %8s %8s %8s %9s %9s  %s\n", "planner", "plan", "samples/s", "peak GiB", "ME", "thr x",
                "peak x", "ME x", "wall s", "cpu s", "note");
    for (const auto& [name, t] : rows) {
        const TraceMetrics& m = t.result.metrics;
        if (!t.result.feasible) {
            std::printf("  %-16s %-14s %10s %9s %9s %8s %8s %8s %9.3f %9.3f  %s\n", name.c_str(), "-", "-", "-", "-", "-", "-", "-",
                        t.wall_s, t.cpu_s, t.result.reason.substr(0, 90).c_str());
            continue;
        }
        const double peak = static_cast<double>(m.max_peak_memory_bytes);
        const TraceMetrics* r = ref ? &ref->result.metrics : nullptr;
        std::printf("  %-16s %-14s %10.2f %9.2f %9.3f %8.2f %8.2f %8.2f %9.3f %9.3f  %s\n", name.c_str(), shortPlan(t.result.plan).c_str(),
                    m.throughput_samples_per_s, peak / kBytesPerGiB, m.memory_efficiency,
                    r ? m.throughput_samples_per_s / r->throughput_samples_per_s : 0.0,
                    r ? peak / static_cast<double>(r->max_peak_memory_bytes) : 0.0, r ? m.memory_efficiency / r->memory_efficiency : 0.0,
                    t.wall_s, t.cpu_s, t.result.reason.substr(0, 60).c_str());
    }
}

void comparisonTable(const Options& o) {
    for (const char* model : {"gpt3-1.3b", "gpt3-13b", "bert-large", "resnet152"}) {
        for (const char* cluster : {"dgx-a100-2x8", "v100-4x4"}) {
            const Problem problem = zooProblem(model, buildClusterPreset(cluster), cluster, batchFor(model));
            std::vector<std::pair<std::string, Timed>> rows;
            for (const PlannerInfo& p : plannerRegistry())
                if (o.family == "any" || p.family == o.family) rows.emplace_back(p.name, timedPlan(p.name, problem, o.budget_s));
            printTable(problem, model, cluster, rows);
        }
    }
}

void scalingRow(const std::string& label, const Problem& problem, const Options& o) {
    Timed t = timedPlan("hippie", problem, o.budget_s);
    for (int i = 1; i < o.repeat; ++i) {
        const Timed again = timedPlan("hippie", problem, o.budget_s);
        t.wall_s = std::min(t.wall_s, again.wall_s);
        t.cpu_s = std::min(t.cpu_s, again.cpu_s);
    }
    std::printf("  %-22s %4d devices %3d layers %5zu ops | wall %7.3f s  cpu %7.3f s | %s\n", label.c_str(),
                problem.cluster.deviceCount(), problem.graph.layerCount(), problem.graph.ops.size(), t.wall_s, t.cpu_s,
                t.result.feasible ? shortPlan(t.result.plan).c_str() : t.result.reason.c_str());
    for (const std::string& line : t.result.log)
        if (line.rfind("estimated", 0) == 0) std::printf("  %-22s %s\n", "", line.c_str());
}

void scaling(const Options& o, const std::string& command) {
    std::printf("\n%s\n", command.c_str());
    std::printf("\nhippie planning time vs devices (gpt3-13b, global batch %d)\n", kGptBatch);
    for (const char* preset : {"dgx-a100-1x8", "dgx-a100-2x8", "dgx-a100-4x8"})
        scalingRow(preset, zooProblem("gpt3-13b", buildClusterPreset(preset), preset, kGptBatch), o);
    for (int nodes : {8, 16}) {
        const Cluster c = dgxA100Nodes(nodes);
        scalingRow(c.name + " (in code)", zooProblem("gpt3-13b", c, c.name, kGptBatch), o);
    }
    // GPT-3 13B's width (5120, 40 heads) at the depths of the GPT-3 family and beyond: the
    // Graph has two more layers than blocks (embedding and head).
    std::printf("\nhippie planning time vs layers (gpt3-13b --override layers=N, dgx-a100-4x8, global batch %d)\n", kGptBatch);
    for (int blocks : {12, 24, 40, 80, 96})
        scalingRow("gpt3-13b layers=" + std::to_string(blocks),
                   zooProblem("gpt3-13b", buildClusterPreset("dgx-a100-4x8"), "dgx-a100-4x8", kGptBatch, {{"layers", blocks}}), o);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--family") && i + 1 < argc) o.family = argv[++i];
        else if (!std::strcmp(argv[i], "--budget") && i + 1 < argc) o.budget_s = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) o.repeat = std::max(1, std::atoi(argv[++i]));
        else o.what = argv[i];
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    keepFreedMemoryForReuse();  // as hippie-plan and hippie-studio run
    const Options o = parse(argc, argv);
    std::string command = "$";
    for (int i = 0; i < argc; ++i) command += std::string(" ") + argv[i];
    if (o.what == "table" || o.what == "all") comparisonTable(o);
    if (o.what == "scaling" || o.what == "all") scaling(o, command);
    return 0;
}
