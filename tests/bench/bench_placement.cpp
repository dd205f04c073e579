// Placement planners side by side: for each graph on 4 and 8 devices of a DGX A100 (40 GiB
// each) at a batch one device cannot hold, each planner's planning time, the time in its core
// (without the co-placement, exact memory checks and simulation every placement planner
// shares; SGP's core is all it does after its costs per op), the time of the final scoring of
// its plan (evaluation, not planning), simulated step time, peak memory and whether it fits;
// then TGA's and SGP's step times against the best of Baechi's three (m-topo, m-etf, m-sct) and
// SGP's against TGA's, and SGP's planning-time ratios to m-ETF, m-SCT and TGA, in total and in
// the core. Planning time is the planner's own CPU time (its thread's, as side_by_side measures
// it, so other load on the machine inflates it less than wall time) less the final scoring of
// the plan it returns (lowering and simulating it for the step time shown: evaluation_time_s,
// the "eval ms" column), measured the same way for every planner (planningSeconds). A
// planner's own simulations stay in its planning time: TGA's fitness evaluations, and the
// one-device plan's simulation where a placement planner compares against it.
//
// usage: bench_placement [time_budget_s=60] [graph ...]
//   graphs: inception-v3 gnmt-8 transformer-big resnet50 random-dag-20000 (default: all)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planners/common/allocator.h"
#include "planners/algorithms/placement/placement_common.h"
#include "planners/algorithms/placement/random_dag.h"
#include "planners/algorithms/registry.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"

using namespace hippie;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const char* const kRandomDag = "random-dag-20000";
const std::vector<std::string> kPlanners = {"m-topo", "m-etf", "m-sct", "tga", "sgp"};

struct Workload {
    std::string graph;
    int global_batch;  // about twice what one 40 GiB device holds
};

const std::vector<Workload> kWorkloads = {
    {"inception-v3", 512}, {"gnmt-8", 2048}, {"transformer-big", 128}, {"resnet50", 512}, {kRandomDag, 4}};

Graph buildGraph(const Workload& w) {
    if (w.graph == kRandomDag) return placement::randomLayeredDag();
    ModelSpec spec;
    spec.zoo = w.graph;
    spec.batch_size = w.global_batch;
    return buildZooModel(spec);
}

Problem problemFor(const Workload& w, int devices, double budget_s) {
    Problem p;
    p.graph = buildGraph(w);
    p.cluster = buildClusterPreset("dgx-a100-1x8");
    p.cluster.nodes[0].devices = devices;
    p.cluster_name = "dgx-a100-1x8 (" + std::to_string(devices) + " GPUs)";
    p.global_batch = w.global_batch;
    p.time_budget_s = budget_s;
    return p;
}

void printRow(const Workload& w, int devices, const PlannerResult& r) {
    const bool has_plan = !r.plan.placement.empty();
    std::printf("| %s | %d | %s | %.3f | %.3f | %.2f | %s | %s | %d | %s |\n", w.graph.c_str(), devices, r.planner.c_str(), r.planning_time_s * 1e3,
                placement::coreSeconds(r) * 1e3, r.evaluation_time_s * 1e3,
                has_plan ? std::to_string(r.metrics.iteration_time_s).c_str() : "-",
                has_plan ? std::to_string(static_cast<double>(r.metrics.max_peak_memory_bytes) / kGiB).c_str() : "-",
                has_plan ? r.plan.deviceCount() : 0, r.feasible ? "yes" : ("no: " + r.reason).c_str());
    std::fflush(stdout);
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// Plans once; a planner faster than kRepeatBelowS plans again, up to kRepeats times in all,
// and reports the median time (the machine's noise is larger than such planners' time).
PlannerResult timedPlan(const std::string& name, const Problem& p) {
    constexpr double kRepeatBelowS = 0.1;
    constexpr int kRepeats = 9;
    auto once = [&] {
        PlanContext context(p.time_budget_s);
        const std::unique_ptr<Planner> planner = makePlanner(name);
        const double start = threadCpuSeconds();
        PlannerResult r = planner->plan(p, context);
        r.planning_time_s = planningSeconds(threadCpuSeconds() - start, r);
        return r;
    };
    PlannerResult r = once();
    if (r.planning_time_s >= kRepeatBelowS) return r;
    std::vector<double> times{r.planning_time_s}, cores{placement::coreSeconds(r)}, scoring{r.evaluation_time_s};
    while (static_cast<int>(times.size()) < kRepeats) {
        const PlannerResult next = once();
        times.push_back(next.planning_time_s);
        cores.push_back(placement::coreSeconds(next));
        scoring.push_back(next.evaluation_time_s);
    }
    std::nth_element(times.begin(), times.begin() + kRepeats / 2, times.end());
    std::nth_element(cores.begin(), cores.begin() + kRepeats / 2, cores.end());
    std::nth_element(scoring.begin(), scoring.begin() + kRepeats / 2, scoring.end());
    r.planning_time_s = times[kRepeats / 2];
    r.evaluation_time_s = scoring[kRepeats / 2];
    // The median core time replaces the first run's in the log.
    for (std::string& line : r.log)
        if (line.rfind(placement::kCoreTimePrefix, 0) == 0) line = placement::coreTimeLine(cores[kRepeats / 2]);
    return r;
}

double stepOf(const PlannerResult& r) { return r.feasible ? r.metrics.iteration_time_s : 0.0; }

}  // namespace

