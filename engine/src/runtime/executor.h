#pragma once
// Executes one rank's instruction stream of a Program, step after step. A table maps each
// instruction kind to its handler; the handlers follow the execution semantics of
// planners/schedule/program.h: receives are posted where they appear and waited for by the
// next compute instruction, sends are posted after the compute that produced their tensor and
// waited for at the end of the step, all-reduces run beside compute and the optimizer step
// waits for them.
//
// The measured trace: compute events span the handler; a receive spans its post to the end of
// the wait for it; an all-reduce spans its launch (from a gradient hook, or its instruction) to
// the first poll that saw it complete; a send spans its post to the first confirmation, which
// Gloo gives only when the send is waited for, at the end of the step: read send bars as
// "in flight at most until". A bucket part whose backward already ran is a zero-length event.
//
// ZeRO (Plan::zero_stage, dp > 1): each bucket's parameters are one flat vector cut into dp
// equal shards (the last padded); replica r owns shard r as an fp32 leaf tensor, the only
// thing the optimizer steps, so the optimizer state of the other shards does not exist here.
// Stage 1 all-reduces gradients as stage 0 and takes its shard at the step; stages 2 and 3
// reduce-scatter each micro-batch's gradients (Gloo in LibTorch 1.13 has no reduce-scatter:
// an all-reduce of the bucket whose shard is kept, and the full gradients released); AllGather
// copies every replica's shard into the module's parameters. Stage 3 cuts each segment into
// one piece per layer (a bucket is a layer's parameters) and gathers a layer's bucket before
// every run of its piece (forward, recompute, backward) and releases its storage after
// (autograd's saved views share that storage and find it again when it is reallocated); a
// layer reusing a tied weight gathers the owner's bucket too. The ZeroGather instruction after
// each compute must list as many gathers as ran (else the step fails, naming both). While a
// layer runs, the next layer of the same pass is prefetched (an all-gather in flight into a
// buffer of its own); a prefetch its pass did not use is waited for and dropped when the
// compute instruction ends.
//
// Tensor parallelism (Plan::tp > 1): each rank builds its slices of its segments' layers
// (models/tensor_parallel.h), which run Megatron's collectives on the rank's tp group inside
// their forward and backward. The group counts them; a TensorParallel instruction, right after
// the compute instruction that ran them, must list as many (else the step fails, naming
// both), and becomes a trace event over that compute's interval. Data parallelism (buckets,
// ZeRO) runs over the replicas of the same tp rank, point-to-point transfers go between the same
// tp rank of adjacent stages. With sequence parallelism the whole (not split) parameters'
// gradients are partial sums over each rank's part of the sequence: they are summed over the tp
// group at the optimizer step (Megatron does the same for its sequence-parallel LayerNorms).
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <torch/torch.h>

#include "engine/src/comm/comm.h"
#include "engine/src/models/trainable.h"
#include "engine/src/runtime/data.h"
#include "engine/src/runtime/boundaries.h"
#include "engine/src/runtime/grad_buckets.h"
#include "engine/src/runtime/precision.h"
#include "engine/src/runtime/stage.h"
#include "engine/src/runtime/training.h"
#include "planners/schedule/plan.h"
#include "planners/schedule/program.h"
#include "planners/sim/trace.h"

namespace hippie::engine {

struct StepResult {
    std::optional<double> loss;  // on ranks that hold the last segment
    double lr = 0;               // the learning rate this step used
    std::optional<double> grad_norm;  // global gradient norm (when clipping or scaling needs it)
    bool skipped = false;        // fp16: an inf/NaN gradient, the step was not taken
    double loss_scale = 1;
    double time_s = 0;
    Trace trace;                 // this rank's measured events and memory for the step
};

class Executor {
public:
    // Trains `model` on `device` (the rank's: cpu, or cuda:<local rank>) with the batches of `data`.
    // `total_steps`: the run's steps, for the learning-rate schedule.
    Executor(const Plan& plan, const Graph& graph, const Program& program, const Trainable& model, const DataSource& data, Comm& comm,
             uint64_t seed, const TrainingOptions& training, int total_steps, const torch::Device& device);
    ~Executor();

