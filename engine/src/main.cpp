// hippie-engine: one training rank on LibTorch, and the commands that measure models and
// devices for the planners. Every command prints JSON lines; bad input is an error event
// and exit code 2.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/src/inspect/tools.h"
#include "engine/src/launch/launcher.h"
#include "engine/src/launch/rendezvous_env.h"
#include "engine/src/models/tiny_graphs.h"
#include "engine/src/runtime/cpu_threads.h"
#include "engine/src/runtime/run.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/overrides.h"
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

int errorEvent(const std::string& message) {
    std::cout << json{{"event", "error"}, {"message", message}, {"exit_code", 2}}.dump() << std::endl;
    return 2;
}

struct PlanFlags {
    std::string model = "gpt-tiny";
    std::string overrides;  // zoo models: "layers=2,d_model=64"
    std::string graph;  // graph JSON (profile, inspect) instead of a tiny model
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
    const bool zoo = f.graph.empty() && hippie::findZooModel(f.model);
    const he::TinyConfig* cfg = f.graph.empty() && !zoo ? he::findTinyModel(f.model) : nullptr;
    if (!zoo && !cfg && f.graph.empty())
        return errorEvent("unknown model '" + f.model + "'; the engine trains the zoo's models (hippie-plan models) and " + he::tinyModelNames());
    if (!zoo && !f.overrides.empty()) return errorEvent("--override applies to the zoo's models, not '" + f.model + "'");
    try {
        hippie::Plan p;
        hippie::Graph from_file;
        if (zoo || cfg) {
            p.model.zoo = f.model;
            p.model.seq_len = f.seq_len;
            hippie::applyOverrideText(p.model, f.overrides);
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
        const hippie::Graph g = zoo ? hippie::buildZooModel(p.model) : cfg ? he::buildTinyGraph(*cfg, p.model) : from_file;
        const int layers = g.layerCount();
        const int chunks = f.pp * f.virtual_stages;  // interleaved: chunk c of device i is stage c * pp + i
        if (f.pp < 1 || f.virtual_stages < 1 || chunks > layers)
            return errorEvent("--pp x --virtual-stages must be between 1 and the model's " + std::to_string(layers) + " layers");
        p.stages = stageRanges(layers, chunks, f.stage_starts);
        if (f.tp < 1) return errorEvent("--tp must be at least 1");
        if (!f.stage_replicas.empty()) {
            // Per-stage replication: dp is the widest stage's replicas.
            if (static_cast<int>(f.stage_replicas.size()) != f.pp)
                return errorEvent("--stage-replicas gives " + std::to_string(f.stage_replicas.size()) + " counts for --pp " + std::to_string(f.pp));
            if (*std::min_element(f.stage_replicas.begin(), f.stage_replicas.end()) < 1) return errorEvent("--stage-replicas must be at least 1 each");
            p.stage_replicas = f.stage_replicas;
            p.dp = *std::max_element(f.stage_replicas.begin(), f.stage_replicas.end());
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

}  // namespace

int main(int argc, char** argv) {
    // Once, before anything runs: the matmul kernels this CPU can run (cpu_threads.h), for the
    // commands that compute (starting again costs a second load of LibTorch, 0.45 s here). Ranks
    // a launcher starts inherit the variable and do not start again.
    const std::set<std::string> computing{"run", "launch", "probe", "profile"};
    const bool computes = argc > 1 && computing.count(argv[1]);
    if (const std::string core = computes ? he::blasCoreToForce() : ""; !core.empty() && !std::getenv("OPENBLAS_CORETYPE")) {
        setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
        execv("/proc/self/exe", argv);  // on failure, go on with the kernels OpenBLAS chose
    }
    CLI::App app{"hippie-engine: a HIPPIE training rank on LibTorch, and device/model measurement"};
    app.require_subcommand(1);
    app.set_version_flag("--version", HIPPIE_VERSION);
    const std::string self = selfExe(argv[0]);

    he::RunOptions run;
    // HIPPIE_ENGINE_DEVICE sets the default of --device, so scripts can pin every rank they start.
    if (const char* d = std::getenv("HIPPIE_ENGINE_DEVICE"); d && *d) run.device = d;
    auto* run_cmd = app.add_subcommand("run", "Run one rank of a plan (JSON lines on stdout)");
    run_cmd->add_option("--plan", run.plan_file, "plan file (hippie-plan JSON)")->required();
    // Without these flags the rank reads its launcher's variables (launch/rendezvous_env.h).
    he::RendezvousFlags rdv;
    run_cmd->add_option("--rank", rdv.rank, "this rank (= global device id); default $RANK, $SLURM_PROCID or $OMPI_COMM_WORLD_RANK");
    run_cmd->add_option("--world-size", rdv.world_size, "number of ranks; default $WORLD_SIZE, $SLURM_NTASKS or $OMPI_COMM_WORLD_SIZE");
    run_cmd->add_option("--master-addr", rdv.master_addr, "rendezvous host (rank 0 listens there); default $MASTER_ADDR, "
                                                          "Slurm's first host, or 127.0.0.1 for one rank");
    run_cmd->add_option("--master-port", rdv.master_port, "rendezvous TCP port; default $MASTER_PORT (Slurm: from the job id)");
    run_cmd->add_option("--steps", run.steps, "training steps");
    run_cmd->add_option("--seed", run.seed, "seed of parameters and synthetic data");
    run_cmd->add_option("--lr", run.training.lr, "learning rate (default: sgd 0.05, adam/adamw 1e-3)");
    run_cmd->add_option("--weight-decay", run.training.weight_decay, "weight decay (L2 for sgd/adam, decoupled for adamw)");
    run_cmd->add_option("--warmup-steps", run.training.warmup_steps, "linear learning-rate warm-up steps");
    run_cmd->add_option("--lr-schedule", run.training.lr_schedule, "constant or cosine (after the warm-up)");
    run_cmd->add_option("--decay-steps", run.training.decay_steps, "cosine: steps to decay over (default: the rest of the run)");
    run_cmd->add_option("--min-lr", run.training.min_lr, "cosine: the final learning rate");
    run_cmd->add_option("--clip-grad-norm", run.training.clip_grad_norm, "clip gradients to this global norm (0: off)");
    run_cmd->add_option("--threads", run.threads, "CPU threads of this rank (default: the host's cores / its ranks)");
    run_cmd->add_option("--checkpoint-dir", run.checkpoint_dir, "directory of this run's checkpoints");
    run_cmd->add_option("--checkpoint-every", run.checkpoint_every, "write a checkpoint every N steps (and after the last)");
    run_cmd->add_flag("--resume", run.resume, "continue from the newest checkpoint every rank has in --checkpoint-dir");
    run_cmd->add_option("--token-dtype", run.token_dtype, "token-id files (*.bin): uint16 (nanoGPT) or uint32");
    run_cmd->add_flag("--log-samples", run.log_samples, "step events list the sample indices of this rank's replica");
    run_cmd->add_option("--connect-timeout", run.connect_timeout_s, "seconds to reach the master and the peers");
    run_cmd->add_option("--op-timeout", run.op_timeout_s, "seconds one transfer or all-reduce may take");
    run_cmd->add_option("--dump-params", run.dump_params, "write this rank's final parameters (JSON)");
    run_cmd->add_flag("--trace-every-step", run.trace_every_step, "print a trace for every step");
    run_cmd->add_option("--device", run.device, "auto, cpu or cuda (cuda:<local rank>); default $HIPPIE_ENGINE_DEVICE or auto");
    run_cmd->add_option("--local-rank", rdv.local_rank, "GPU index on this host; default $LOCAL_RANK, $SLURM_LOCALID, "
                                                        "$OMPI_COMM_WORLD_LOCAL_RANK, else the rank");
    run_cmd->add_option("--comm", run.comm, "auto, gloo or nccl");
    run_cmd->add_option("--data", run.data_file,
                        "tensor data file: pickled (inputs, targets); or *.bin: token ids (GPT, BERT); see docs/formats.md");
    run_cmd->add_option("--input-shape", run.input_shape, "TorchScript models: one input sample's shape, e.g. 32")->delimiter(',');
    run_cmd->add_option("--input-dtype", run.input_dtype, "TorchScript models: float or long");

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
    auto* plan_cmd = app.add_subcommand("plan", "Write an even-stage pipeline plan for a zoo or tiny model");
    plan_cmd->add_option("--model", pf.model, "zoo model (hippie-plan models) or tiny model");
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

    he::ProbeOptions probe;
    auto* probe_cmd = app.add_subcommand("probe", "Measure this host: devices, FLOP/s, loopback bandwidth (Cluster JSON)");
    probe_cmd->add_option("--seconds", probe.seconds, "time spent on the FLOP/s measurement");
    bool no_loopback = false;
    probe_cmd->add_flag("--no-loopback", no_loopback, "skip the loopback bandwidth measurement");

    std::string prof_model, prof_out;
    int prof_batch = 8, prof_seq = 0, prof_repeats = 5;
    auto* prof_cmd = app.add_subcommand("profile", "Measure a tiny model's per-layer times and memory; write graph JSON");
    prof_cmd->add_option("--model", prof_model, "tiny model")->required();
    prof_cmd->add_option("--batch-size", prof_batch, "samples the graph is for");
    prof_cmd->add_option("--seq-len", prof_seq, "sequence length (0: the model's)");
    prof_cmd->add_option("--repeats", prof_repeats, "timed repetitions (median)");
    prof_cmd->add_option("--out", prof_out, "graph JSON file (default: stdout)");
    std::string prof_device = "cpu";
    prof_cmd->add_option("--device", prof_device, "cpu, cuda or auto");

    std::string insp_file, insp_out, insp_dtype = "float";
    std::vector<long long> insp_shape;
    int insp_repeats = 5;
    auto* insp_cmd = app.add_subcommand("inspect", "TorchScript file -> graph JSON with measured per-layer times");
    insp_cmd->add_option("file", insp_file, "TorchScript module (.pt)")->required();
    insp_cmd->add_option("--input-shape", insp_shape, "example input shape, e.g. 8,32")->delimiter(',')->required();
    insp_cmd->add_option("--input-dtype", insp_dtype, "float or long");
    insp_cmd->add_option("--repeats", insp_repeats, "timed repetitions (median)");
    insp_cmd->add_option("--out", insp_out, "graph JSON file (default: stdout)");

    std::string exp_model, exp_out;
    unsigned long long exp_seed = 0;
    auto* exp_cmd = app.add_subcommand("export-script", "Write a tiny model as a TorchScript module (children = layers)");
    exp_cmd->add_option("--model", exp_model, "tiny model (mlp-tiny)")->required();
    exp_cmd->add_option("--out", exp_out, ".pt file")->required();
    exp_cmd->add_option("--seed", exp_seed, "parameter seed");

    std::string md_model = "mlp-tiny", md_out;
    int md_samples = 64, md_seq = 0;
    unsigned long long md_seed = 0;
    auto* md_cmd = app.add_subcommand("make-data", "Write a tiny model's synthetic samples as a tensor data file (for run --data)");
    md_cmd->add_option("--model", md_model, "tiny model");
    md_cmd->add_option("--samples", md_samples, "number of samples");
    md_cmd->add_option("--seq-len", md_seq, "sequence length (0: the model's)");
    md_cmd->add_option("--seed", md_seed, "seed");
    md_cmd->add_option("--out", md_out, "file to write")->required();

    auto* models_cmd = app.add_subcommand("models", "List the models the engine trains: the zoo's (at any size override) and the tiny test models");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << e.what() << "\n";
        return errorEvent(std::string("bad command line: ") + e.what());
    }

    if (*run_cmd) {
        try {
            const he::Rendezvous r = he::resolveRendezvous(rdv, he::processEnvironment());
            run.rank = r.rank;
            run.world_size = r.world_size;
            run.local_rank = r.local_rank;
            run.master_addr = r.master_addr;
            run.master_port = r.master_port;
            if (r.launcher != "flags")
                std::cout << json{{"event", "rendezvous"}, {"rank", r.rank}, {"world_size", r.world_size}, {"local_rank", r.local_rank},
                                  {"master_addr", r.master_addr}, {"master_port", r.master_port}, {"launcher", r.launcher}}
                                 .dump()
                          << std::endl;
        } catch (const hippie::Error& e) {
            return errorEvent(e.what());
        }
        return he::runRank(run);
    }
    if (*launch_cmd) {
        launch.self_exe = self;
        launch.run_args = {"--steps", std::to_string(launch_steps), "--seed", std::to_string(launch_seed)};
        std::istringstream extra(launch_extra);
        for (std::string a; extra >> a;) launch.run_args.push_back(a);
        return he::launchLocal(launch);
    }
    if (*plan_cmd) return makePlan(pf);
    if (*cmp_cmd) return he::compareParams(ref, dumps, tol, loose);
    if (*probe_cmd) {
        probe.loopback_bandwidth = !no_loopback;
        return he::probeCommand(probe);
    }
    if (*prof_cmd) return he::profileCommand(prof_model, prof_batch, prof_seq, prof_repeats, prof_out, prof_device);
    if (*insp_cmd) return he::inspectCommand(insp_file, insp_shape, insp_dtype, insp_repeats, insp_out);
    if (*exp_cmd) return he::exportScriptCommand(exp_model, exp_out, exp_seed);
    if (*md_cmd) return he::makeDataCommand(md_model, md_samples, md_seq, md_seed, md_out);
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
        for (const he::TinyConfig& c : he::tinyModels()) {
            hippie::ModelSpec s;
            s.zoo = c.name;
            s.batch_size = 1;
            const hippie::Graph g = he::buildTinyGraph(c, s);
            std::cout << json{{"name", c.name}, {"family", c.family}, {"layers", g.layerCount()}, {"params", g.paramCount()},
                              {"description", c.description}}
                             .dump()
                      << "\n";
        }
        return 0;
    }
    return 0;
}