int main(int argc, char** argv) {
    keepFreedMemoryForReuse();  // as hippie-plan and hippie-studio run
    const double budget_s = argc > 1 ? std::atof(argv[1]) : 60.0;
    std::vector<std::string> only(argv + std::min(argc, 2), argv + argc);
    std::printf("time budget %.0f s per planner\n\n", budget_s);
    std::printf("| graph | GPUs | planner | planning ms | core ms | eval ms | step s | peak GiB | devices used | fits |\n|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> steps, times;
    for (const Workload& w : kWorkloads) {
        if (!only.empty() && std::find(only.begin(), only.end(), w.graph) == only.end()) continue;
        for (int devices : {4, 8}) {
            const Problem p = problemFor(w, devices, budget_s);
            std::map<std::string, PlannerResult> by_name;
            for (const std::string& name : kPlanners) {
                by_name[name] = timedPlan(name, p);
                printRow(w, devices, by_name[name]);
            }
            std::string baechi = "-";
            double best = 0;
            for (const char* b : {"m-topo", "m-etf", "m-sct"})
                if (stepOf(by_name[b]) > 0 && (best == 0 || stepOf(by_name[b]) < best)) {
                    best = stepOf(by_name[b]);
                    baechi = b;
                }
            char line[512];
            std::snprintf(line, sizeof line, "| %s | %d | %s %.4f | %.4f | %.4f | %.3f | %.3f | %.3f |", w.graph.c_str(), devices, baechi.c_str(), best,
                          stepOf(by_name["tga"]), stepOf(by_name["sgp"]), ratio(stepOf(by_name["tga"]), best), ratio(stepOf(by_name["sgp"]), best),
                          ratio(stepOf(by_name["sgp"]), stepOf(by_name["tga"])));
            steps.emplace_back(line);
            auto core = [&](const char* n) { return placement::coreSeconds(by_name[n]); };
            std::snprintf(line, sizeof line, "| %s | %d | %.1fx | %.1fx | %.0fx | %.1fx | %.1fx | %.0fx |", w.graph.c_str(), devices,
                          ratio(by_name["m-etf"].planning_time_s, by_name["sgp"].planning_time_s),
                          ratio(by_name["m-sct"].planning_time_s, by_name["sgp"].planning_time_s),
                          ratio(by_name["tga"].planning_time_s, by_name["sgp"].planning_time_s), ratio(core("m-etf"), core("sgp")),
                          ratio(core("m-sct"), core("sgp")), ratio(core("tga"), core("sgp")));
            times.emplace_back(line);
        }
    }
    std::printf("\n| graph | GPUs | best of Baechi's three: step s | TGA step s | SGP step s | TGA / best Baechi | SGP / best Baechi | SGP / TGA |\n"
                "|---|---|---|---|---|---|---|---|\n");
    for (const std::string& s : steps) std::printf("%s\n", s.c_str());
    std::printf("\nSGP's planning-time ratios (other planner's time / SGP's; planning time without the final scoring of the returned plan),\n"
                "in total and in the core alone:\n\n"
                "| graph | GPUs | m-ETF / SGP | m-SCT / SGP | TGA / SGP | core: m-ETF / SGP | core: m-SCT / SGP | core: TGA / SGP |\n"
                "|---|---|---|---|---|---|---|---|\n");
    for (const std::string& s : times) std::printf("%s\n", s.c_str());
    return 0;
}