    StepResult step(int index);
    // Largest number of micro-batches whose activations a segment held at once, by segment.
    const std::map<int, int>& maxStashed() const { return max_stashed_; }
    int64_t peakTrackedBytes() const { return peak_tracked_bytes_; }
    // ZeRO-3, over the run: buckets gathered, and how many of those gathers had been started
    // ahead (prefetched while the layer before ran).
    int64_t zeroGathersRun() const { return zero_gathers_run_; }
    int64_t zeroGathersPrefetched() const { return zero_gathers_prefetched_; }
    // CUDA: the caching allocator's peak over the run; 0 on CPU.
    int64_t peakDeviceBytes() const { return peak_device_bytes_; }
    std::vector<std::pair<std::string, torch::Tensor>> namedParameters() const;
    // The whole parameters: with tensor parallelism each split parameter gathered from the tp
    // group (a collective: every rank of the group calls it at the same point), the same names
    // and values as a one-process run's; else namedParameters().
    std::vector<std::pair<std::string, torch::Tensor>> wholeNamedParameters() const;
    std::string streamString() const;
    // Empty when, on every link this rank receives on, the sender's sends and this rank's
    // receives come in the same order (NCCL matches by order, not tag); else the first mismatch.
    const std::string& linkOrderProblem() const { return link_order_problem_; }
    std::vector<int> hostedSegments() const;
    int replica() const { return replica_; }
    // The rows of the step's global batch this rank's replica trains on, in order: its replica's
    // contiguous share, or with per-stage replication those of the micro-batches it runs.
    std::vector<int64_t> batchRows() const;
    int tensorParallelRank() const { return tp_rank_; }

    // Checkpoints (runtime/checkpoint.h): this rank's parameters, buffers, optimizer state and
    // loss scale.
    void saveState(torch::serialize::OutputArchive& a) const;
    void loadState(torch::serialize::InputArchive& a);
    // ZeRO-3: gathers every hosted segment's parameters (a collective: every rank calls it at
    // the same point), before namedParameters() or saveState() read them. No-op otherwise.
    void gatherParameters();

private:
    using Handler = void (Executor::*)(const Instr&);
    static constexpr size_t kKinds = static_cast<size_t>(InstrKind::OptimizerStep) + 1;  // OptimizerStep is the last kind

    void buildStages(const Graph& graph);
    void agreeShapes();
    void connectLinks();
    void buildBuckets(const Graph& graph);
    void buildOptimizer();
    // Unscales (fp16), computes the global gradient norm when needed and clips; returns whether
    // the step may be taken.
    bool prepareGradients(StepResult& r);

    void onForward(const Instr& in);
    void onBackward(const Instr& in);
    void onBackwardInput(const Instr& in);
    void onBackwardWeight(const Instr& in);
    void onRecompute(const Instr& in);
    void onSendActivation(const Instr& in);
    void onSendGrad(const Instr& in);
    void onRecvActivation(const Instr& in);
    void onRecvGrad(const Instr& in);
    void onAllReduce(const Instr& in);
    void onReduceScatter(const Instr& in);
    void onAllGather(const Instr& in);
    void onTensorParallel(const Instr& in);
    void onZeroGather(const Instr& in);
    void onOptimizerStep(const Instr& in);

