// hippie-plan simulate: lower a plan to a Program, validate it, time it and report.
//
// The plan comes from the shape flags (--model, --pp, --dp, ...) or from --plan FILE. The two
// do not mix: a shape flag next to --plan is a usage error, so a saved plan always reproduces
// the run that saved it. Only --cluster may accompany --plan: it re-targets the plan to
// another cluster (checked to have enough devices).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/simulate_report.h"
#include "app/cli/simulate_setup.h"
#include "app/cli/validators.h"
#include "planners/common/error.h"
#include "planners/common/json_read.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"
#include "planners/sim/trace_json.h"

namespace hippie::cli {

namespace {

struct SimulateCommand {
    SimulateOptions opts;
    std::vector<const CLI::Option*> needed_without_plan;
};

void requireShapeFlags(const SimulateCommand& cmd) {
    if (!cmd.opts.plan_file.empty()) return;
    for (const CLI::Option* o : cmd.needed_without_plan)
        if (o->count() == 0) throw Error("simulate: " + o->get_name() + " is required (or give --plan FILE)");
}

void writeOutputs(const SimulateOptions& opts, const SimulationSetup& setup, const Trace& trace) {
    if (!opts.trace_file.empty()) json_read::writeJsonFile(traceToJson(trace), opts.trace_file);
    if (!opts.chrome_trace_file.empty())
        saveChromeTrace(trace, opts.chrome_trace_file, deviceNames(setup.plan, trace), &setup.cluster);
    if (!opts.save_plan_file.empty()) savePlanFile(setup.plan, opts.save_plan_file);
}

// A Program that fails validation is a bug in lowering, not the user's doing.
void reportInvalid(const ValidationResult& v) {
    std::cerr << "hippie-plan: internal error: the lowered program is invalid:\n";
    for (const std::string& p : v.problems) std::cerr << "  " << p << '\n';
}

int run(const SimulateCommand& cmd) {
    requireShapeFlags(cmd);
    const SimulateOptions& opts = cmd.opts;
    const SimulationSetup setup = opts.plan_file.empty() ? setupFromFlags(opts) : setupFromPlanFile(opts);
    checkPlan(setup.plan, setup.graph, setup.cluster.deviceCount());
    const Program program = lower(setup.plan, setup.graph);
    if (const ValidationResult v = validate(program, setup.graph); !v.ok) {
        reportInvalid(v);
        return kExitInternal;
    }
    const CostModel cost(setup.graph, setup.cluster);
    const Trace trace = simulate(program, setup.plan, cost);
    writeOutputs(opts, setup, trace);

    if (opts.json) {
        std::cout << metricsToJson(trace.metrics).dump(2) << '\n';
        return kExitOk;
    }
    printReport(std::cout, setup, trace);
    if (opts.program) std::cout << "\nProgram\n" << program.str();
    return kExitOk;
}

// Adds the flags that shape a plan and returns them: --plan excludes them all.
std::vector<CLI::Option*> addShapeOptions(CLI::App& sub, SimulateCommand& cmd) {
    SimulateOptions& o = cmd.opts;
    const auto positive = [&](const char* name, int& value, const char* help) {
        return sub.add_option(name, value, help)->check(positiveInt());
    };
    std::vector<CLI::Option*> model = addModelOptions(sub, o.model);
    std::vector<CLI::Option*> needed = {
        model.front(),
        positive("--pp", o.pp, "pipeline stages (devices per pipeline)"),
        positive("--dp", o.dp, "data-parallel replicas of each stage"),
        positive("--microbatches", o.micro_batches, "micro-batches per pipeline per iteration"),
        positive("--global-batch", o.global_batch, "samples per iteration over all replicas"),
        sub.add_option("--schedule", o.schedule, "gpipe, 1f1b, hippie, interleaved or zb-h1"),
    };
    cmd.needed_without_plan.insert(cmd.needed_without_plan.end(), needed.begin(), needed.end());
    std::vector<CLI::Option*> shape = needed;
    shape.insert(shape.end(), model.begin() + 1, model.end());
    shape.insert(shape.end(),
                 {positive("--virtual-stages", o.virtual_stages, "model chunks per device (interleaved)"),
                  sub.add_option("--recompute", o.recompute,
                                 "recompute in backward: full (the default without a value): every layer but the last of each "
                                 "stage; selective: only the attention cores (scores and softmax) of every layer")
                      ->expected(0, 1)
                      ->check(CLI::IsMember({"", "none", "full", "selective"})),
                  sub.add_option("--zero", o.zero_stage,
                                 "ZeRO sharding over each stage's dp replicas: 0 none, 1 optimizer state, 2 + gradients, 3 + parameters")
                      ->check(CLI::Range(0, kMaxZeroStage)),
                  positive("--tp", o.tp, "tensor-parallel degree: devices that split each replica of every stage (Megatron-LM)"),
                  sub.add_option("--stage-replicas", o.stage_replicas,
                                 "replicas of each stage, comma-separated (PipeDream's per-stage replication, e.g. 3,1); "
                                 "micro-batches go round-robin over a stage's replicas, --dp is the largest")
                      ->delimiter(',')
                      ->check(positiveInt()),
                  sub.add_option("--stage-tp", o.stage_tp,
                                 "tensor-parallel degree of each stage, comma-separated (e.g. 2,1,2; --tp is then the largest, "
                                 "taken from these when not given)")
                      ->delimiter(',')
                      ->check(positiveInt()),
                  sub.add_flag("--sp", o.sequence_parallel, "sequence parallelism over the tensor-parallel ranks (needs --tp 2 or more)"),
                  sub.add_option("--optimizer", o.optimizer, "sgd, sgd-momentum, adam or adamw")->capture_default_str()});
    return shape;
}

void addOutputOptions(CLI::App& sub, SimulateOptions& o) {
    sub.add_option("--trace", o.trace_file, "write the predicted trace (hippie-trace JSON)");
    sub.add_option("--chrome-trace", o.chrome_trace_file, "write a Chrome trace (open in Perfetto)");
    sub.add_option("--save-plan", o.save_plan_file, "write the plan (hippie-plan JSON) for --plan");
    CLI::Option* program = sub.add_flag("--program", o.program, "print the lowered program, one line per device");
    sub.add_flag("--json", o.json, "print only the metrics as JSON")->excludes(program);
}

}  // namespace

Command addSimulateCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("simulate", "Simulate one training iteration of a pipeline plan");
    auto cmd = std::make_shared<SimulateCommand>();
    SimulateOptions& o = cmd->opts;
    cmd->needed_without_plan.push_back(
        sub->add_option("--cluster,-c", o.cluster, "cluster preset (see 'hippie-plan clusters') or cluster JSON file"));
    const std::vector<CLI::Option*> shape = addShapeOptions(*sub, *cmd);
    CLI::Option* plan = sub->add_option("--plan", o.plan_file, "simulate this plan file instead of the shape flags");
    for (CLI::Option* flag : shape) plan->excludes(flag);
    addOutputOptions(*sub, o);
    sub->footer("Stages: pp (x virtual-stages) contiguous layer ranges balanced by forward FLOPs.\n"
                "Devices: pp x dp x tp; rank k of replica r of stage s on device (r * pp + s) * tp + k.\n"
                "With --plan the plan file gives model, cluster, shape and schedule; only --cluster may\n"
                "be added, to simulate the same plan on another cluster.\n");
    return {sub, [cmd] { return run(*cmd); }};
}

}  // namespace hippie::cli
