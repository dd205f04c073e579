#include "engine/src/runtime/run.h"

#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/src/comm/comm.h"
#include "engine/src/device/device.h"
#include "engine/src/inspect/tools.h"
#include "engine/src/models/model_source.h"
#include "engine/src/models/trainable.h"
#include "engine/src/runtime/checkpoint.h"
#include "engine/src/runtime/cpu_threads.h"
#include "engine/src/runtime/data.h"
#include "engine/src/runtime/executor.h"
#include "engine/src/runtime/test_hooks.h"
#include "planners/schedule/engine_support.h"
#include "planners/common/error.h"
#include "planners/common/warmup.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/trace_json.h"

namespace hippie::engine {

using nlohmann::json;

namespace {

void emit(const json& j) {
    std::cout << j.dump() << "\n";
    std::cout.flush();
}

int64_t peakRssBytes() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

bool isComputeEvent(const TraceEvent& e) { return isCompute(e.kind); }

// Metrics of one rank's measured step, defined as the simulator defines them.
void fillMetrics(Trace& t, double step_s, int global_batch) {
    TraceMetrics& m = t.metrics;
    m.iteration_time_s = step_s;
    m.throughput_samples_per_s = step_s > 0 ? global_batch / step_s : 0;
    int64_t peak = 0;
    for (const MemorySample& s : t.memory[0]) peak = std::max(peak, s.bytes);
    m.peak_memory_bytes = {peak};
    m.max_peak_memory_bytes = peak;
    double busy = 0, last_backward_end = 0;
    for (const TraceEvent& e : t.events) {
        if (!isComputeEvent(e)) continue;
        busy += e.end_s - e.start_s;
        if (e.kind == InstrKind::Backward || e.kind == InstrKind::BackwardWeight || e.kind == InstrKind::BackwardInput)
            last_backward_end = std::max(last_backward_end, e.end_s);
    }
    m.bubble_fraction = last_backward_end > 0 ? std::max(0.0, 1.0 - busy / last_backward_end) : 0;
    double ar = 0, hidden = 0;
    for (const TraceEvent& a : t.events) {
        if (!isCollective(a.kind) || a.end_s <= a.start_s) continue;
        ar += a.end_s - a.start_s;
        for (const TraceEvent& c : t.events)
            if (isComputeEvent(c)) hidden += std::max(0.0, std::min(a.end_s, c.end_s) - std::max(a.start_s, c.start_s));
    }
    m.allreduce_hidden_fraction = ar > 0 ? std::min(1.0, hidden / ar) : 1.0;
    m.memory_efficiency = memoryEfficiency(m.throughput_samples_per_s, peak);
    m.fits_memory = true;
}

[[noreturn]] void fail(int code, const std::string& message, int rank) {
    emit({{"event", "error"}, {"rank", rank}, {"message", message}, {"exit_code", code}});
    std::cerr.flush();
    // Gloo threads may be blocked on a dead peer: leave without running their destructors.
    std::_Exit(code);
}

// All-reduces launched before this rank's last backward ended: the overlap the hippie schedule
// is for. (count, total)
std::pair<int, int> overlappedAllReduces(const Trace& t) {
    double last_backward_end = 0;
    for (const TraceEvent& e : t.events)
        if ((e.kind == InstrKind::Backward || e.kind == InstrKind::BackwardWeight) && e.end_s > e.start_s)
            last_backward_end = std::max(last_backward_end, e.end_s);
    int overlapped = 0, total = 0;
    for (const TraceEvent& e : t.events) {
        if (e.kind != InstrKind::AllReduce) continue;
        ++total;
        if (e.start_s < last_backward_end) ++overlapped;
    }
    return {overlapped, total};
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Ranks of this run on this host (by host name, through the rendezvous store), so that
// they share its cores instead of each taking all of them.
int ranksOnThisHost(Comm& comm) {
    char name[HOST_NAME_MAX + 1] = {};
    gethostname(name, sizeof(name) - 1);
    comm.storeSet("host/" + std::to_string(comm.rank()), name);
    int same = 0;
    for (int r = 0; r < comm.worldSize(); ++r) same += comm.storeGet("host/" + std::to_string(r)) == name ? 1 : 0;
    return same;
}

// The newest checkpoint step every rank has, agreed through the store; -1 when there is none.
int agreeResumeStep(Comm& comm, const std::string& dir) {
    std::string mine;
    for (int s : checkpointSteps(dir, comm.rank())) mine += std::to_string(s) + ",";
    comm.storeSet("ckpt/" + std::to_string(comm.rank()), mine.empty() ? "-" : mine);
    std::map<int, int> holders;
    for (int r = 0; r < comm.worldSize(); ++r) {
        const std::string list = comm.storeGet("ckpt/" + std::to_string(r));
        size_t pos = 0;
        while (list != "-" && pos < list.size()) {
            const size_t comma = list.find(',', pos);
            ++holders[std::stoi(list.substr(pos, comma - pos))];
            pos = comma + 1;
        }
    }
    int best = -1;
    for (const auto& [step, n] : holders)
        if (n == comm.worldSize()) best = std::max(best, step);
    return best;
}

// Test hook: HIPPIE_ENGINE_TEST_KILL="RANK:STEP" kills that rank (SIGKILL, no clean-up) as it
// starts that step, the way a crashed host would.
void maybeKillForTest(int rank, int step) {
    if (testHookAt("HIPPIE_ENGINE_TEST_KILL", rank, step)) std::raise(SIGKILL);
}

}  // namespace

int runRank(const RunOptions& o) {
    Plan plan;
    Graph graph;
    Program program;
    std::unique_ptr<Trainable> model;
    std::optional<TensorFile> file;
    std::unique_ptr<DataSource> data;
    torch::Device device(torch::kCPU);
    bool nccl = false;
    try {
        if (o.world_size < 1) throw Error("--world-size must be at least 1");
        if (o.rank < 0 || o.rank >= o.world_size)
            throw Error("--rank " + std::to_string(o.rank) + " is outside 0.." + std::to_string(o.world_size - 1));
        if (o.steps < 1) throw Error("--steps must be at least 1");
        device = resolveDevice(o.device, o.local_rank >= 0 ? o.local_rank : o.rank);
        if (o.comm == "nccl" && !device.is_cuda()) throw Error("--comm nccl needs a CUDA device (--device cuda)");
        if (o.comm == "nccl" && !builtWithNccl()) throw Error("--comm nccl: this hippie-engine was built without NCCL; use --comm gloo");
        if (o.comm != "auto" && o.comm != "gloo" && o.comm != "nccl") throw Error("--comm must be auto, gloo or nccl, not '" + o.comm + "'");
        nccl = o.comm == "nccl" || (o.comm == "auto" && device.is_cuda() && builtWithNccl());
        if (o.input_dtype != "float" && o.input_dtype != "long") throw Error("--input-dtype must be float or long");
        checkTrainingOptions(o.training);
        if (o.checkpoint_every < 0) throw Error("--checkpoint-every must not be negative");
        if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) throw Error("--checkpoint-every needs --checkpoint-dir DIR");
        if (o.resume && o.checkpoint_dir.empty()) throw Error("--resume needs --checkpoint-dir DIR (where the run wrote its checkpoints)");
        const bool token_file = endsWith(o.data_file, ".bin");
        plan = loadPlanFile(o.plan_file);
        if (const std::string why = untrainedParallelism(plan); !why.empty()) throw Error(o.plan_file + ": " + why);
        ResolvedModel rm = resolveTrainableModel(plan.model, o.plan_file);
        if (!o.data_file.empty() && !token_file) file = loadTensorFile(o.data_file);
        if (rm.zoo) {
            model = makeZooTrainable(*rm.zoo);
        } else {
            // A TorchScript model: one sample's shape from the data file, else --input-shape.
            std::vector<int64_t> sample = o.input_shape;
            torch::ScalarType dtype = o.input_dtype == "long" ? torch::kLong : torch::kFloat;
            if (file) {
                sample = file->inputs.sizes().slice(1).vec();
                dtype = file->inputs.scalar_type();
            }
            if (sample.empty() && !file)
                throw Error(o.plan_file + ": training the TorchScript model '" + rm.script_file +
                            "' needs --data FILE or --input-shape (one sample's shape, e.g. 32)");
            model = makeScriptTrainable(rm.script_file, sample, dtype);
            if (rm.graph.ops.empty()) {
                std::vector<int64_t> shape{plan.global_batch};
                shape.insert(shape.end(), sample.begin(), sample.end());
                rm.graph = scriptGraph(rm.script_file, shape, dtype == torch::kLong ? "long" : "float", 0);
            }
            if (rm.graph.layerCount() != model->layerCount())
                throw Error(o.plan_file + ": the graph has " + std::to_string(rm.graph.layerCount()) + " layers but '" + rm.script_file +
                            "' has " + std::to_string(model->layerCount()) + " top-level children");
        }
        std::set<int> degrees{plan.tp};
        for (int s = 0; s < plan.pipelineDepth(); ++s) degrees.insert(plan.tpOf(s));
        for (int t : degrees)
            if (const std::string why = model->tensorParallelProblem(t, plan.sequence_parallel); !why.empty())
                throw Error(o.plan_file + ": " + why);
        graph = rm.graph;
        if (token_file) data = std::make_unique<DataSource>(*model, o.seed, std::make_unique<TokenFile>(o.data_file, o.token_dtype, model->vocabSize()), plan.global_batch);
        else data = std::make_unique<DataSource>(*model, o.seed, file, plan.global_batch);
        data->checkFitsModel(std::min(plan.global_batch, 2));
        if (plan.isPlacement()) throw Error(o.plan_file + ": the engine runs pipeline plans (stages), not op placements");
        try {
            checkPlan(plan, graph, plan.deviceCount());
        } catch (const Error& e) {
            throw Error(o.plan_file + ": " + e.what());
        }
        if (plan.deviceCount() != o.world_size)
            throw Error(o.plan_file + ": the plan needs " + std::to_string(plan.deviceCount()) + " ranks (pp " +
                        std::to_string(plan.pipelineDepth()) + " x dp " + (plan.perStageReplication() ? "per stage" : std::to_string(plan.dp)) +
                        (plan.tp > 1 ? " x tp " + plan.tpText() : std::string()) + ") but --world-size is " +
                        std::to_string(o.world_size));
        program = lower(plan, graph);
        useDevice(device);
    } catch (const Error& e) {
        fail(2, e.what(), o.rank);
    } catch (const std::exception& e) {
        std::string what = e.what();
        if (const size_t nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
        fail(2, what, o.rank);
    }

    Rendezvous r;
    r.master_addr = o.master_addr;
    r.master_port = o.master_port;
    r.rank = o.rank;
    r.world_size = o.world_size;
    r.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.connect_timeout_s * 1000));
    r.op_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.op_timeout_s * 1000));
    r.device = device;
    r.nccl = nccl;
    std::unique_ptr<Comm> comm;
    try {
        comm = std::make_unique<Comm>(r);
    } catch (const std::exception& e) {
        fail(2, e.what(), o.rank);
    }

    int step = -1;
    try {
        const CpuSetup cpu = configureCpu(threadsPerRank(o.threads, ranksOnThisHost(*comm)));
        Executor ex(plan, graph, program, *model, *data, *comm, o.seed, o.training, o.steps, device);
        int first_step = 0;
        json resumed = nullptr;
        if (o.resume) {
            const int at = agreeResumeStep(*comm, o.checkpoint_dir);
            if (at < 0) throw Error("--resume: no checkpoint that every rank has in '" + o.checkpoint_dir + "'");
            const CheckpointInfo info = readCheckpoint(o.checkpoint_dir, o.rank, at, ex);
            first_step = info.step + 1;
            resumed = {{"step", info.step}, {"samples_seen", info.samples_seen}};
        }
        emit({{"event", "setup"}, {"rank", o.rank}, {"world_size", o.world_size}, {"model", model->name()},
              {"schedule", toString(plan.schedule)}, {"segments", ex.hostedSegments()}, {"program", ex.streamString()},
              {"device", describeDevice(device)}, {"comm", comm->backend()}, {"data", data->describe()},
              {"link_order_ok", ex.linkOrderProblem().empty()}, {"threads", cpu.threads}, {"blas", cpu.blas},
              {"precision", toString(plan.model.precision)}, {"optimizer", toString(plan.optimizer)}, {"resumed_from", resumed}});
        const int warmup = warmupStepsLeftOut(o.steps - first_step);  // steps the mean leaves out
        double timed = 0;
        int timed_steps = 0;
        std::optional<double> last_loss;
        std::pair<int, int> overlap{0, 0};
        for (step = first_step; step < o.steps; ++step) {
            const bool last = step + 1 == o.steps;
            maybeKillForTest(o.rank, step);
            if (last) comm->barrier();  // the traced step starts together on every rank
            StepResult res = ex.step(step);
            if (step - first_step >= warmup) {
                timed += res.time_s;
                ++timed_steps;
            }
            last_loss = res.loss;
            json ev = {{"event", "step"}, {"rank", o.rank}, {"step", step}, {"time_s", res.time_s},
                       {"samples_per_s", plan.global_batch / res.time_s}};
            ev["loss"] = res.loss ? json(*res.loss) : json(nullptr);
            ev["lr"] = res.lr;
            if (res.grad_norm) ev["grad_norm"] = *res.grad_norm;
            if (plan.model.precision == Precision::FP16 || o.training.loss_scale > 0) {
                ev["loss_scale"] = res.loss_scale;
                ev["skipped"] = res.skipped;
            }
            if (o.log_samples) {
                const std::vector<int64_t> all = data->sampleIndices(step);
                std::vector<int64_t> mine;
                for (const int64_t row : ex.batchRows())
                    if (row < static_cast<int64_t>(all.size())) mine.push_back(all[static_cast<size_t>(row)]);
                ev["samples"] = mine;
            }
            emit(ev);
            if (o.checkpoint_every > 0 && ((step + 1) % o.checkpoint_every == 0 || last)) {
                ex.gatherParameters();  // ZeRO-3: the checkpoint holds whole parameters
                writeCheckpoint(o.checkpoint_dir, o.rank, step, plan.global_batch, ex);
                pruneCheckpoints(o.checkpoint_dir, o.rank, 2);
                emit({{"event", "checkpoint"}, {"rank", o.rank}, {"step", step}, {"path", checkpointPath(o.checkpoint_dir, o.rank, step)}});
            }
            if (last || o.trace_every_step) {
                fillMetrics(res.trace, res.time_s, plan.global_batch);
                overlap = overlappedAllReduces(res.trace);
                emit({{"event", "trace"}, {"rank", o.rank}, {"step", step}, {"trace", traceToJson(res.trace)}});
            }
        }
        step = -1;
        ex.gatherParameters();  // ZeRO-3: whole parameters for the dump and the final state
        comm->barrier();
        json stashed = json::object();
        for (const auto& [s, n] : ex.maxStashed()) stashed[std::to_string(s)] = n;
        const double mean = timed / std::max(1, timed_steps);
        json done = {{"event", "done"},
                     {"rank", o.rank},
                     {"steps", o.steps},
                     {"mean_step_s", mean},
                     {"warmup_steps", warmup},
                     {"samples_per_s", plan.global_batch / mean},
                     {"peak_rss_bytes", peakRssBytes()},
                     {"peak_tracked_bytes", ex.peakTrackedBytes()},
                     {"peak_device_bytes", ex.peakDeviceBytes()},
                     {"max_stashed_microbatches", stashed},
                     {"allreduces", overlap.second},
                     {"allreduces_launched_before_backward_end", overlap.first},
                     {"zero_gathers", ex.zeroGathersRun()},
                     {"zero_gathers_prefetched", ex.zeroGathersPrefetched()}};
        done["loss"] = last_loss ? json(*last_loss) : json(nullptr);
        std::set<std::string> dtypes;  // mixed precision keeps fp32 master weights: "Float"
        for (const auto& [name, t] : ex.namedParameters()) dtypes.insert(c10::toString(t.scalar_type()));
        done["param_dtypes"] = dtypes;
        if (!o.dump_params.empty()) {
            // Tensor parallelism: the whole parameters, gathered from the tp group (every rank of
            // it writes them), so that a dump compares with a one-process run's name by name.
            json params = json::object();
            for (const auto& [name, t] : ex.wholeNamedParameters()) {
                const torch::Tensor c = t.detach().to(torch::kCPU, torch::kDouble).contiguous().reshape({-1});
                params[name] = std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
            }
            std::string path = o.dump_params;  // "{rank}" names one file per rank under launch
            if (const size_t at = path.find("{rank}"); at != std::string::npos) path.replace(at, 6, std::to_string(o.rank));
            std::ofstream f(path);
            if (!f) throw Error("cannot write --dump-params file '" + path + "'");
            // Threads are recorded because they change rounding: compare-params names a mismatch.
            f << json{{"rank", o.rank}, {"threads", cpu.threads}, {"tp_rank", ex.tensorParallelRank()}, {"params", params}}.dump();
        }
        emit(done);
    } catch (const Error& e) {
        fail(2, e.what(), o.rank);
    } catch (const std::exception& e) {
        const std::string where = step >= 0 ? "rank " + std::to_string(o.rank) + " failed in step " + std::to_string(step) + ": "
                                            : "rank " + std::to_string(o.rank) + " failed: ";
        std::string what = e.what();
        if (const size_t nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
        fail(1, where + what, o.rank);
    }
    std::cout.flush();
    std::_Exit(0);
}

}  // namespace hippie::engine