    // ZeRO: one bucket's parameters, sharded over the replicas.
    struct ZeroBucket {
        int segment = 0;
        int group = -1;
        std::vector<torch::Tensor> params;  // the module's parameters of the bucket, in order
        std::vector<int64_t> offsets;       // of each in the flat vector
        int64_t numel = 0;                  // unpadded
        int64_t shard = 0;                  // elements a replica owns
        torch::Tensor master;               // this replica's shard (fp32 leaf): what the optimizer steps
        torch::Tensor shard_grad;           // its gradient, summed over micro-batches (stages 2, 3)
        Pending reducing;                   // a reduce-scatter in flight
        torch::Tensor reduced;              // its buffer
        size_t event = 0;
        bool released = false;              // stage 3: parameter storage released
        Pending gathering;                  // stage 3: a prefetched all-gather in flight
        torch::Tensor gathered;             // its buffer
        torch::Tensor storage;              // stage 3, gathered: the pooled flat its parameters are views of
    };
    void buildZero(const std::map<int, std::vector<torch::Tensor>>& params_of_bucket);
    torch::Tensor flatGrads(const ZeroBucket& z);  // padded to dp x shard, from the pool below
    // The flat fp32 buffers of ZeRO's reduces and gathers (dp x shard elements), and under
    // ZeRO-3 the gathered parameters' storage, come from this pool and go back to it when done.
    // Fresh ones each micro-batch were faulted in a page at a time (ZeRO-2 on a 20M-parameter
    // GPT, dp2: 26,500 faults a rank a step, ~16 us each on this project's VM). A request takes
    // the smallest spare that holds it (a view of its front), so the pool keeps no more buffers
    // than were out at once: the peak that fresh buffers reached anyway.
    torch::Tensor takeFlat(int64_t numel);
    void giveBack(torch::Tensor flat);
    std::multimap<int64_t, torch::Tensor> spare_flats_;  // by numel
    void finishReduceScatter(ZeroBucket& z);
    void gatherBucket(ZeroBucket& z);
    void allocateBucket(ZeroBucket& z);  // stage 3: storage back for a released bucket (no values)
    void pointInto(ZeroBucket& z, torch::Tensor flat);  // stage 3: the parameters become views of flat
    void releaseBucket(ZeroBucket& z);
    // Stage 3: the per-layer hooks of the stages (Stage::setParameterHooks).
    const std::vector<int>& bucketsOfLayer(int layer) const;  // empty when it has none
    void gatherLayer(int layer);
    void releaseLayer(int layer);
    void prefetchLayer(int layer);
    void dropPrefetches();  // waits for the prefetches no layer used, and drops them
    // The Program's groups of this rank, its tp group among them, and the world group; the dp
    // group of a segment (its replicas of this tp rank).
    void createGroups();
    int dpGroup(int segment) const;
    // Whole parameters (not split over the tp group) of this rank's segments.
    bool wholeOnEveryTpRank(const torch::Tensor& p) const;
    // Sequence parallelism: the whole parameters' gradients summed over the tp group.
    void sumSequenceParallelGradients();
    // The weight of each element of `z`'s shard in the global gradient norm: 1/tp for elements
    // of parameters every tp rank holds whole, 1 for split ones (empty: all 1).
    torch::Tensor tpNormWeights(const ZeroBucket& z) const;
    // The gradient each master shard steps on, after the collectives and the tied-weight sums.
    void prepareShardGradients();
    bool zero() const { return zero_stage_ > 0; }

    Stage& stage(int segment);
    bool hosts(int segment) const { return stages_.count(segment) > 0; }
    int deviceOf(int segment, int mb) const;  // the device of `segment` this rank takes micro-batch mb's tensors from
    int laneOf(int segment, int device) const;  // the device's index in segment_devices[segment]
    // First row of micro-batch mb in inputs_ and targets_.
    int64_t firstRow(int mb) const;
    // Index in the step's global batch of micro-batch mb's first sample: what its dropout masks
    // are drawn for (models/dropout.h).
    int64_t globalFirstSample(int mb) const;
    int tagOf(bool grad, int segment, int mb) const;
    // Waits for the posted receives that the compute at stream position `upto` (or before) reads.
    void waitPostedReceives(size_t upto);
    // Posts the receives the next compute instruction after pc_ reads, so that they arrive
    // while the compute at pc_ runs: Gloo and NCCL move a message only once its receive is
    // posted, and posted in program order it would wait for the compute before it.
    void postReceivesAhead();
    size_t nextCompute(size_t from) const;  // stream position of the first compute at or after `from`
    Live outputGrad(int segment, int mb);
    void storeInputGrad(const Stage& st, int mb, const Live& grads);
    void bindTiedWeights(const Graph& graph);
    // The keys of `producer`'s outputs that the segments on `device` (this replica) read.
    std::vector<std::string> keysTo(int producer, int device) const;
    // One flat buffer for the tensors `keys` of `producer`'s outputs, and views of it by key.
    torch::Tensor flatBuffer(int producer, const std::vector<std::string>& keys, Live& views);
    // Tensors `keys` of `from` concatenated in one flat tensor (zeros for an undefined one).
    torch::Tensor pack(int producer, const std::vector<std::string>& keys, const Live& from) const;
    Stage::LossFn lossFor(int mb);
    double now() const;
    size_t record(const Instr& in, double start, double end);
    void sampleMemory();
    void pollSends();

