// hippie-engine: one training rank on LibTorch, and the commands that measure models and
// devices for the planners. Every command prints JSON lines; bad input is an error event
// and exit code 2. This front loads no LibTorch: it plans (plan), starts local ranks (launch),
// compares parameter dumps and lists the models, and hands every command that computes to
// hippie-engine-torch beside it (torch_main.cpp), whose start costs a second (LibTorch).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/src/cli_events.h"
#include "engine/src/launch/launcher.h"
#include "engine/src/runtime/blas_core.h"
#include "engine/src/runtime/compare.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/overrides.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"

namespace {

using nlohmann::json;
namespace he = hippie::engine;

std::string selfExe(const char* argv0) {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return argv0;
    buf[n] = '\0';
    return buf;
}

using he::errorEvent;

struct PlanFlags {
    std::string model = "gpt-tiny";
    std::string overrides;  // zoo models: "layers=2,d_model=64"
    std::string graph;  // graph JSON (profile, inspect) instead of a zoo model
    int pp = 2, dp = 1, micro_batches = 4, global_batch = 16, seq_len = 0, virtual_stages = 1;
    std::string schedule = "1f1b", optimizer = "sgd", precision = "fp32", out;
    std::vector<int> recompute;
    bool selective_recompute = false;
    std::vector<int> stage_starts;  // first layer of every stage after the first; empty: even stages
    long long bucket_bytes = 0;
    int zero_stage = 0;
    int tp = 1;
    bool sequence_parallel = false;
    std::vector<int> stage_replicas;  // per-stage replication; empty: --dp for every stage
    std::vector<int> stage_tp;        // per-stage tensor-parallel degrees; empty: --tp for every stage
};

// The layer ranges of `chunks` stages over `layers` layers: even, or cut where the user says
// (tests place a boundary where a particular tensor must cross it).
std::vector<hippie::StageRange> stageRanges(int layers, int chunks, const std::vector<int>& starts) {
    if (starts.empty()) {
        std::vector<hippie::StageRange> even;
        for (int s = 0; s < chunks; ++s) even.push_back({s * layers / chunks, (s + 1) * layers / chunks - 1});
        return even;
    }
    if (static_cast<int>(starts.size()) != chunks - 1)
        throw hippie::Error("--stage-starts takes the first layer of each stage after the first: " + std::to_string(chunks - 1) +
                            " value(s) for " + std::to_string(chunks) + " stages, got " + std::to_string(starts.size()));
    std::vector<hippie::StageRange> ranges;
    int first = 0;
    for (const int start : starts) {
        if (start <= first || start >= layers)
            throw hippie::Error("--stage-starts: layer " + std::to_string(start) + " must be above " + std::to_string(first) +
                                " and below the model's " + std::to_string(layers) + " layers, in increasing order");
        ranges.push_back({first, start - 1});
        first = start;
    }
    ranges.push_back({first, layers - 1});
    return ranges;
}

// A pipeline plan with even stages (or stages cut at --stage-starts): tests and benchmarks
// write their plans with it; the planners make real ones.
int makePlan(const PlanFlags& f) {
    const bool zoo = f.graph.empty() && (hippie::findZooModel(f.model) || hippie::findModelPreset(f.model));
    if (!zoo && f.graph.empty())
        return errorEvent("unknown model '" + f.model + "'; the engine trains the zoo's models (hippie-plan models) and their presets (" +
                          hippie::presetNames() + ")");
    if (!zoo && !f.overrides.empty()) return errorEvent("--override applies to the zoo's models, not '" + f.model + "'");
    try {
        hippie::Plan p;
        hippie::Graph from_file;
        if (zoo) {
            p.model.zoo = f.model;
            p.model.seq_len = f.seq_len;
            hippie::applyOverrideText(p.model, f.overrides);
            p.model = hippie::expandPreset(p.model);  // the plan records the zoo model a preset sizes
        } else {
            from_file = hippie::loadGraphFile(f.graph);
            p.model.file = f.graph;
            p.model.seq_len = from_file.source.seq_len;
        }
        p.model.batch_size = f.global_batch;
        p.model.precision = hippie::precisionFromString(f.precision);
        p.planner = "manual";
        p.cluster = "cpu-local";
        p.dp = f.dp;
        p.micro_batches = f.micro_batches;
        p.global_batch = f.global_batch;
        p.schedule = hippie::scheduleFromString(f.schedule);
        p.optimizer = hippie::optimizerFromString(f.optimizer);
        p.recompute_layers = f.recompute;
        p.selective_recompute = f.selective_recompute;
        p.virtual_stages = f.virtual_stages;
        if (f.bucket_bytes > 0) p.bucket_bytes = f.bucket_bytes;
        p.zero_stage = f.zero_stage;
        p.tp = f.tp;
        p.sequence_parallel = f.sequence_parallel;
        const hippie::Graph g = zoo ? hippie::buildZooModel(p.model) : from_file;
        const int layers = g.layerCount();
        const int chunks = f.pp * f.virtual_stages;  // interleaved: chunk c of device i is stage c * pp + i
        if (f.pp < 1 || f.virtual_stages < 1 || chunks > layers)
            return errorEvent("--pp x --virtual-stages must be between 1 and the model's " + std::to_string(layers) + " layers");
        p.stages = stageRanges(layers, chunks, f.stage_starts);
        if (f.tp < 1) return errorEvent("--tp must be at least 1");
        // Per-stage replica counts or degrees: one per stage, at least 1 each; dp (tp) is the widest stage's.
        const auto perStage = [&](const char* flag, const char* what, const std::vector<int>& v) -> std::string {
            if (static_cast<int>(v.size()) != f.pp)
                return std::string(flag) + " gives " + std::to_string(v.size()) + " " + what + " for --pp " + std::to_string(f.pp);
            if (*std::min_element(v.begin(), v.end()) < 1) return std::string(flag) + " must be at least 1 each";
            return "";
        };
        if (!f.stage_replicas.empty()) {
            if (const std::string bad = perStage("--stage-replicas", "counts", f.stage_replicas); !bad.empty()) return errorEvent(bad);
            p.stage_replicas = f.stage_replicas;
            p.dp = *std::max_element(f.stage_replicas.begin(), f.stage_replicas.end());
        }
        if (!f.stage_tp.empty()) {
            if (const std::string bad = perStage("--stage-tp", "degrees", f.stage_tp); !bad.empty()) return errorEvent(bad);
            p.stage_tp = f.stage_tp;
            p.tp = *std::max_element(f.stage_tp.begin(), f.stage_tp.end());
        }
        p.device_map = hippie::defaultDeviceMap(p);
        hippie::checkPlan(p, g, p.deviceCount());
        if (f.out.empty()) std::cout << hippie::planToJson(p).dump(2) << std::endl;
        else hippie::savePlanFile(p, f.out);
    } catch (const hippie::Error& e) {
        return errorEvent(e.what());
    }
    return 0;
}

std::string torchHalf(const std::string& self) { return self.substr(0, self.rfind('/') + 1) + "hippie-engine-torch"; }

}  // namespace

