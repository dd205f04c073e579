// hippie-engine-torch: the half of hippie-engine that loads LibTorch. `hippie-engine` (main.cpp)
// starts it for the commands that compute: one training rank (`run`) and the measuring
// commands (probe, profile, inspect, export-script, make-data). Loading Debian's LibTorch and
// the 288 libraries it needs takes a second of every process that does, so planning, launching
// and comparing stay in the front; users and launchers call `hippie-engine`, never this binary.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/src/cli_events.h"
#include "engine/src/inspect/tools.h"
#include "engine/src/launch/rendezvous_env.h"
#include "engine/src/runtime/blas_core.h"
#include "engine/src/runtime/run.h"
#include "planners/common/allocator.h"
#include "planners/common/error.h"

namespace he = hippie::engine;
using nlohmann::json;

namespace {

CLI::App* addTorchCommand(CLI::App& app, const char* name) { return app.add_subcommand(name, he::findTorchCommand(name)->help); }

}  // namespace

int main(int argc, char** argv) {
    // Before any thread allocates: a thread takes its malloc arena at its first allocation.
    hippie::shareOneMallocArena();
    // The front sets OPENBLAS_CORETYPE before it starts this binary; started on its own, set it
    // here and start again (OpenBLAS reads it only when it loads).
    const he::TorchCommand* command = argc > 1 ? he::findTorchCommand(argv[1]) : nullptr;
    if (command && command->computes && he::forceBlasKernels())
        execv("/proc/self/exe", argv);  // on failure, go on with the kernels OpenBLAS chose
    CLI::App app{"hippie-engine (LibTorch half): a HIPPIE training rank, and device/model measurement"};
    app.name("hippie-engine");
    app.require_subcommand(1);
    app.set_version_flag("--version", HIPPIE_VERSION);

    he::RunOptions run;
    // HIPPIE_ENGINE_DEVICE sets the default of --device, so scripts can pin every rank they start.
    if (const char* d = std::getenv("HIPPIE_ENGINE_DEVICE"); d && *d) run.device = d;
    auto* run_cmd = addTorchCommand(app, "run");
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
    run_cmd->add_option("--loss-scale", run.training.loss_scale,
                        "dynamic loss scaling from this scale on any precision (fp16 plans: on, from 65536)");
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

    he::ProbeOptions probe;
    auto* probe_cmd = addTorchCommand(app, "probe");
    probe_cmd->add_option("--seconds", probe.seconds, "time spent on the FLOP/s measurement");
    bool no_loopback = false;
    probe_cmd->add_flag("--no-loopback", no_loopback, "skip the loopback and all-reduce measurements");
    probe_cmd->add_option("--transport-peer", probe.transport_peer_port, "internal: the Gloo measurement's second rank")->group("");

    he::ProfileOptions prof;
    auto* prof_cmd = addTorchCommand(app, "profile");
    prof_cmd->add_option("--model", prof.model, "zoo model or preset (hippie-engine models)")->required();
    prof_cmd->add_option("--override", prof.overrides, "zoo models: size overrides KEY=VALUE,... (hippie-plan models --json lists the keys)");
    prof_cmd->add_option("--batch-size", prof.batch_size, "samples the graph is for");
    prof_cmd->add_option("--seq-len", prof.seq_len, "sequence length (0: the model's)");
    prof_cmd->add_option("--repeats", prof.repeats, "timed repetitions (median)");
    prof_cmd->add_option("--out", prof.out_file, "graph JSON file (default: stdout)");
    prof_cmd->add_option("--device", prof.device, "cpu, cuda or auto");

    std::string insp_file, insp_out, insp_dtype = "float";
    std::vector<long long> insp_shape;
    int insp_repeats = 5;
    auto* insp_cmd = addTorchCommand(app, "inspect");
    insp_cmd->add_option("file", insp_file, "TorchScript module (.pt)")->required();
    insp_cmd->add_option("--input-shape", insp_shape, "example input shape, e.g. 8,32")->delimiter(',')->required();
    insp_cmd->add_option("--input-dtype", insp_dtype, "float or long");
    insp_cmd->add_option("--repeats", insp_repeats, "timed repetitions (median)");
    insp_cmd->add_option("--out", insp_out, "graph JSON file (default: stdout)");

    std::string exp_model, exp_overrides, exp_out;
    unsigned long long exp_seed = 0;
    auto* exp_cmd = addTorchCommand(app, "export-script");
    exp_cmd->add_option("--model", exp_model, "an MLP: mlp, or its preset mlp-tiny")->required();
    exp_cmd->add_option("--override", exp_overrides, "size overrides KEY=VALUE,... (hippie-plan models --json lists the keys)");
    exp_cmd->add_option("--out", exp_out, ".pt file")->required();
    exp_cmd->add_option("--seed", exp_seed, "parameter seed");

    std::string md_model = "mlp-tiny", md_overrides, md_out;
    int md_samples = 64, md_seq = 0;
    unsigned long long md_seed = 0;
    auto* md_cmd = addTorchCommand(app, "make-data");
    md_cmd->add_option("--model", md_model, "zoo model or preset (hippie-engine models)");
    md_cmd->add_option("--override", md_overrides, "size overrides KEY=VALUE,... (hippie-plan models --json lists the keys)");
    md_cmd->add_option("--samples", md_samples, "number of samples");
    md_cmd->add_option("--seq-len", md_seq, "sequence length (0: the model's)");
    md_cmd->add_option("--seed", md_seed, "seed");
    md_cmd->add_option("--out", md_out, "file to write")->required();

    if (const std::optional<int> ended = he::parseCommandLine(app, argc, argv)) return *ended;

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
            return he::errorEvent(e.what());
        }
        return he::runRank(run);
    }
    if (*probe_cmd) {
        probe.loopback_bandwidth = !no_loopback;
        return he::probeCommand(probe);
    }
    if (*prof_cmd) return he::profileCommand(prof);
    if (*insp_cmd) return he::inspectCommand(insp_file, insp_shape, insp_dtype, insp_repeats, insp_out);
    if (*exp_cmd) return he::exportScriptCommand(exp_model, exp_overrides, exp_out, exp_seed);
    if (*md_cmd) return he::makeDataCommand(md_model, md_overrides, md_samples, md_seq, md_seed, md_out);
    return 0;
}
