// hippie-plan compare: run planners side by side on one model and cluster, one row each.
#include <filesystem>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/format.h"
#include "app/cli/model_options.h"
#include "app/cli/table.h"
#include "app/cli/validators.h"
#include "planners/algorithms/comparison_caption.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/trace_json.h"

namespace hippie::cli {

namespace {

struct CompareOptions {
    ModelOptions model;
    std::string cluster;
    int global_batch = 0;
    std::vector<std::string> planners;
    std::string objective = "me-floor";
    double throughput_floor = 0.9;
    double time_budget_s = 30;
    double memory_headroom = 0.0;
    std::string optimizer = "adam";
    uint64_t seed = 1;
    std::string out_dir;
    bool json = false;
};

Problem makeProblem(const CompareOptions& o) {
    Problem p;
    // Costs scale linearly with samples: the planners rescale to their micro-batch size.
    p.graph = buildGraph(o.model, 1);
    p.cluster = loadCluster(o.cluster);
    p.cluster_name = o.cluster;
    p.global_batch = o.global_batch;
    p.optimizer = optimizerFromString(o.optimizer);
    p.objective = objectiveFromString(o.objective);
    p.throughput_floor = o.throughput_floor;
    p.time_budget_s = o.time_budget_s;
    p.memory_headroom = o.memory_headroom;
    p.seed = o.seed;
    return p;
}

std::string shape(const PlannerResult& r) {
    if (!r.feasible && r.plan.stages.empty() && r.plan.placement.empty()) return "-";
    if (r.plan.isPlacement()) return "placement on " + std::to_string(r.plan.deviceCount());
    return std::to_string(r.plan.pipelineDepth()) + "x" + r.plan.dpText();
}

// The tensor-parallel degree, sequence parallelism and ZeRO stage columns of a pipeline plan.
std::vector<std::string> parallelism(const Plan& p) {
    if (p.isPlacement()) return {"-", "-", "-"};
    return {p.tpText(), p.sequence_parallel ? "yes" : "-", std::to_string(p.zero_stage)};
}

std::string stages(const Plan& p) {
    std::vector<std::string> parts;
    for (const StageRange& s : p.stages) parts.push_back(layerRange(s));
    std::string out = joined(parts, "|");
    if (!p.recompute_layers.empty()) out += " +rc" + std::to_string(p.recompute_layers.size());
    if (p.selective_recompute) out += " +sel";
    return out;
}

void printTable(const Problem& problem, const std::vector<PlannerResult>& results) {
    Table t({{"planner"}, {"pp x dp", Align::Right}, {"t", Align::Right}, {"sp"}, {"ZeRO", Align::Right}, {"mb", Align::Right},
             {"stages"}, {"iteration", Align::Right},
             {"samples/s", Align::Right}, {"thr x ref", Align::Right}, {"peak GiB", Align::Right}, {"ME", Align::Right},
             {"ME x ref", Align::Right}, {"bubble", Align::Right}, {"plan CPU", Align::Right}, {"fits"}});
    const int ref_index = referenceResult(problem, results);
    const PlannerResult* ref = ref_index >= 0 ? &results[static_cast<size_t>(ref_index)] : nullptr;
    const double floor = comparisonFloor(problem.objective, problem.throughput_floor, results);
    bool any_below = false;
    for (const PlannerResult& r : results) {
        const bool has_plan = !r.plan.stages.empty() || !r.plan.placement.empty();
        if (!has_plan) {
            t.addRow({r.planner, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", milliseconds(r.planning_time_s),
                      r.skipped ? "-" : "no"});
            continue;
        }
        const TraceMetrics& m = r.metrics;
        const bool rel_ok = ref && r.feasible;
        const bool below = r.feasible && m.throughput_samples_per_s < floor;
        any_below = any_below || below;
        const std::string me_rel =
            rel_ok ? fixed(m.memory_efficiency / ref->metrics.memory_efficiency, 2) + "x" + (below ? "*" : "") : "-";
        const std::string thr_rel = rel_ok ? fixed(m.throughput_samples_per_s / ref->metrics.throughput_samples_per_s, 2) + "x" : "-";
        std::vector<std::string> row{r.planner, shape(r)};
        for (std::string& cell : parallelism(r.plan)) row.push_back(std::move(cell));
        row.insert(row.end(), {std::to_string(r.plan.micro_batches), r.plan.isPlacement() ? "-" : stages(r.plan),
                               milliseconds(m.iteration_time_s), fixed(m.throughput_samples_per_s, 1), thr_rel, gib(m.max_peak_memory_bytes),
                               fixed(m.memory_efficiency, 2), me_rel, percent(m.bubble_fraction), milliseconds(r.planning_time_s),
                               r.feasible ? "yes" : "no"});
        t.addRow(std::move(row));
    }
    t.print(std::cout);
    std::cout << '\n' << objectiveCaption(problem.objective, problem.throughput_floor, floor) << '\n';
    if (any_below) std::cout << belowFloorNote() << '\n';
    std::cout << "t: tensor-parallel degree; sp: sequence parallelism; ZeRO: sharding stage of the data-parallel groups.\n";
    std::cout << referenceCaption(ref, floor);
    if (ref)
        std::cout << " plan CPU: each planner's own CPU time, without the final scoring (lowering and simulating) of a placement "
                     "plan (JSON: evaluation_time_s).";
    std::cout << '\n';
    for (const PlannerResult& r : results) {
        if (!r.feasible || !r.reason.empty())
            std::cout << r.planner << ": " << (r.skipped ? "skipped: " : "") << (r.reason.empty() ? "infeasible" : r.reason) << '\n';
        for (const std::string& note : r.notes)
            if (note != r.reason) std::cout << r.planner << " note: " << note << '\n';
    }
}

nlohmann::json resultsJson(const Problem& problem, const std::vector<PlannerResult>& results) {
    nlohmann::json rows = nlohmann::json::array();
    for (const PlannerResult& r : results) {
        const bool has_plan = !r.plan.stages.empty() || !r.plan.placement.empty();
        rows.push_back({{"planner", r.planner},
                        {"plan", has_plan ? planToJson(r.plan) : nlohmann::json(nullptr)},
                        {"zero_stage", has_plan ? nlohmann::json(r.plan.zero_stage) : nlohmann::json(nullptr)},
                        {"tp", has_plan ? nlohmann::json(r.plan.tp) : nlohmann::json(nullptr)},
                        {"sequence_parallel", has_plan ? nlohmann::json(r.plan.sequence_parallel) : nlohmann::json(nullptr)},
                        {"selective_recompute", has_plan ? nlohmann::json(r.plan.selective_recompute) : nlohmann::json(nullptr)},
                        {"metrics", has_plan ? metricsToJson(r.metrics) : nlohmann::json(nullptr)},
                        {"planning_time_s", r.planning_time_s},
                        {"evaluation_time_s", r.evaluation_time_s},
                        {"fastest_throughput_samples_per_s", r.fastest_throughput},
                        {"feasible", r.feasible},
                        {"skipped", r.skipped},
                        {"reason", r.reason},
                        {"notes", r.notes}});
    }
    const int ref = referenceResult(problem, results);
    return {{"results", rows},
            {"objective", toString(problem.objective)},
            {"throughput_floor", problem.throughput_floor},
            {"floor_samples_per_s", comparisonFloor(problem.objective, problem.throughput_floor, results)},
            {"reference", ref >= 0 ? nlohmann::json(results[static_cast<size_t>(ref)].planner) : nlohmann::json(nullptr)}};
}

void writePlans(const std::vector<PlannerResult>& results, const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("--out: cannot create directory '" + dir + "': " + ec.message());
    for (const PlannerResult& r : results)
        if (!r.plan.stages.empty() || !r.plan.placement.empty()) savePlanFile(r.plan, dir + "/" + r.planner + ".plan.json");
}

int run(const CompareOptions& o) {
    const Problem problem = makeProblem(o);
    const std::vector<std::string> names = o.planners.empty() ? defaultComparedPlanners() : o.planners;
    if (names.empty()) throw Error("compare: no planners are registered");
    if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) throw Error("--planners: a planner is named twice");
    const std::vector<PlannerResult> results = runSideBySide(problem, names);
    if (!o.out_dir.empty()) writePlans(results, o.out_dir);
    if (o.json) std::cout << resultsJson(problem, results).dump(2) << '\n';
    else printTable(problem, results);
    return kExitOk;
}

}  // namespace