    const Plan& plan_;
    const Program& program_;
    const Trainable& model_;
    const DataSource& data_;
    Comm& comm_;
    torch::Device device_;
    uint64_t seed_;
    int rank_;
    int replica_ = 0;   // data-parallel replica: which samples of the step
    int tp_rank_ = 0;   // tensor-parallel rank within the replica
    int pipe_ = 0;      // index of this rank in Program::segment_devices rows: replica * t + tp rank
    int own_segment_ = 0;  // a segment this rank runs (all of its segments share their degree t)
    int stage_tp_ = 1;     // t: its stage's tensor-parallel degree (Program::tpOf)
    // Replicas of this rank's stages: dp, or with per-stage replication (Program::round_robin)
    // its stage's. Its gradients are summed over them and averaged over the iteration's dp x
    // micro_batches micro-batches.
    int stage_replicas_ = 1;
    int tag_stride_ = 0;  // micro-batch numbers a segment's point-to-point tags leave room for
    TpContext tp_;      // this rank's tp group (none when tp == 1)
    int tp_group_ = -1;  // its Program group id
    std::set<const void*> split_params_;  // TensorImpls of parameters split over the tp group
    int micro_batch_size_ = 1;
    const std::vector<Instr>* stream_ = nullptr;
    std::array<Handler, kKinds> table_{};

    // What each segment reads and hands on (derived from the graph), and the shapes of the
    // outputs of every segment this rank runs or receives from, for one micro-batch.
    std::vector<SegmentIO> io_;
    std::map<int, Shapes> out_shapes_;
    std::map<int, std::unique_ptr<Stage>> stages_;
    std::unique_ptr<GradBuckets> buckets_;
    std::unique_ptr<torch::optim::Optimizer> optimizer_;
    TrainingOptions training_;
    int total_steps_ = 1;
    double base_lr_ = 0;
    Precision precision_ = Precision::FP32;
    LossScaler scaler_{false};
    int world_group_ = -1;  // every rank: global gradient norm, inf/NaN agreement
    int step_index_ = 0;
    StepResult pending_;    // what the optimizer step learnt, for step()'s result
    int64_t static_bytes_ = 0;  // parameters, gradients, optimizer state
    int zero_stage_ = 0;        // as lowered: 0 when dp == 1
    std::map<int, ZeroBucket> zero_;  // by Program bucket id
    std::set<const void*> tied_owner_;  // TensorImpls of weights a tied copy elsewhere sums with
    std::map<int, std::vector<int>> layer_buckets_;  // stage 3: the buckets a layer gathers (a tied owner's first)
    int zero_gathers_ = 0;                           // stage 3: buckets gathered by the compute instruction running
    int64_t zero_gathers_run_ = 0, zero_gathers_prefetched_ = 0;
    size_t pc_ = 0;                     // stream position being executed