int main(int argc, char** argv) {
    const std::string self = selfExe(argv[0]);
    const std::string command = argc > 1 ? argv[1] : "";
    if (const he::TorchCommand* torch_command = he::findTorchCommand(command)) {
        // OpenBLAS reads OPENBLAS_CORETYPE only when it loads: set here, before any LibTorch
        // process starts (a launch's ranks inherit it below).
        if (torch_command->computes) he::forceBlasKernels();
        const std::string torch = torchHalf(self);
        execv(torch.c_str(), argv);
        return errorEvent("'" + command + "' needs the LibTorch half of the engine, " + torch + ", which cannot be started (" +
                          std::strerror(errno) + "): reinstall the hippie-engine package or rebuild with LibTorch");
    }
    CLI::App app{"hippie-engine: a HIPPIE training rank on LibTorch, and device/model measurement"};
    app.require_subcommand(1);
    app.set_version_flag("--version", HIPPIE_VERSION);
    // Listed for --help; main() hands them to the LibTorch half before parsing.
    for (const he::TorchCommand& c : he::kTorchCommands) app.add_subcommand(c.name, c.help)->allow_extras();

    he::LaunchOptions launch;
    int launch_steps = 1;
    unsigned long long launch_seed = 0;
    std::string launch_extra;
    auto* launch_cmd = app.add_subcommand("launch", "Start N local ranks on 127.0.0.1 and gather their output");
    launch_cmd->add_option("--plan", launch.plan_file, "plan file")->required();
    launch_cmd->add_option("--nprocs", launch.nprocs, "ranks to start (= the plan's pp x dp x tp)")->required();
    launch_cmd->add_option("--steps", launch_steps, "training steps");
    launch_cmd->add_option("--seed", launch_seed, "seed");
    launch_cmd->add_option("--port", launch.port, "rendezvous port (default: a free one)");
    launch_cmd->add_option("--rank-args", launch_extra, "more arguments for every rank, space separated");

    PlanFlags pf;
    auto* plan_cmd = app.add_subcommand("plan", "Write an even-stage pipeline plan for a zoo model, a preset or a graph file");
    plan_cmd->add_option("--model", pf.model, "zoo model or preset (hippie-engine models)");
    plan_cmd->add_option("--override", pf.overrides, "zoo models: size overrides KEY=VALUE,... (hippie-plan models --json lists the keys)");
    plan_cmd->add_option("--graph", pf.graph, "graph JSON instead (from profile, or inspect of a TorchScript file)");
    plan_cmd->add_option("--pp", pf.pp, "pipeline stages");
    plan_cmd->add_option("--dp", pf.dp, "data-parallel replicas");
    plan_cmd->add_option("--microbatches", pf.micro_batches, "micro-batches per pipeline");
    plan_cmd->add_option("--global-batch", pf.global_batch, "samples per step");
    plan_cmd->add_option("--seq-len", pf.seq_len, "sequence length (0: the model's)");
    plan_cmd->add_option("--schedule", pf.schedule, "gpipe, 1f1b, hippie, interleaved, zb-h1");
    plan_cmd->add_option("--virtual-stages", pf.virtual_stages, "model chunks per device (interleaved)");
    plan_cmd->add_option("--optimizer", pf.optimizer, "sgd, sgd-momentum, adam, adamw");
    plan_cmd->add_option("--precision", pf.precision, "fp32, or mixed precision: bf16 (CPU, CUDA), fp16 (CUDA)");
    plan_cmd->add_option("--recompute", pf.recompute, "layers to recompute")->delimiter(',');
    plan_cmd->add_flag("--selective-recompute", pf.selective_recompute,
                       "recompute the attention cores (scores, softmax) of the layers not in --recompute in backward, not keep them");
    plan_cmd->add_option("--stage-starts", pf.stage_starts, "first layer of each stage after the first (default: even stages)")
        ->delimiter(',');
    plan_cmd->add_option("--bucket-bytes", pf.bucket_bytes, "gradient bucket size");
    plan_cmd->add_option("--zero", pf.zero_stage, "ZeRO stage of the data-parallel groups: 0 none, 1 optimizer state, 2 + gradients, 3 + parameters");
    plan_cmd->add_option("--tp", pf.tp, "tensor-parallel degree (zoo transformers: heads, MLP width and vocabulary split over tp ranks)");
    plan_cmd->add_flag("--sequence-parallel", pf.sequence_parallel, "with --tp: LayerNorms and residuals split along the sequence");
    plan_cmd->add_option("--stage-tp", pf.stage_tp, "tensor-parallel degree of each stage, comma-separated (e.g. 1,2,1; --tp is ignored)")
        ->delimiter(',');
    plan_cmd->add_option("--stage-replicas", pf.stage_replicas,
                         "replicas of each stage, comma-separated (PipeDream's per-stage replication; micro-batches go round-robin, --dp is ignored)")
        ->delimiter(',');
    plan_cmd->add_option("--out", pf.out, "plan file to write (default: stdout)");

    std::string ref;
    std::vector<std::string> dumps;
    double tol = 1e-5;
    auto* cmp_cmd = app.add_subcommand("compare-params", "Compare parameter dumps with a reference dump");
    cmp_cmd->add_option("--reference", ref, "reference dump")->required();
    cmp_cmd->add_option("--tol", tol, "largest absolute difference allowed");
    std::vector<std::string> loose;
    cmp_cmd->add_option("--loose", loose, "NAME=TOL: parameters whose name contains NAME within TOL instead");
    cmp_cmd->add_option("dumps", dumps, "dumps of the ranks")->required();

    auto* models_cmd = app.add_subcommand("models", "List the models the engine trains: the zoo's (at any size override) and their presets");

    if (const std::optional<int> ended = he::parseCommandLine(app, argc, argv)) return *ended;

    if (*launch_cmd) {
        he::forceBlasKernels();
        launch.self_exe = torchHalf(self);
        if (access(launch.self_exe.c_str(), X_OK) != 0)
            return errorEvent("launch starts its ranks with the LibTorch half of the engine, " + launch.self_exe + ", which cannot be run (" +
                              std::strerror(errno) + "): reinstall the hippie-engine package or rebuild with LibTorch");
        launch.run_args = {"--steps", std::to_string(launch_steps), "--seed", std::to_string(launch_seed)};
        std::istringstream extra(launch_extra);
        for (std::string a; extra >> a;) launch.run_args.push_back(a);
        return he::launchLocal(launch);
    }
    if (*plan_cmd) return makePlan(pf);
    if (*cmp_cmd) return he::compareParams(ref, dumps, tol, loose);
    if (*models_cmd) {
        for (const hippie::ZooEntry& e : hippie::zooModels()) {
            hippie::ModelSpec s;
            s.zoo = e.name;
            const hippie::Graph g = hippie::buildZooModel(s);
            std::cout << json{{"name", e.name}, {"family", e.family}, {"layers", g.layerCount()}, {"params", g.paramCount()},
                              {"description", e.description}}
                             .dump()
                      << "\n";
        }
        for (const hippie::ModelPreset& preset : hippie::modelPresets()) {
            hippie::ModelSpec s;
            s.zoo = preset.name;
            const hippie::Graph g = hippie::buildZooModel(s);
            std::cout << json{{"name", preset.name}, {"family", hippie::findZooModel(preset.zoo)->family}, {"layers", g.layerCount()},
                              {"params", g.paramCount()}, {"preset_of", preset.zoo}, {"overrides", hippie::overrideText(g.source)},
                              {"description", preset.description}}
                             .dump()
                      << "\n";
        }
        return 0;
    }
    return 0;
}