Command addCompareCommand(CLI::App& app) {
    auto opts = std::make_shared<CompareOptions>();
    CLI::App* sub = app.add_subcommand("compare", "run planners side by side and compare their plans");
    addModelOptions(*sub, opts->model)[0]->required();
    sub->add_option("--cluster,-c", opts->cluster, "cluster preset (see 'hippie-plan clusters') or cluster JSON file")->required();
    sub->add_option("--global-batch,-b", opts->global_batch, "samples per iteration")->required()->check(positiveInt());
    sub->add_option("--planners", opts->planners, "comma-separated planners (default: every hybrid planner)")->delimiter(',');
    sub->add_option("--objective", opts->objective, "me-floor (default: within --throughput-floor of the best throughput, then least memory), me or throughput")->capture_default_str();
    sub->add_option("--throughput-floor", opts->throughput_floor, "me-floor: least fraction of the best throughput")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    sub->add_option("--time-budget", opts->time_budget_s, "seconds each planner may search")->check(CLI::PositiveNumber)->capture_default_str();
    sub->add_option("--memory-headroom", opts->memory_headroom, "fraction of device memory kept free")
        ->check(CLI::Range(0.0, 0.9))
        ->capture_default_str();
    sub->add_option("--optimizer", opts->optimizer, "sgd, sgd-momentum or adam")->capture_default_str();
    sub->add_option("--seed", opts->seed, "seed of randomised planners")->capture_default_str();
    sub->add_option("--out", opts->out_dir, "write each plan as DIR/<planner>.plan.json");
    sub->add_flag("--json", opts->json, "print {\"results\":[...]} as JSON");
    return {sub, [opts] { return run(*opts); }};
}

}  // namespace hippie::cli