    // Per step.
    struct Posted {
        Pending work;
        size_t event = 0;
        size_t needed_at = 0;  // receives: the stream position of the compute that reads it
    };
    torch::Tensor inputs_, targets_;  // this replica's samples of the step
    std::map<std::pair<int, int>, Live> recv_activation_;          // (producer segment, mb)
    std::map<std::pair<int, int>, std::vector<Live>> recv_grad_;   // (segment, mb): gradients of its outputs, by reader
    std::map<std::pair<int, int>, Live> input_grad_;               // (producer segment, mb): to send
    // (producer segment, mb) -> SendGrad instructions of this rank's stream for it: more than
    // one where the producer's stage has more tp ranks (Program::devicesServedBy).
    std::map<std::pair<int, int>, int> grad_sends_;
    std::map<std::pair<int, int>, int> grad_sends_done_;  // of those, posted this step
    std::vector<torch::Tensor> tied_replicas_;  // replicas of weights owned on another rank
    std::map<int, torch::Tensor> tied_tensor_;  // tied-weight bucket -> the copy this rank holds
    struct TiedReduction {
        int bucket = 0, group = 0;
        size_t event = 0;
    };
    std::vector<TiedReduction> tied_pending_;  // posted this step, summed at the optimizer step
    std::set<std::pair<int, int>> backward_started_, weight_done_;
    std::vector<Posted> posted_recvs_, posted_sends_;
    std::set<size_t> posted_ahead_;  // stream positions of receives postReceivesAhead posted
    std::map<int, size_t> allreduce_event_;  // bucket -> event index
    struct LastCompute {
        Instr in;
        double start = 0, end = 0;
        TpGroup::Counts tp;  // collectives the layers ran on the tp group
        bool accounted = true;
        int zero_gathers = 0;        // ZeRO-3: buckets it gathered
        bool zero_accounted = true;  // a ZeroGather instruction has listed them
    };
    LastCompute last_compute_;
    // The hippie schedule's bucket parts of a backward run whole in the first part: what it ran
    // that no part's in-line instruction (TensorParallel, ZeroGather) has listed yet.
    struct PartBacklog {
        int unlisted = 0;
        double start = 0, end = 0;  // the backward's interval
    };
    using Backlogs = std::map<std::pair<int, int>, PartBacklog>;  // by (segment, mb)
    Backlogs tp_backlog_;    // tp collectives
    Backlogs zero_backlog_;  // ZeRO-3 gathers
    // `in` (after the bucket part `part`) lists its share of the backward's `what` (e.g.
    // "gather(s)"); throws if the backward ran fewer than the parts list.
    const PartBacklog& takeShare(Backlogs& backlogs, const Instr& in, const Instr& part, const std::string& what);
    // At the end of a step: every backward's backlog listed in full, else names what it `did`
    // more (e.g. "ran ... more tp collective(s)") than the `listing` instructions of its parts.
    void requireListed(Backlogs& backlogs, const std::string& did, const std::string& more, const std::string& listing);
    // Full recomputation: a Recompute instruction arms its segment's rebuilds, which the
    // backward after it runs one layer at a time (Stage). Each rebuild is timed and its
    // collectives counted here, then settled with what the Recompute's in-line instructions
    // listed once that backward has run.
    struct Rebuilds {
        double seconds = 0;
        TpGroup::Counts tp;
        int gathers = 0;
    };
    Rebuilds rebuilt_;  // by the compute instruction running now
    struct Recomputed {
        size_t event = 0;  // the Recompute's trace event
        int tp_listed = 0, gathers_listed = 0;
        std::vector<size_t> listing_events;  // its TensorParallel and ZeroGather events
    };
    std::map<std::pair<int, int>, Recomputed> recomputed_;  // armed, not yet rebuilt: by (segment, mb)
    void runRebuild(const std::function<void()>& rebuild);
    // A Recompute's TensorParallel or ZeroGather instruction `in`: its count into `listed`.
    void listRebuilds(const Instr& in, int Recomputed::*listed);
    // After a backward of (segment, mb): its rebuilds against the Recompute's listing; the
    // Recompute's events are placed at the backward's start, `start` moved past them.
    void settleRebuilds(const Instr& backward, double& start);
    double loss_sum_ = 0;
    torch::Tensor last_loss_;  // the last loss computed here, unscaled (lossFor)
    bool noop_ = false;  // the handler found its work already done
    std::chrono::steady_clock::time_point step_start_;
    Trace trace_;
    std::map<int, int> max_stashed_;
    int64_t peak_tracked_bytes_ = 0;
    int64_t peak_device_bytes_ = 0;
    std::string link_order_problem_;
};

}  // namespace hippie::engine
