#include "engine/src/runtime/executor.h"

#include <algorithm>
#include <cmath>

#include "engine/src/device/device.h"
#include "engine/src/runtime/test_hooks.h"
#include "planners/common/error.h"

namespace hippie::engine {

using torch::Tensor;

namespace {

constexpr int kMaxMicroBatches = 1 << 20;
constexpr int kConnectTag = 1 << 30;  // above every tagOf() of a real plan



std::string shapeKey(int segment, int replica) { return "shape/" + std::to_string(segment) + "/" + std::to_string(replica); }

// "key=2,16,64;key2=2,16" (op names contain neither '=' nor ';').
std::string shapesToString(const Shapes& shapes) {
    std::string out;
    for (const auto& [key, shape] : shapes) {
        out += (out.empty() ? "" : ";") + key + "=";
        for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
    }
    return out;
}

Shapes shapesFromString(const std::string& s) {
    Shapes out;
    size_t pos = 0;
    while (pos < s.size()) {
        size_t end = s.find(';', pos);
        if (end == std::string::npos) end = s.size();
        const std::string item = s.substr(pos, end - pos);
        const size_t eq = item.find('=');
        std::vector<int64_t>& shape = out[item.substr(0, eq)];
        size_t d = eq + 1;
        while (d < item.size()) {
            size_t next = item.find(',', d);
            if (next == std::string::npos) next = item.size();
            shape.push_back(std::stoll(item.substr(d, next - d)));
            d = next + 1;
        }
        pos = end + 1;
    }
    return out;
}

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// The first link into `rank` whose receives are posted in another order than the sender sends.
std::string checkLinkOrder(const Program& program, int rank) {
    const int self = program.streamOf(rank);
    if (self < 0) return "";
    auto key = [](const Instr& in) {
        const bool grad = in.kind == InstrKind::SendGrad || in.kind == InstrKind::RecvGrad;
        return (grad ? "G" : "A") + std::to_string(in.segment) + "." + std::to_string(in.mb);
    };
    std::map<int, std::vector<std::string>> received;  // by sender
    for (const Instr& in : program.streams[static_cast<size_t>(self)])
        if (in.kind == InstrKind::RecvActivation || in.kind == InstrKind::RecvGrad) received[in.peer].push_back(key(in));
    for (const auto& [from, recvs] : received) {
        const int other = program.streamOf(from);
        if (other < 0) return "rank " + std::to_string(from) + " sends nothing";
        std::vector<std::string> sends;
        for (const Instr& in : program.streams[static_cast<size_t>(other)])
            if ((in.kind == InstrKind::SendActivation || in.kind == InstrKind::SendGrad) && in.peer == rank) sends.push_back(key(in));
        if (sends != recvs) {
            size_t i = 0;
            while (i < sends.size() && i < recvs.size() && sends[i] == recvs[i]) ++i;
            return "link " + std::to_string(from) + "->" + std::to_string(rank) + ": transfer " + std::to_string(i) + " is sent as " +
                   (i < sends.size() ? sends[i] : "nothing") + " but received as " + (i < recvs.size() ? recvs[i] : "nothing");
        }
    }
    return "";
}

int64_t bytesOf(const std::vector<Tensor>& ts) {
    int64_t b = 0;
    for (const Tensor& t : ts) b += static_cast<int64_t>(t.nbytes());
    return b;
}

// The tp group of a rank over c10d: its collectives wait before they return (they sit inside
// the compute that runs them).
class CommTpGroup : public TpGroup {
public:
    CommTpGroup(Comm& comm, int group, int rank, int size) : TpGroup(rank, size), comm_(comm), group_(group) {}

protected:
    void allReduceInPlace(Tensor& t, bool max) override { (max ? comm_.allReduceMax(t, group_) : comm_.allReduceSum(t, group_)).wait(); }
    void allGatherFlat(const Tensor& t, Tensor& out) override { comm_.allGather(t, out, group_).wait(); }

private:
    Comm& comm_;
    int group_;
};

// The collectives a TensorParallel instruction counts, of those the layers ran: all-reduces, or
// with sequence parallelism the reduce-scatters (each an all-reduce of tensor parallelism turned
// into a reduce-scatter; the all-gathers are where tensor parallelism copies activations, at no
// cost, into the tp region and are the pairs' other halves).
int listedCount(const TpGroup::Counts& c, bool sequence_parallel) { return sequence_parallel ? c.reduce_scatters : c.all_reduces; }

TpGroup::Counts operator-(const TpGroup::Counts& a, const TpGroup::Counts& b) {
    TpGroup::Counts d;
    d.all_reduces = a.all_reduces - b.all_reduces;
    d.reduce_scatters = a.reduce_scatters - b.reduce_scatters;
    d.all_gathers = a.all_gathers - b.all_gathers;
    d.loss_all_reduces = a.loss_all_reduces - b.loss_all_reduces;
    d.bytes = a.bytes - b.bytes;
    return d;
}

TpGroup::Counts& operator+=(TpGroup::Counts& a, const TpGroup::Counts& b) {
    a.all_reduces += b.all_reduces;
    a.reduce_scatters += b.reduce_scatters;
    a.all_gathers += b.all_gathers;
    a.loss_all_reduces += b.loss_all_reduces;
    a.bytes += b.bytes;
    return a;
}

std::string countText(const TpGroup::Counts& c, bool sequence_parallel) {
    if (!sequence_parallel) return std::to_string(c.all_reduces) + " all-reduce(s)";
    return std::to_string(c.reduce_scatters) + " reduce-scatter(s) (and " + std::to_string(c.all_gathers) + " all-gather(s))";
}

}  // namespace

Executor::Executor(const Plan& plan, const Graph& graph, const Program& program, const Trainable& model, const DataSource& data,
                   Comm& comm, uint64_t seed, const TrainingOptions& training, int total_steps, const torch::Device& device)
    : plan_(plan),
      program_(program),
      model_(model),
      data_(data),
      comm_(comm),
      device_(device),
      seed_(seed),
      rank_(comm.rank()),
      training_(training),
      total_steps_(total_steps),
      precision_(plan.model.precision),
      scaler_(plan.model.precision == Precision::FP16 || training.loss_scale > 0,
              training.loss_scale > 0 ? training.loss_scale : LossScaler::kInitialScale),
      zero_stage_(program.zero_stage) {
    checkPrecision(precision_, device_);
    const int stream = program.streamOf(rank_);
    if (stream < 0) throw Error("the plan gives rank " + std::to_string(rank_) + " nothing to run");
    stream_ = &program.streams[static_cast<size_t>(stream)];
    micro_batch_size_ = plan.global_batch / (plan.dp * plan.micro_batches);

    table_[static_cast<size_t>(InstrKind::Forward)] = &Executor::onForward;
    table_[static_cast<size_t>(InstrKind::Backward)] = &Executor::onBackward;
    table_[static_cast<size_t>(InstrKind::BackwardInput)] = &Executor::onBackwardInput;
    table_[static_cast<size_t>(InstrKind::BackwardWeight)] = &Executor::onBackwardWeight;
    table_[static_cast<size_t>(InstrKind::Recompute)] = &Executor::onRecompute;
    table_[static_cast<size_t>(InstrKind::SendActivation)] = &Executor::onSendActivation;
    table_[static_cast<size_t>(InstrKind::SendGrad)] = &Executor::onSendGrad;
    table_[static_cast<size_t>(InstrKind::RecvActivation)] = &Executor::onRecvActivation;
    table_[static_cast<size_t>(InstrKind::RecvGrad)] = &Executor::onRecvGrad;
    table_[static_cast<size_t>(InstrKind::AllReduce)] = &Executor::onAllReduce;
    table_[static_cast<size_t>(InstrKind::ReduceScatter)] = &Executor::onReduceScatter;
    table_[static_cast<size_t>(InstrKind::AllGather)] = &Executor::onAllGather;
    table_[static_cast<size_t>(InstrKind::TensorParallel)] = &Executor::onTensorParallel;
    table_[static_cast<size_t>(InstrKind::ZeroGather)] = &Executor::onZeroGather;
    table_[static_cast<size_t>(InstrKind::OptimizerStep)] = &Executor::onOptimizerStep;

    link_order_problem_ = checkLinkOrder(program, rank_);
    if (!link_order_problem_.empty() && comm_.backend() == "nccl")
        throw Error("this plan's " + std::string(toString(plan.schedule)) + " program cannot run on NCCL, which matches transfers by order: " +
                    link_order_problem_ + "; use --comm gloo");
    // Where this rank is: the pipeline of (replica, tp rank) it belongs to.
    for (size_t s = 0; s < program.segment_devices.size(); ++s) {
        const auto& devs = program.segment_devices[s];
        const auto it = std::find(devs.begin(), devs.end(), rank_);
        if (it == devs.end()) continue;
        const int t = program.tpOf(static_cast<int>(s));
        const int64_t expected = program.round_robin ? int64_t{plan.replicasOf(static_cast<int>(s))} : int64_t{plan.dp} * t;
        if (static_cast<int64_t>(devs.size()) != expected)
            throw Error("the program gives segment " + std::to_string(s) + " " + std::to_string(devs.size()) + " devices, not " +
                        (program.round_robin ? "its stage's " + std::to_string(expected) + " replicas"
                                             : "dp " + std::to_string(plan.dp) + " x tp " + std::to_string(t)));
        pipe_ = static_cast<int>(it - devs.begin());
        own_segment_ = static_cast<int>(s);
        stage_tp_ = t;
        replica_ = pipe_ / t;
        tp_rank_ = pipe_ % t;
        stage_replicas_ = program.replicasOf(static_cast<int>(s));
        break;
    }
    // Point-to-point tags: (segment, micro-batch, activation or gradient), below kConnectTag.
    tag_stride_ = program.round_robin ? program.pipelines * program.micro_batches : kMaxMicroBatches;
    if (int64_t{static_cast<int64_t>(program.segments.size())} * tag_stride_ * 2 >= kConnectTag)
        throw Error("the plan's " + std::to_string(program.segments.size()) + " segments x " + std::to_string(tag_stride_) +
                    " micro-batches leave no room for point-to-point tags; use fewer micro-batches");
    for (const Instr& x : *stream_)
        if (x.kind == InstrKind::SendGrad) ++grad_sends_[{x.segment, x.mb}];
    createGroups();
    buildStages(graph);
    connectLinks();
    agreeShapes();
    buildBuckets(graph);
    buildOptimizer();
}

Executor::~Executor() = default;

void Executor::createGroups() {
    // The Program's groups this rank belongs to, created in id order on every rank.
    for (size_t g = 0; g < program_.groups.size(); ++g) {
        const auto& members = program_.groups[g];
        if (members.size() > 1 && std::find(members.begin(), members.end(), rank_) != members.end())
            comm_.addGroup(static_cast<int>(g), members);
    }
    if (stage_tp_ > 1) {
        // The tp group of this rank's (stage, replica), its members in tp-rank order
        // (Plan::tpGroups()), as the Program lists it for its TensorParallel instructions.
        std::vector<int> mine;
        for (const auto& g : plan_.tpGroups())
            if (std::find(g.begin(), g.end(), rank_) != g.end()) mine = g;
        const auto found = std::find(program_.groups.begin(), program_.groups.end(), mine);
        if (mine.empty() || mine.at(static_cast<size_t>(tp_rank_)) != rank_ || found == program_.groups.end())
            throw Error("rank " + std::to_string(rank_) + " (tp rank " + std::to_string(tp_rank_) +
                        ") finds no tensor-parallel group of the plan holding it among the program's groups");
        tp_group_ = static_cast<int>(found - program_.groups.begin());
        tp_ = TpContext{std::make_shared<CommTpGroup>(comm_, tp_group_, tp_rank_, stage_tp_), plan_.sequence_parallel};
    }
    // One more group of every rank, after the Program's (same id everywhere): the global
    // gradient norm and the fp16 overflow check are sums over all stages, replicas and tp ranks.
    if (comm_.worldSize() > 1 && (training_.clip_grad_norm > 0 || scaler_.enabled())) {
        world_group_ = static_cast<int>(program_.groups.size());
        std::vector<int> all;
        for (int r = 0; r < comm_.worldSize(); ++r) all.push_back(r);
        comm_.addGroup(world_group_, all);
    }
}

int Executor::dpGroup(int segment) const {
    // The replicas of this tp rank: segment_devices rows are ordered replica * tp + tp rank.
    const auto& devs = program_.segment_devices[static_cast<size_t>(segment)];
    std::vector<int> members;
    const int t = program_.tpOf(segment);
    for (int r = 0; r < program_.replicasOf(segment); ++r) members.push_back(devs[static_cast<size_t>(r * t + tp_rank_)]);
    for (size_t g = 0; g < program_.groups.size(); ++g)
        if (program_.groups[g] == members) return static_cast<int>(g);
    return -1;
}

bool Executor::wholeOnEveryTpRank(const Tensor& p) const { return tp_.enabled() && !split_params_.count(p.unsafeGetTensorImpl()); }

void Executor::buildStages(const Graph& graph) {
    const int last_segment = static_cast<int>(program_.segments.size()) - 1;
    io_ = segmentBoundaries(graph, plan_.stages, model_.chained());
    for (size_t s = 0; s < program_.segments.size(); ++s) {
        const auto& devs = program_.segment_devices[s];
        if (std::find(devs.begin(), devs.end(), rank_) == devs.end()) continue;
        const StageRange range = plan_.stages[s];
        std::vector<bool> recompute(static_cast<size_t>(range.last_layer - range.first_layer + 1), false);
        std::vector<bool> selective(recompute.size(), false);  // attention cores recomputed inside backward
        for (int op : program_.segments[s].ops) {
            const size_t at = static_cast<size_t>(graph.ops[static_cast<size_t>(op)].layer - range.first_layer);
            if (program_.recomputedInBlock(op)) selective[at] = true;
            else if (program_.recomputed(op)) recompute[at] = true;
        }
        auto layers = model_.tensorParallelLayers(range.first_layer, range.last_layer, seed_, device_, tp_);
        for (size_t i = 0; i < layers.size(); ++i)
            TORCH_CHECK(!selective[i] || layers[i]->setSelectiveRecompute(true), "layer ", range.first_layer + static_cast<int>(i),
                        ": the program recomputes its attention cores selectively but the module has none");
        const int seg = static_cast<int>(s);
        stages_[seg] = std::make_unique<Stage>(seg, std::move(layers), recompute, io_[s], seg == last_segment, zero_stage_ >= 3,
                                               program_.recomputesPerLayer(seg));
        stages_[seg]->setInputPassThroughActivations(tp_.enabled());
        stages_[seg]->setRebuildWrapper([this](const std::function<void()>& rebuild) { runRebuild(rebuild); });
        max_stashed_[seg] = 0;
        const auto splits = stages_[seg]->parameterSplits();
        for (const auto& [name, t] : stages_[seg]->namedParameters())
            if (splits.count(name)) split_params_.insert(t.unsafeGetTensorImpl());
    }
    bindTiedWeights(graph);
}

void Executor::bindTiedWeights(const Graph& graph) {
    // A layer reusing a weight that a layer on this rank owns shares the tensor; a weight owned
    // on another rank is replicated here, initialised as the owner initialises it.
    std::map<int, LayerPtr> local;
    for (auto& [s, st] : stages_)
        for (size_t i = 0; i < st->layers().size(); ++i) local[st->firstLayer() + static_cast<int>(i)] = st->layers()[i];
    for (auto& [layer, module] : local) {
        const auto tied = module->tiedWeight();
        if (!tied) continue;
        auto owner = local.find(tied->owner_layer);
        LayerPtr source = owner != local.end() ? owner->second
                                               : model_.tensorParallelLayers(tied->owner_layer, tied->owner_layer, seed_, device_, tp_).at(0);
        const auto params = source->named_parameters();
        const torch::Tensor* w = params.find(tied->owner_param);
        TORCH_CHECK(w, "layer ", tied->owner_layer, " has no parameter ", tied->owner_param, " for layer ", layer, " to reuse");
        if (owner != local.end()) {
            module->setTied(*w);
        } else {
            tied_replicas_.push_back(w->detach().clone().requires_grad_(true));
            module->setTied(tied_replicas_.back());
        }
    }
    // The tensor each tied-weight all-reduce of this rank sums: the owner's weight (a Graph op
    // "<layer>.<name>" owns the parameter "<name>.weight" of its layer) or the copy.
    for (size_t b = 0; b < program_.buckets.size(); ++b) {
        const Bucket& bk = program_.buckets[b];
        if (bk.tied_segment < 0) continue;
        const int bucket = static_cast<int>(b);
        if (hosts(bk.segment)) {
            const Op& op = graph.ops.at(static_cast<size_t>(bk.ops.at(0)));
            const std::string param = op.name.substr(op.name.find('.') + 1) + ".weight";
            const auto params = local.at(op.layer)->named_parameters();
            const torch::Tensor* w = params.find(param);
            TORCH_CHECK(w, "layer ", op.layer, " has no parameter ", param, " for the tied weight of op ", op.name);
            tied_tensor_[bucket] = *w;
            tied_owner_.insert(w->unsafeGetTensorImpl());
        } else if (hosts(bk.tied_segment)) {
            TORCH_CHECK(tied_replicas_.size() == 1, "one tied weight copy expected on rank ", rank_);
            tied_tensor_[bucket] = tied_replicas_.front();
        }
    }
}

void Executor::connectLinks() {
    // Every directed link of the Program moves one element before the first step, link by link
    // in one global order: NCCL creates a pair's communicator on its first transfer and blocks
    // there until the peer joins, which must not happen in the middle of a schedule. The order
    // cannot deadlock (a rank waits only on a link whose peer is at that link or an earlier one).
    std::set<std::pair<int, int>> links;
    for (size_t i = 0; i < program_.streams.size(); ++i)
        for (const Instr& in : program_.streams[i])
            if (in.kind == InstrKind::SendActivation || in.kind == InstrKind::SendGrad) links.insert({program_.devices[i], in.peer});
    for (const auto& [from, to] : links) {
        if (from == rank_) comm_.send(torch::ones({1}, torch::TensorOptions().device(device_)), to, kConnectTag).wait();
        if (to == rank_) {
            Tensor t = torch::zeros({1}, torch::TensorOptions().device(device_));
            comm_.recv(t, from, kConnectTag).wait();
        }
    }
    synchronizeDevice(device_);
}

void Executor::agreeShapes() {
    // Segment s learns the shapes of its inputs from their producers in its replica (through
    // the store), runs one forward without autograd, and publishes its output shapes: agreed
    // once, here. Producers come before their readers, so segments in order cannot deadlock.
    for (auto& [s, st] : stages_) {
        Live inputs;
        for (const auto& [key, producer] : st->io().inputs) {
            if (producer < 0) {
                const Batch probe = data_.batch(0, micro_batch_size_);
                inputs[key] = torch::zeros_like(probe.inputs).to(device_);
                continue;
            }
            // Replicas agree on shapes: with per-stage replication, read the producer's first one;
            // else the one this rank receives from (its rank k mod t with per-stage degrees).
            const int lane = program_.round_robin ? 0 : laneOf(producer, deviceOf(producer, 0));
            if (!out_shapes_.count(producer)) out_shapes_[producer] = shapesFromString(comm_.storeGet(shapeKey(producer, lane)));
            inputs[key] = torch::zeros(out_shapes_[producer].at(key), torch::TensorOptions().device(device_));
        }
        out_shapes_[s] = st->probeOutputShapes(inputs);
        comm_.storeSet(shapeKey(s, pipe_), shapesToString(out_shapes_[s]));
    }
}

void Executor::buildBuckets(const Graph& graph) {
    buckets_ = std::make_unique<GradBuckets>(comm_, stage_replicas_, [this] { return now(); });
    std::map<int, std::vector<Tensor>> all_params_of_bucket;
    for (auto& [s, st] : stages_) {
        std::vector<int> ids;
        for (size_t b = 0; b < program_.buckets.size(); ++b)
            if (program_.buckets[b].segment == s && program_.buckets[b].tied_segment < 0) ids.push_back(static_cast<int>(b));
        // A layer's parameters are final once the last bucket holding one of its weighted ops
        // is: buckets are cut from the end of the segment, so that is the highest id.
        std::map<int, std::vector<Tensor>> params_of_bucket;
        for (auto& [layer, params] : st->parametersByLayer()) {
            int owner = -1;
            for (int b : ids)
                for (int op : program_.buckets[static_cast<size_t>(b)].ops) {
                    const Op& o = graph.ops[static_cast<size_t>(op)];
                    if (o.layer == layer && o.param_bytes > 0) owner = std::max(owner, b);
                }
            if (owner < 0)
                for (int b : ids)
                    if (program_.buckets[static_cast<size_t>(b)].bytes > 0) owner = std::max(owner, b);
            if (owner < 0 && !ids.empty()) owner = ids.back();
            for (const Tensor& p : params) params_of_bucket[owner].push_back(p);
            if (!params.empty()) layer_buckets_[layer].push_back(owner);
        }
        const int group = dpGroup(s);
        for (int b : ids) {
            // ZeRO 2/3 reduce-scatter instead: the bucket is not all-reduced.
            if (zero_stage_ < 2) buckets_->addBucket(b, s, group, params_of_bucket[b]);
            all_params_of_bucket[b] = params_of_bucket[b];
        }
    }
    if (zero()) buildZero(all_params_of_bucket);
    if (zero_stage_ < 3) return;
    // A layer reusing a weight a layer of this rank owns gathers that layer's bucket first.
    for (auto& [s, st] : stages_)
        for (size_t i = 0; i < st->layers().size(); ++i) {
            const auto tied = st->layers()[i]->tiedWeight();
            const int layer = st->firstLayer() + static_cast<int>(i);
            const auto owner = tied ? layer_buckets_.find(tied->owner_layer) : layer_buckets_.end();
            if (owner == layer_buckets_.end()) continue;
            auto& mine = layer_buckets_[layer];
            mine.insert(mine.begin(), owner->second.begin(), owner->second.end());
        }
    for (auto& [layer, buckets] : layer_buckets_)
        buckets.erase(std::remove_if(buckets.begin(), buckets.end(), [this](int b) { return !zero_.count(b); }), buckets.end());
    for (auto& [s, st] : stages_)
        st->setParameterHooks([this](int layer) { gatherLayer(layer); }, [this](int layer) { releaseLayer(layer); },
                              [this](int layer) { prefetchLayer(layer); });
    for (auto& [b, z] : zero_) releaseBucket(z);  // sharded from the start: gathered where used
}

const std::vector<int>& Executor::bucketsOfLayer(int layer) const {
    static const std::vector<int> none;
    const auto it = layer_buckets_.find(layer);
    return it == layer_buckets_.end() ? none : it->second;
}

void Executor::gatherLayer(int layer) {
    for (int b : bucketsOfLayer(layer)) {
        gatherBucket(zero_.at(b));
        ++zero_gathers_;
    }
}

void Executor::prefetchLayer(int layer) {
    for (int b : bucketsOfLayer(layer)) {
        ZeroBucket& z = zero_.at(b);
        if (z.gathering.valid()) continue;
        z.gathered = takeFlat(z.shard * plan_.dp);
        z.gathering = comm_.allGather(z.master.detach(), z.gathered, z.group);
    }
}

void Executor::dropPrefetches() {
    for (auto& [b, z] : zero_) {
        if (!z.gathering.valid()) continue;
        z.gathering.wait();
        z.gathering = Pending();
        giveBack(std::move(z.gathered));
        z.gathered = Tensor();
    }
}

void Executor::releaseLayer(int layer) {
    for (int b : bucketsOfLayer(layer)) releaseBucket(zero_.at(b));
}

void Executor::buildZero(const std::map<int, std::vector<Tensor>>& params_of_bucket) {
    torch::NoGradGuard no_grad;
    const int64_t dp = plan_.dp;
    for (const auto& [b, params] : params_of_bucket) {
        if (params.empty()) continue;
        const Bucket& bk = program_.buckets[static_cast<size_t>(b)];
        TORCH_CHECK(bk.bytes > 0, "bucket ", b, " holds parameters but the Program gives it no bytes to shard");
        ZeroBucket z;
        z.segment = bk.segment;
        z.group = dpGroup(bk.segment);
        z.params = params;
        for (const Tensor& p : params) {
            z.offsets.push_back(z.numel);
            z.numel += p.numel();
        }
        z.shard = (z.numel + dp - 1) / dp;
        Tensor flat = torch::zeros({z.shard * dp}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
        for (size_t i = 0; i < params.size(); ++i) flat.narrow(0, z.offsets[i], params[i].numel()).copy_(params[i].detach().reshape({-1}));
        z.master = flat.narrow(0, replica_ * z.shard, z.shard).clone().requires_grad_(true);
        zero_.emplace(b, std::move(z));
    }
}

Tensor Executor::takeFlat(int64_t numel) {
    // The smallest spare buffer that holds numel elements, as a view of its first numel.
    if (auto it = spare_flats_.lower_bound(numel); it != spare_flats_.end()) {
        Tensor t = std::move(it->second);
        spare_flats_.erase(it);
        return t.numel() == numel ? t : t.narrow(0, 0, numel);
    }
    // None is large enough: the largest spare goes, so that the pool never holds more buffers
    // than were out at once (a model whose layers grow, gathered in turn under ZeRO-3, would
    // otherwise leave one buffer of each size here: its whole parameters).
    if (!spare_flats_.empty()) spare_flats_.erase(std::prev(spare_flats_.end()));
    return torch::empty({numel}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
}

void Executor::giveBack(Tensor flat) {
    if (!flat.defined()) return;
    // The whole buffer goes back, also where a view of its front was handed out.
    const auto capacity = static_cast<int64_t>(flat.storage().nbytes() / flat.element_size());
    if (capacity != flat.numel()) flat = torch::empty({0}, flat.options()).set_(flat.storage(), 0, {capacity});
    spare_flats_.emplace(capacity, std::move(flat));
}

Tensor Executor::flatGrads(const ZeroBucket& z) {
    torch::NoGradGuard no_grad;
    Tensor flat = takeFlat(z.shard * plan_.dp);
    flat.zero_();
    for (size_t i = 0; i < z.params.size(); ++i)
        if (z.params[i].grad().defined()) flat.narrow(0, z.offsets[i], z.params[i].numel()).copy_(z.params[i].grad().reshape({-1}));
    return flat;
}

void Executor::finishReduceScatter(ZeroBucket& z) {
    if (!z.reducing.valid()) return;
    z.reducing.wait();
    trace_.events[z.event].end_s = now();
    torch::NoGradGuard no_grad;
    const Tensor mine = z.reduced.narrow(0, replica_ * z.shard, z.shard) / plan_.dp;
    z.shard_grad = z.shard_grad.defined() ? z.shard_grad + mine : mine;  // mine is a new tensor already
    z.reducing = Pending();
    giveBack(std::move(z.reduced));
    z.reduced = Tensor();
}

namespace {

// A parameter's storage as a view of `flat` from element `offset`: the DataPtr holds a reference
// to the flat's storage, so the parameter never outlives what it points into.
at::DataPtr viewOf(const Tensor& flat, int64_t offset) {
    auto* owner = new c10::Storage(flat.storage());
    return at::DataPtr(flat.data_ptr<float>() + offset, owner, [](void* o) { delete static_cast<c10::Storage*>(o); }, flat.device());
}

}  // namespace

void Executor::pointInto(ZeroBucket& z, Tensor flat) {
    for (size_t i = 0; i < z.params.size(); ++i) {
        const Tensor& p = z.params[i];
        c10::StorageImpl* s = p.storage().unsafeGetStorageImpl();
        s->set_data_ptr_noswap(viewOf(flat, z.offsets[i]));
        s->set_nbytes(static_cast<size_t>(p.numel()) * p.element_size());
    }
    giveBack(std::move(z.storage));  // the flat they pointed into before, if any
    z.storage = std::move(flat);
    z.released = false;
}

void Executor::allocateBucket(ZeroBucket& z) {
    if (z.released) pointInto(z, takeFlat(z.shard * plan_.dp));
}

void Executor::gatherBucket(ZeroBucket& z) {
    torch::NoGradGuard no_grad;
    ++zero_gathers_run_;
    Tensor out;
    if (z.gathering.valid()) {  // prefetched
        ++zero_gathers_prefetched_;
        z.gathering.wait();
        z.gathering = Pending();
        out = std::move(z.gathered);
        z.gathered = Tensor();
    } else {
        out = takeFlat(z.shard * plan_.dp);
        comm_.allGather(z.master.detach(), out, z.group).wait();
    }
    // The parameters' storage becomes views of the gathered buffer, as FSDP's flat parameter:
    // no copy. Swapping the storage's pointer under the tensors is not a change of values that
    // autograd counts (they do not change between a forward and its backward), and its saved
    // views of a weight see the new pointer.
    pointInto(z, std::move(out));
}

void Executor::releaseBucket(ZeroBucket& z) {
    // The storage itself goes (autograd's saved views of a weight share it, and find it again
    // when a gather points it into a buffer); the tensors and their shapes stay.
    if (z.released) return;
    for (const Tensor& p : z.params) {
        // Only parameters that own their storage alone (every element theirs) can go.
        TORCH_CHECK(p.storage().nbytes() == static_cast<size_t>(p.numel()) * p.element_size() && p.storage_offset() == 0,
                    "ZeRO-3: a parameter shares its storage; it cannot be released");
        TORCH_CHECK(p.scalar_type() == torch::kFloat, "ZeRO-3: parameters are fp32 (the flat buffers' type)");
        c10::StorageImpl* s = p.storage().unsafeGetStorageImpl();
        s->set_data_ptr_noswap(at::DataPtr(nullptr, p.device()));
        s->set_nbytes(0);
    }
    giveBack(std::move(z.storage));
    z.storage = Tensor();
    z.released = true;
}

void Executor::gatherParameters() {
    if (zero_stage_ < 3) return;
    for (auto& [b, z] : zero_) gatherBucket(z);
}

void Executor::prepareShardGradients() {
    torch::NoGradGuard no_grad;
    const int64_t base = replica_;
    for (auto& [b, z] : zero_) {
        Tensor g;
        if (zero_stage_ == 1) {
            Tensor flat = flatGrads(z);
            g = flat.narrow(0, base * z.shard, z.shard).clone();
            giveBack(std::move(flat));
        } else {
            g = z.shard_grad.defined() ? z.shard_grad : torch::zeros({z.shard}, z.master.options());
            // A tied weight's owner kept its whole gradient for the tied sum: its part of the
            // shard comes from that sum.
            for (size_t i = 0; i < z.params.size(); ++i) {
                const Tensor& p = z.params[i];
                if (!tied_owner_.count(p.unsafeGetTensorImpl()) || !p.grad().defined()) continue;
                const int64_t lo = std::max(z.offsets[i], base * z.shard);
                const int64_t hi = std::min(z.offsets[i] + p.numel(), (base + 1) * z.shard);
                if (lo < hi) g.narrow(0, lo - base * z.shard, hi - lo).copy_(p.grad().reshape({-1}).narrow(0, lo - z.offsets[i], hi - lo));
            }
        }
        z.master.mutable_grad() = g;
        z.shard_grad = Tensor();
    }
}

void Executor::buildOptimizer() {
    std::vector<Tensor> params;
    for (auto& [s, st] : stages_)
        for (const Tensor& p : st->parameters()) params.push_back(p);
    for (const Tensor& p : tied_replicas_) params.push_back(p);
    const int64_t param_bytes = bytesOf(params);
    // ZeRO: the optimizer steps this replica's shards (and tied copies, which are not sharded).
    std::vector<Tensor> stepped;
    for (auto& [b, z] : zero_) stepped.push_back(z.master);
    const int64_t shard_bytes = bytesOf(stepped);
    for (const Tensor& p : tied_replicas_) stepped.push_back(p);
    base_lr_ = training_.lr > 0 ? training_.lr : defaultLearningRate(plan_.optimizer);
    optimizer_ = makeOptimizer(plan_.optimizer, zero() ? stepped : params, base_lr_, training_.weight_decay);
    // Parameters and gradients, plus the optimizer's state per parameter.
    const int64_t state_of = zero() ? bytesOf(stepped) : param_bytes;
    int64_t states = 0;
    switch (plan_.optimizer) {
    case Optimizer::SGD: states = 0; break;
    case Optimizer::SGDMomentum: states = state_of; break;
    case Optimizer::Adam:
    case Optimizer::AdamW: states = 2 * state_of; break;
    }
    // ZeRO: the module's parameters (stage 3: released between uses; counted whole), the
    // gradients (stages 2, 3: the shards), the fp32 shards and their state.
    const int64_t grads = zero_stage_ >= 2 ? shard_bytes : param_bytes;
    static_bytes_ = param_bytes + grads + (zero() ? shard_bytes : 0) + states;
}

bool Executor::prepareGradients(StepResult& r) {
    // The norm counts each parameter once (a tied replica holds its owner's summed gradient, so
    // it is left out of the norm); unscaling and clipping apply to the replicas too.
    // ZeRO: the shards' gradients, each element on one replica only.
    const std::vector<Tensor> params = [this] {
        std::vector<Tensor> out;
        if (zero()) {
            for (auto& [b, z] : zero_) out.push_back(z.master);
            return out;
        }
        for (auto& [s, st] : stages_)
            for (const Tensor& p : st->parameters()) out.push_back(p);
        return out;
    }();
    std::vector<Tensor> scaled = params;
    scaled.insert(scaled.end(), tied_replicas_.begin(), tied_replicas_.end());
    r.loss_scale = scaler_.scale();
    if (scaler_.enabled()) {
        torch::NoGradGuard no_grad;
        for (const Tensor& p : scaled)
            if (p.grad().defined()) p.grad().div_(scaler_.scale());
    }
    if (training_.clip_grad_norm <= 0 && !scaler_.enabled()) return true;
    // After the buckets, every replica of a stage holds the same (averaged) gradients, so the
    // sum over all ranks counts each stage dp times; the tp ranks hold the whole parameters'
    // gradients (summed, with sequence parallelism) alike: each counts 1/tp of them.
    double squares = 0;
    if (!tp_.enabled()) {
        squares = squaredGradNorm(params);
    } else if (zero()) {
        for (auto& [b, z] : zero_)
            if (z.master.grad().defined()) squares += (z.master.grad().to(torch::kDouble).square() * tpNormWeights(z)).sum().item<double>();
    } else {
        for (const Tensor& p : params)
            if (p.grad().defined())
                squares += p.grad().to(torch::kDouble).square().sum().item<double>() / (wholeOnEveryTpRank(p) ? stage_tp_ : 1);
    }
    double local[2] = {squares / (zero() ? 1 : stage_replicas_), 0};
    if (scaler_.enabled()) {
        for (const Tensor& p : params)
            if (p.grad().defined() && !torch::isfinite(p.grad()).all().item<bool>()) local[1] = 1;
        // Test hook: that rank finds an inf, as an fp16 overflow on one rank would (no CPU runs
        // fp16, and a small model's fp32 gradients do not overflow even at the largest scale).
        if (testHookAt("HIPPIE_ENGINE_TEST_OVERFLOW", rank_, step_index_)) local[1] = 1;
    }
    Tensor t = torch::tensor({local[0], local[1]}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
    if (world_group_ >= 0) comm_.allReduceSum(t, world_group_).wait();
    const Tensor host = t.to(torch::kCPU);
    const double norm = std::sqrt(host[0].item<double>());
    const bool found_inf = host[1].item<double>() > 0 || !std::isfinite(norm);
    r.grad_norm = norm;
    if (!scaler_.update(found_inf)) {
        r.skipped = true;
        return false;
    }
    if (training_.clip_grad_norm > 0) scaleGradsToNorm(scaled, norm, training_.clip_grad_norm);
    return true;
}

Stage& Executor::stage(int segment) {
    auto it = stages_.find(segment);
    TORCH_CHECK(it != stages_.end(), "rank ", rank_, " does not hold segment ", segment);
    return *it->second;
}

int Executor::deviceOf(int segment, int mb) const { return program_.deviceFor(segment, own_segment_, pipe_, mb); }

int Executor::laneOf(int segment, int device) const {
    const auto& devs = program_.segment_devices[static_cast<size_t>(segment)];
    return static_cast<int>(std::find(devs.begin(), devs.end(), device) - devs.begin());
}

int Executor::tagOf(bool grad, int segment, int mb) const { return (segment * tag_stride_ + mb) * 2 + (grad ? 1 : 0); }

int64_t Executor::firstRow(int mb) const {
    if (!program_.round_robin) return int64_t{mb} * micro_batch_size_;  // in this replica's share
    // Micro-batch mb of the iteration: micro-batch mb / dp of share mb mod dp, as a replica of
    // a plan with dp replicas for every stage would run it.
    const int64_t share = plan_.global_batch / plan_.dp;
    return (mb % plan_.dp) * share + int64_t{mb / plan_.dp} * micro_batch_size_;
}

int64_t Executor::globalFirstSample(int mb) const {
    if (program_.round_robin) return firstRow(mb);  // into the whole global batch already
    return replica_ * (plan_.global_batch / plan_.dp) + firstRow(mb);
}

std::vector<int64_t> Executor::batchRows() const {
    std::vector<int64_t> rows;
    const int64_t share = plan_.global_batch / plan_.dp;
    if (!program_.round_robin) {
        for (int64_t i = 0; i < share; ++i) rows.push_back(replica_ * share + i);
        return rows;
    }
    for (const int segment : hostedSegments())
        for (const int mb : program_.microBatchesOf(segment, pipe_))
            for (int64_t i = 0; i < micro_batch_size_; ++i) rows.push_back(firstRow(mb) + i);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

double Executor::now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count(); }

size_t Executor::record(const Instr& in, double start, double end) {
    TraceEvent e;
    e.device = rank_;
    e.start_s = start;
    e.end_s = end;
    e.kind = in.kind;
    e.stage = isCollective(in.kind) ? program_.buckets[static_cast<size_t>(in.bucket)].segment : in.segment;
    e.mb = in.mb;
    e.peer = in.peer;
    e.bytes = in.bytes;
    if (isCollective(in.kind)) e.bytes = program_.buckets[static_cast<size_t>(in.bucket)].bytes;
    trace_.events.push_back(e);
    return trace_.events.size() - 1;
}

void Executor::sampleMemory() {
    int64_t bytes = static_bytes_;
    for (auto& [s, st] : stages_) {
        bytes += st->stashedBytes();
        max_stashed_[s] = std::max(max_stashed_[s], st->stashedMicroBatches());
    }
    peak_tracked_bytes_ = std::max(peak_tracked_bytes_, bytes);
    // CUDA: the trace shows what the caching allocator has handed out (every tensor of the
    // process on this device); CPU: the bytes of the tensors the engine holds.
    if (const auto a = allocatorBytes(device_)) {
        bytes = a->current;
        peak_device_bytes_ = std::max(peak_device_bytes_, a->peak);
    }
    trace_.memory[0].push_back(MemorySample{now(), bytes});
}

void Executor::waitPostedReceives(size_t upto) {
    const auto due = [upto](const Posted& p) { return p.needed_at <= upto; };
    for (Posted& p : posted_recvs_) {
        if (!due(p)) continue;
        p.work.wait();
        trace_.events[p.event].end_s = now();
    }
    std::erase_if(posted_recvs_, due);
}

size_t Executor::nextCompute(size_t from) const {
    while (from < stream_->size() && !isCompute((*stream_)[from].kind)) ++from;
    return from;
}

void Executor::postReceivesAhead() {
    const size_t next = nextCompute(pc_ + 1);
    for (size_t i = pc_ + 1; i < next; ++i) {
        const Instr& in = (*stream_)[i];
        if (!isRecv(in.kind)) continue;
        (this->*table_[static_cast<size_t>(in.kind)])(in);
        posted_recvs_.back().needed_at = next;
        posted_ahead_.insert(i);
    }
}

void Executor::pollSends() {
    for (Posted& p : posted_sends_)
        if (trace_.events[p.event].end_s < 0 && p.work.completed()) trace_.events[p.event].end_s = now();
}

Stage::LossFn Executor::lossFor(int mb) {
    const Tensor targets = targets_.narrow(0, firstRow(mb), micro_batch_size_);
    const double scale = scaler_.scale() / plan_.micro_batches;  // fp16: the loss scale rides on the loss
    return [this, targets, scale](const Live& live) {
        const Tensor loss = model_.tensorParallelLoss(live, targets, tp_);
        last_loss_ = loss.detach();  // the scaled value may overflow where the loss itself does not
        return loss * scale;
    };
}

Live Executor::outputGrad(int segment, int mb) {
    if (stage(segment).computesLoss()) return {};
    auto it = recv_grad_.find({segment, mb});
    TORCH_CHECK(it != recv_grad_.end(), "segment ", segment, " micro-batch ", mb, ": output gradient never arrived");
    // An output read on several devices (or by several segments) gets the sum of their gradients.
    Live sum;
    for (const Live& part : it->second)
        for (const auto& [key, g] : part) {
            auto s = sum.find(key);
            if (s == sum.end()) sum[key] = g;
            else s->second = s->second + g;
        }
    recv_grad_.erase(it);
    return sum;
}

void Executor::storeInputGrad(const Stage& st, int mb, const Live& grads) {
    for (const auto& [key, producer] : st.io().inputs) {
        if (producer < 0) continue;
        auto g = grads.find(key);
        if (g == grads.end()) continue;
        // A producer on this rank (interleaved chunks) takes it directly; else it is sent.
        if (hosts(producer)) {
            recv_grad_[{producer, mb}].push_back(Live{{key, g->second}});
        } else {
            Tensor& acc = input_grad_[{producer, mb}][key];
            acc = acc.defined() ? acc + g->second : g->second;
        }
    }
}

std::vector<std::string> Executor::keysTo(int producer, int device) const {
    std::set<int> readers;
    for (size_t s = 0; s < program_.segment_devices.size(); ++s)
        if (std::count(program_.segment_devices[s].begin(), program_.segment_devices[s].end(), device) > 0)
            readers.insert(static_cast<int>(s));
    return keysFor(io_[static_cast<size_t>(producer)], readers);
}

Tensor Executor::flatBuffer(int producer, const std::vector<std::string>& keys, Live& views) {
    const Shapes& shapes = out_shapes_.at(producer);
    int64_t total = 0;
    for (const std::string& k : keys) total += numel(shapes.at(k));
    Tensor flat = torch::empty({total}, torch::TensorOptions().device(device_));
    int64_t at = 0;
    for (const std::string& k : keys) {
        const int64_t n = numel(shapes.at(k));
        views[k] = flat.narrow(0, at, n).view(shapes.at(k));
        at += n;
    }
    return flat;
}

Tensor Executor::pack(int producer, const std::vector<std::string>& keys, const Live& from) const {
    std::vector<Tensor> parts;
    for (const std::string& k : keys) {
        auto it = from.find(k);
        // Stage boundaries carry fp32: under autocast an activation may be bf16/fp16, and the
        // receiver's buffer is fp32 (its next op casts as autocast says; gradients come back fp32
        // and autograd casts them to the output's dtype).
        if (it != from.end() && it->second.defined()) parts.push_back(it->second.detach().to(torch::kFloat).reshape({-1}));
        else parts.push_back(torch::zeros({numel(out_shapes_.at(producer).at(k))}, torch::TensorOptions().device(device_)));
    }
    return parts.size() == 1 ? parts[0].contiguous() : torch::cat(parts);
}

// ---- compute ----------------------------------------------------------------------------------

void Executor::onForward(const Instr& in) {
    Stage& st = stage(in.segment);
    Live x;
    for (const auto& [key, producer] : st.io().inputs) {
        if (producer < 0) {
            x[key] = inputs_.narrow(0, firstRow(in.mb), micro_batch_size_);
        } else if (hosts(producer)) {
            x[key] = stage(producer).output(in.mb).at(key);
        } else {
            auto it = recv_activation_.find({producer, in.mb});
            TORCH_CHECK(it != recv_activation_.end(), "segment ", in.segment, " micro-batch ", in.mb, ": the activations of segment ",
                        producer, " never arrived");
            x[key] = it->second.at(key);
        }
    }
    {
        AutocastScope autocast(precision_, device_);
        const DropoutScope dropout(DropoutStream{seed_, step_index_, globalFirstSample(in.mb)});
        st.forward(in.mb, x, lossFor(in.mb));
    }
    if (st.computesLoss()) loss_sum_ += last_loss_.item<double>() / plan_.micro_batches;
}

void Executor::onRecompute(const Instr& in) {
    stage(in.segment).recompute(in.mb, lossFor(in.mb));
}

void Executor::runRebuild(const std::function<void()>& rebuild) {
    const TpGroup::Counts tp_before = tp_.enabled() ? tp_.group->counts() : TpGroup::Counts{};
    const int gathers_before = zero_gathers_;
    const double start = now();
    {
        AutocastScope autocast(precision_, device_);
        rebuild();
    }
    synchronizeDevice(device_);
    rebuilt_.seconds += now() - start;
    if (tp_.enabled()) rebuilt_.tp += tp_.group->counts() - tp_before;
    rebuilt_.gathers += zero_gathers_ - gathers_before;
}

void Executor::listRebuilds(const Instr& in, int Recomputed::*listed) {
    // The rebuilds run inside the backward: checked against this count and placed when it has run.
    Recomputed& r = recomputed_.at({in.segment, in.mb});
    r.*listed = in.count;
    r.listing_events.push_back(record(in, last_compute_.start, last_compute_.end));
}

void Executor::settleRebuilds(const Instr& backward, double& start) {
    const auto it = recomputed_.find({backward.segment, backward.mb});
    if (it == recomputed_.end()) return;
    const Recomputed& r = it->second;
    const int ran = listedCount(rebuilt_.tp, plan_.sequence_parallel);
    if (ran != r.tp_listed)
        throw Error("rank " + std::to_string(rank_) + ": the rebuilds of segment " + std::to_string(backward.segment) + ", micro-batch " +
                    std::to_string(backward.mb) + " (its Recompute, run inside " + backward.str() + ") ran " +
                    countText(rebuilt_.tp, plan_.sequence_parallel) + " on its tp group, but the program lists " + std::to_string(r.tp_listed));
    if (rebuilt_.gathers != r.gathers_listed)
        throw Error("rank " + std::to_string(rank_) + ": the rebuilds of segment " + std::to_string(backward.segment) + ", micro-batch " +
                    std::to_string(backward.mb) + " (its Recompute, run inside " + backward.str() + ") gathered " +
                    std::to_string(rebuilt_.gathers) + " ZeRO-3 parameter bucket(s), but the program lists " + std::to_string(r.gathers_listed));
    // The trace shows the rebuilds, which ran layer by layer inside the backward, as one block
    // before it: the same device time, each kind's total exact.
    const double end = start + rebuilt_.seconds;
    trace_.events[r.event].start_s = start;
    trace_.events[r.event].end_s = end;
    for (size_t e : r.listing_events) {
        trace_.events[e].start_s = start;
        trace_.events[e].end_s = end;
    }
    start = end;
    recomputed_.erase(it);
}

void Executor::onBackward(const Instr& in) {
    // The hippie schedule splits the last micro-batch's backward into one part per bucket;
    // the first part runs the whole backward with the bucket hooks armed, so each bucket's
    // all-reduce starts as soon as its gradients are final. Later parts find it done.
    if (!backward_started_.insert({in.segment, in.mb}).second) {
        noop_ = true;
        return;
    }
    Stage& st = stage(in.segment);
    const Live og = outputGrad(in.segment, in.mb);
    const bool arm = in.bucket >= 0 && zero_stage_ < 2;  // ZeRO 2/3 reduce-scatter at their instructions
    if (arm) buckets_->arm(in.segment);
    const Live ig = st.backward(in.mb, og);
    if (arm) buckets_->disarm(in.segment);
    storeInputGrad(st, in.mb, ig);
}

void Executor::onBackwardInput(const Instr& in) {
    backward_started_.insert({in.segment, in.mb});
    Stage& st = stage(in.segment);
    const Live ig = st.backwardInput(in.mb, outputGrad(in.segment, in.mb));
    storeInputGrad(st, in.mb, ig);
}

void Executor::onBackwardWeight(const Instr& in) {
    if (!weight_done_.insert({in.segment, in.mb}).second) {
        noop_ = true;
        return;
    }
    const bool arm = in.bucket >= 0 && zero_stage_ < 2;
    if (arm) buckets_->arm(in.segment);
    stage(in.segment).backwardWeight(in.mb);
    if (arm) buckets_->disarm(in.segment);
}

void Executor::onOptimizerStep(const Instr&) {
    for (const auto& [bucket, end] : buckets_->finish()) {
        auto it = allreduce_event_.find(bucket);
        if (it != allreduce_event_.end()) trace_.events[it->second].end_s = end;
    }
    // Per-stage replication: the buckets averaged over this stage's replicas; the iteration ran
    // dp x micro_batches micro-batches, each replica's loss scaled by 1 / micro_batches, so the
    // mean over all of them is that average x stage replicas / dp.
    if (program_.round_robin && stage_replicas_ != plan_.dp) {
        torch::NoGradGuard no_grad;
        const double share = static_cast<double>(stage_replicas_) / plan_.dp;
        for (auto& [s, st] : stages_)
            for (Tensor& p : st->parameters())
                if (p.grad().defined()) p.mutable_grad().mul_(share);
    }
    for (auto& [b, z] : zero_) {
        finishReduceScatter(z);
        if (zero_stage_ < 2) continue;
        // ZeRO 2/3: a tied weight's owner kept its whole gradient (not released at the
        // reduce-scatter); it is averaged here for the tied sum below, outside the Program.
        for (Tensor& p : z.params) {
            if (!tied_owner_.count(p.unsafeGetTensorImpl())) continue;
            Tensor g = p.grad().defined() ? p.grad() : torch::zeros_like(p);
            comm_.allReduceSum(g, z.group).wait();
            p.mutable_grad() = g / plan_.dp;
        }
    }
    // Tied weights: every copy, in every replica, gets the sum of the owner's and the user's
    // gradients averaged over the replicas. The owner's gradient is already averaged by its
    // bucket, the copy's is not: each owner contributes 1/(its stage's replicas) of its own,
    // each copy 1/dp, to one sum over all of them.
    for (const auto& [bucket, group, event] : tied_pending_) {
        Tensor& w = tied_tensor_.at(bucket);
        const Tensor g = w.grad().defined() ? w.grad() : torch::zeros_like(w);
        const bool owner = hosts(program_.buckets[static_cast<size_t>(bucket)].segment);
        Tensor sum = g / (owner ? stage_replicas_ : plan_.dp);
        comm_.allReduceSum(sum, group).wait();
        w.mutable_grad() = sum;
        trace_.events[event].end_s = now();
    }
    tied_pending_.clear();
    pending_.lr = learningRate(training_, base_lr_, step_index_, total_steps_);
    setLearningRate(*optimizer_, pending_.lr);
    // Sequence parallelism sums the whole parameters' gradients over the tp group: the
    // module's gradients (stages 0, 1), or the shards' (2, 3: the module's are gone).
    if (zero_stage_ < 2) sumSequenceParallelGradients();
    if (zero()) prepareShardGradients();
    if (zero_stage_ >= 2) sumSequenceParallelGradients();
    if (prepareGradients(pending_)) optimizer_->step();
}

Tensor Executor::tpNormWeights(const ZeroBucket& z) const {
    if (!tp_.enabled()) return Tensor();
    Tensor w = torch::ones({z.shard}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
    const int64_t base = replica_ * z.shard;
    for (size_t i = 0; i < z.params.size(); ++i) {
        if (!wholeOnEveryTpRank(z.params[i])) continue;
        const int64_t lo = std::max(z.offsets[i], base), hi = std::min(z.offsets[i] + z.params[i].numel(), base + z.shard);
        if (lo < hi) w.narrow(0, lo - base, hi - lo).fill_(1.0 / stage_tp_);
    }
    return w;
}

void Executor::sumSequenceParallelGradients() {
    if (!tp_.enabled() || !plan_.sequence_parallel) return;
    torch::NoGradGuard no_grad;
    // Every rank of the group has the same parameters in the same order, so the same elements.
    std::vector<Tensor> parts;
    if (zero_stage_ >= 2) {
        std::vector<Tensor> masks;
        for (auto& [b, z] : zero_) {
            masks.push_back(tpNormWeights(z) < 1.0);
            parts.push_back(z.master.grad().masked_select(masks.back()));
        }
        Tensor flat = torch::cat(parts);
        comm_.allReduceSum(flat, tp_group_).wait();
        int64_t at = 0;
        size_t i = 0;
        for (auto& [b, z] : zero_) {
            const int64_t n = parts[i].numel();
            z.master.mutable_grad().masked_scatter_(masks[i], flat.narrow(0, at, n));
            at += n;
            ++i;
        }
        return;
    }
    std::vector<Tensor> whole;
    for (auto& [s, st] : stages_)
        for (Tensor& p : st->parameters()) {
            if (!wholeOnEveryTpRank(p)) continue;
            if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
            whole.push_back(p);
            parts.push_back(p.grad().reshape({-1}));
        }
    if (whole.empty()) return;
    Tensor flat = torch::cat(parts);
    comm_.allReduceSum(flat, tp_group_).wait();
    int64_t at = 0;
    for (Tensor& p : whole) {
        p.mutable_grad().copy_(flat.narrow(0, at, p.numel()).view_as(p));
        at += p.numel();
    }
}

// ---- communication ----------------------------------------------------------------------------

// A transfer carries every tensor of the producer that the segments on the other device read,
// in the producer's output order, concatenated in one flat buffer.
void Executor::onSendActivation(const Instr& in) {
    Stage& st = stage(in.segment);
    const size_t ev = record(in, now(), -1);
    const Tensor flat = pack(in.segment, keysTo(in.segment, in.peer), st.output(in.mb));
    posted_sends_.push_back({comm_.send(flat, in.peer, tagOf(false, in.segment, in.mb)), ev});
    // Only one transfer reads the outputs, and nothing here: their storage can go.
    std::set<int> readers;
    for (const auto& [key, segments] : st.io().consumers) readers.insert(segments.begin(), segments.end());
    std::set<int> devices;
    for (int r : readers)
        for (int d : program_.devicesServedBy(r, own_segment_, pipe_, in.mb)) devices.insert(d);
    if (devices.size() == 1 && !devices.count(rank_)) st.releaseOutput(in.mb);
}

void Executor::onSendGrad(const Instr& in) {
    auto it = input_grad_.find({in.segment, in.mb});
    TORCH_CHECK(it != input_grad_.end(), "segment ", in.segment, " micro-batch ", in.mb, ": no input gradient to send");
    const size_t ev = record(in, now(), -1);
    const Tensor flat = pack(in.segment, keysTo(in.segment, rank_), it->second);
    posted_sends_.push_back({comm_.send(flat, in.peer, tagOf(true, in.segment, in.mb)), ev});
    // The last of its sends lets the gradient go (each send holds what it packed).
    const std::pair<int, int> key{in.segment, in.mb};
    if (++grad_sends_done_[key] >= grad_sends_[key]) {
        grad_sends_done_.erase(key);
        input_grad_.erase(it);
    }
}

void Executor::onRecvActivation(const Instr& in) {
    Live views;
    Tensor flat = flatBuffer(in.segment, keysTo(in.segment, rank_), views);
    recv_activation_[{in.segment, in.mb}] = views;
    const size_t ev = record(in, now(), -1);
    posted_recvs_.push_back({comm_.recv(flat, in.peer, tagOf(false, in.segment, in.mb)), ev});
}

void Executor::onRecvGrad(const Instr& in) {
    Live views;
    Tensor flat = flatBuffer(in.segment, keysTo(in.segment, in.peer), views);
    recv_grad_[{in.segment, in.mb}].push_back(views);
    const size_t ev = record(in, now(), -1);
    posted_recvs_.push_back({comm_.recv(flat, in.peer, tagOf(true, in.segment, in.mb)), ev});
}

void Executor::onAllReduce(const Instr& in) {
    if (program_.buckets[static_cast<size_t>(in.bucket)].tied_segment >= 0) {
        // Summed at the optimizer step, once the owner's data-parallel all-reduce is done.
        tied_pending_.push_back({in.bucket, in.group, record(in, now(), -1)});
        return;
    }
    buckets_->launch(in.bucket);
    allreduce_event_[in.bucket] = record(in, buckets_->launchTime(in.bucket), -1);
}

void Executor::onReduceScatter(const Instr& in) {
    // A bucket may hold no parameters here (a layer's parameters go to the last bucket holding
    // one of its ops): the same on every replica, so nothing to do.
    auto it = zero_.find(in.bucket);
    if (it == zero_.end()) {
        const double t = now();
        record(in, t, t);
        return;
    }
    ZeroBucket& z = it->second;
    finishReduceScatter(z);  // the previous micro-batch's, if still in flight
    z.reduced = flatGrads(z);
    // Only the shard stays: the full gradients go (a tied weight's owner keeps its own for the
    // tied sum at the step).
    for (Tensor& p : z.params)
        if (!tied_owner_.count(p.unsafeGetTensorImpl())) p.mutable_grad() = Tensor();
    z.event = record(in, now(), -1);
    // Gloo in LibTorch 1.13 has no reduce-scatter: all-reduce the bucket, keep the shard.
    z.reducing = comm_.allReduceSum(z.reduced, z.group);
}

void Executor::onAllGather(const Instr& in) {
    auto it = zero_.find(in.bucket);
    const size_t ev = record(in, now(), -1);
    if (it == zero_.end()) {
        trace_.events[ev].end_s = trace_.events[ev].start_s;
        return;
    }
    ZeroBucket& z = it->second;
    gatherBucket(z);
    trace_.events[ev].end_s = now();
}

// The collectives are run by the layers, inside the compute instruction before this one: here
// they are checked against the program and put in the trace, over that compute's interval.
void Executor::onTensorParallel(const Instr& in) {
    const LastCompute& c = last_compute_;
    if (!tp_.enabled()) throw Error("rank " + std::to_string(rank_) + ": the program has " + in.str() + " but the plan has tp 1");
    if (pc_ == 0 || !isCompute((*stream_)[pc_ - 1].kind) || c.in.kind != in.of || c.in.segment != in.segment || c.in.mb != in.mb)
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + " at position " + std::to_string(pc_) +
                    " does not stand right after its compute instruction (" + toString(in.of) + " of segment " + std::to_string(in.segment) +
                    ", micro-batch " + std::to_string(in.mb) + ")");
    const auto& members = program_.groups.at(static_cast<size_t>(in.group));
    if (in.group != tp_group_)
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + " names group " + std::to_string(in.group) +
                    (std::find(members.begin(), members.end(), rank_) == members.end() ? ", which does not hold this rank"
                                                                                      : ", which is not this rank's tp group " + std::to_string(tp_group_)));
    if (in.sequence_parallel != plan_.sequence_parallel)
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + (in.sequence_parallel ? " lists sequence-parallel pairs but the plan has none"
                                                                                               : " lists all-reduces but the plan is sequence parallel"));
    if (c.in.kind == InstrKind::Recompute) {
        listRebuilds(in, &Recomputed::tp_listed);
        last_compute_.accounted = true;
        return;
    }
    if (c.in.kind == InstrKind::Backward && c.in.bucket >= 0) {
        // A bucket part of a backward that ran whole in its first part: its share of that.
        const PartBacklog& b = takeShare(tp_backlog_, in, c.in, "tp collective(s)");
        record(in, b.start, b.end);
        last_compute_.accounted = true;
        return;
    }
    const int ran = listedCount(c.tp, plan_.sequence_parallel);
    if (ran != in.count)
        throw Error("rank " + std::to_string(rank_) + ": " + c.in.str() + " ran " + countText(c.tp, plan_.sequence_parallel) +
                    " on its tp group (" + std::to_string(c.tp.bytes) + " bytes), but " + in.str() + " lists " + std::to_string(in.count) +
                    " (" + std::to_string(in.bytes) + " bytes)");
    record(in, c.start, c.end);
    last_compute_.accounted = true;
}

// ZeRO-3: the gathers ran inside the compute instruction before this one (its layers' hooks):
// here they are checked against the program and put in the trace, over that compute's interval.
void Executor::onZeroGather(const Instr& in) {
    const LastCompute& c = last_compute_;
    if (zero_stage_ < 3) throw Error("rank " + std::to_string(rank_) + ": the program has " + in.str() + " but its ZeRO stage is " +
                                     std::to_string(zero_stage_));
    const bool follows = pc_ > 0 && (isCompute((*stream_)[pc_ - 1].kind) || (pc_ > 1 && isTensorParallel((*stream_)[pc_ - 1].kind)));
    if (!follows || c.in.kind != in.of || c.in.segment != in.segment || c.in.mb != in.mb || c.in.bucket != in.bucket)
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + " at position " + std::to_string(pc_) +
                    " does not stand right after its compute instruction (" + toString(in.of) + " of segment " + std::to_string(in.segment) +
                    ", micro-batch " + std::to_string(in.mb) + ")");
    const int dp_group = dpGroup(in.segment);
    if (in.group < 0 || in.group >= static_cast<int>(program_.groups.size()) || dp_group < 0 ||
        program_.groups[static_cast<size_t>(in.group)] != program_.groups[static_cast<size_t>(dp_group)])
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + " names group " + std::to_string(in.group) +
                    ", not the data-parallel group of segment " + std::to_string(in.segment) + " on this rank");
    if (c.in.kind == InstrKind::Recompute) {
        listRebuilds(in, &Recomputed::gathers_listed);
        last_compute_.zero_accounted = true;
        return;
    }
    if (c.in.kind == InstrKind::Backward && c.in.bucket >= 0) {
        const PartBacklog& b = takeShare(zero_backlog_, in, c.in, "gather(s)");
        record(in, b.start, b.end);
        return;
    }
    if (c.zero_gathers != in.count)
        throw Error("rank " + std::to_string(rank_) + ": " + c.in.str() + " gathered " + std::to_string(c.zero_gathers) +
                    " ZeRO-3 parameter bucket(s), but " + in.str() + " lists " + std::to_string(in.count) + " (" + std::to_string(in.bytes) +
                    " bytes)");
    record(in, c.start, c.end);
    last_compute_.zero_accounted = true;
}

const Executor::PartBacklog& Executor::takeShare(Backlogs& backlogs, const Instr& in, const Instr& part, const std::string& what) {
    auto it = backlogs.find({in.segment, in.mb});
    if (it == backlogs.end() || it->second.unlisted < in.count)
        throw Error("rank " + std::to_string(rank_) + ": " + in.str() + " lists " + std::to_string(in.count) + " " + what +
                    " of the backward's bucket part " + part.str() + ", more than the backward ran and its earlier parts did not list (" +
                    std::to_string(it == backlogs.end() ? 0 : it->second.unlisted) + ")");
    it->second.unlisted -= in.count;
    return it->second;
}

void Executor::requireListed(Backlogs& backlogs, const std::string& did, const std::string& more, const std::string& listing) {
    for (const auto& [key, b] : backlogs)
        if (b.unlisted != 0)
            throw Error("rank " + std::to_string(rank_) + ": the backward of segment " + std::to_string(key.first) + ", micro-batch " +
                        std::to_string(key.second) + " " + did + " " + std::to_string(b.unlisted) + " more " + more + " than the " + listing +
                        " instructions of its bucket parts list");
    backlogs.clear();
}

// ---- the step ---------------------------------------------------------------------------------

StepResult Executor::step(int index) {
    step_start_ = std::chrono::steady_clock::now();
    step_index_ = index;
    pending_ = StepResult{};
    trace_ = Trace{};
    trace_.devices = {rank_};
    trace_.capacity_bytes = {0};
    trace_.memory.assign(1, {});
    recv_activation_.clear();
    recv_grad_.clear();
    posted_ahead_.clear();
    input_grad_.clear();
    grad_sends_done_.clear();
    backward_started_.clear();
    recomputed_.clear();
    weight_done_.clear();
    allreduce_event_.clear();
    loss_sum_ = 0;
    for (auto& [s, st] : stages_)
        for (Tensor& p : st->parameters()) p.mutable_grad() = Tensor();
    for (Tensor& p : tied_replicas_) p.mutable_grad() = Tensor();
    buckets_->beginStep();

    const Batch batch = data_.batch(index, plan_.global_batch);
    if (program_.round_robin) {
        // Micro-batches come from every replica's share (firstRow).
        inputs_ = batch.inputs.to(device_);
        targets_ = batch.targets.to(device_);
    } else {
        const int64_t per_replica = plan_.global_batch / plan_.dp;
        inputs_ = batch.inputs.narrow(0, replica_ * per_replica, per_replica).to(device_);
        targets_ = batch.targets.narrow(0, replica_ * per_replica, per_replica).to(device_);
    }
    sampleMemory();

    // Tensor parallelism: the collectives a compute instruction's layers ran must be listed by
    // the TensorParallel instruction right after it.
    auto unlisted = [this] {
        const LastCompute& c = last_compute_;
        return Error("rank " + std::to_string(rank_) + ": " + c.in.str() + " ran " + countText(c.tp, plan_.sequence_parallel) +
                     " on its tp group, but no TensorParallel instruction follows it in the program");
    };
    // ZeRO-3: the gathers a compute instruction's layers ran must be listed by the ZeroGather
    // instruction after it.
    auto unlisted_gathers = [this] {
        const LastCompute& c = last_compute_;
        return Error("rank " + std::to_string(rank_) + ": " + c.in.str() + " gathered " + std::to_string(c.zero_gathers) +
                     " ZeRO-3 parameter bucket(s), but no ZeroGather instruction follows it in the program");
    };
    last_compute_ = LastCompute{};
    for (pc_ = 0; pc_ < stream_->size(); ++pc_) {
        const Instr& in = (*stream_)[pc_];
        const Handler h = table_[static_cast<size_t>(in.kind)];
        if (!last_compute_.accounted && in.kind != InstrKind::TensorParallel) throw unlisted();
        if (!last_compute_.zero_accounted && !isInline(in.kind)) throw unlisted_gathers();
        if (isCompute(in.kind)) {
            waitPostedReceives(pc_);
            postReceivesAhead();
            if (tp_.enabled()) tp_.group->resetCounts();
            zero_gathers_ = 0;
            rebuilt_ = Rebuilds{};
            double start = now();
            noop_ = false;
            (this->*h)(in);
            if (zero_stage_ >= 3) dropPrefetches();
            synchronizeDevice(device_);  // CUDA: the event ends when its kernels have
            const double end = noop_ ? start : now();  // a bucket part whose backward already ran
            if (!noop_ && (in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardInput)) settleRebuilds(in, start);
            const size_t event = record(in, start, end);
            if (in.kind == InstrKind::Recompute) recomputed_[{in.segment, in.mb}].event = event;
            // The hippie schedule's bucket parts: the first runs the whole backward, and each
            // part's TensorParallel and ZeroGather instructions list its bucket's share.
            const bool part = in.kind == InstrKind::Backward && in.bucket >= 0;
            const int gathered = zero_gathers_ - rebuilt_.gathers;  // the rebuilds' are the Recompute's
            LastCompute lc{in, start, end, {}, true, gathered, gathered == 0};
            if (tp_.enabled()) {
                lc.tp = tp_.group->counts() - rebuilt_.tp;
                const int ran = listedCount(lc.tp, plan_.sequence_parallel);
                if (part && !noop_) tp_backlog_[{in.segment, in.mb}] = PartBacklog{ran, start, end};
                lc.accounted = part || ran == 0;
            }
            if (part) {
                if (!noop_ && gathered > 0) zero_backlog_[{in.segment, in.mb}] = PartBacklog{gathered, start, end};
                lc.zero_accounted = true;
            }
            last_compute_ = lc;
            sampleMemory();
        } else if (!posted_ahead_.erase(pc_)) {
            (this->*h)(in);
            if (isRecv(in.kind)) posted_recvs_.back().needed_at = nextCompute(pc_);
        }
        pollSends();
        buckets_->poll();
    }
    if (!last_compute_.accounted) throw unlisted();
    if (!last_compute_.zero_accounted) throw unlisted_gathers();
    requireListed(zero_backlog_, "gathered", "ZeRO-3 bucket(s)", "ZeroGather");
    requireListed(tp_backlog_, "ran", "tp collective(s)", "TensorParallel");
    if (!recomputed_.empty())
        throw Error("rank " + std::to_string(rank_) + ": the Recompute of segment " + std::to_string(recomputed_.begin()->first.first) +
                    ", micro-batch " + std::to_string(recomputed_.begin()->first.second) + " was never followed by its backward");
    waitPostedReceives(stream_->size());
    for (Posted& p : posted_sends_) {
        p.work.wait();
        if (trace_.events[p.event].end_s < 0) trace_.events[p.event].end_s = now();
    }
    posted_sends_.clear();

    StepResult r = std::move(pending_);
    pending_ = StepResult{};
    const int last = static_cast<int>(program_.segments.size()) - 1;
    if (hosts(last)) {
        double loss = loss_sum_;
        if (stage_replicas_ > 1) {
            const int group = dpGroup(last);
            Tensor t = torch::tensor({loss}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
            comm_.allReduceSum(t, group).wait();
            loss = t.item<double>();
        }
        loss /= plan_.dp;  // the mean over the iteration's dp x micro_batches micro-batches
        r.loss = loss;
    }
    r.time_s = now();
    sampleMemory();
    r.trace = std::move(trace_);
    return r;
}

std::vector<std::pair<std::string, Tensor>> Executor::namedParameters() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (const auto& [s, st] : stages_)
        for (auto& item : st->namedParameters()) out.push_back(std::move(item));
    return out;
}

std::vector<std::pair<std::string, Tensor>> Executor::wholeNamedParameters() const {
    if (!tp_.enabled()) return namedParameters();
    std::vector<std::pair<std::string, Tensor>> out;
    for (const auto& [s, st] : stages_) {
        const auto splits = st->parameterSplits();
        for (auto& [name, t] : st->namedParameters()) {
            const auto it = splits.find(name);
            out.emplace_back(name, it == splits.end() ? t.detach() : fullParameter(t, it->second, *tp_.group));
        }
    }
    return out;
}

void Executor::saveState(torch::serialize::OutputArchive& a) const {
    for (const auto& [s, st] : stages_) {
        for (const auto& [name, t] : st->namedParameters()) a.write("param/" + name, t.detach().to(torch::kCPU));
        for (const auto& [name, t] : st->namedBuffers()) a.write("buffer/" + name, t.detach().to(torch::kCPU));
    }
    // Copies of tied weights owned on another rank have trained like their owner: keep them too.
    for (size_t i = 0; i < tied_replicas_.size(); ++i) a.write("tied/" + std::to_string(i), tied_replicas_[i].detach().to(torch::kCPU));
    torch::serialize::OutputArchive opt;
    optimizer_->save(opt);
    a.write("optimizer", opt);
    a.write("loss_scale", torch::tensor({scaler_.scale(), static_cast<double>(scaler_.goodSteps())}, torch::kDouble));
}

void Executor::loadState(torch::serialize::InputArchive& a) {
    torch::NoGradGuard no_grad;
    for (auto& [b, z] : zero_) allocateBucket(z);  // ZeRO-3: released until used
    auto restore = [&](const std::string& key, const Tensor& into) {
        Tensor t;
        if (!a.try_read(key, t)) throw Error("the checkpoint has no " + key + " (written for another plan or model?)");
        if (t.sizes() != into.sizes()) throw Error("the checkpoint's " + key + " has another shape than the model's");
        into.copy_(t);
    };
    for (const auto& [s, st] : stages_) {
        for (const auto& [name, t] : st->namedParameters()) restore("param/" + name, t);
        for (const auto& [name, t] : st->namedBuffers()) restore("buffer/" + name, t);
    }
    for (size_t i = 0; i < tied_replicas_.size(); ++i) restore("tied/" + std::to_string(i), tied_replicas_[i]);
    // ZeRO: this replica's shards are the restored parameters' (the checkpoint holds the whole
    // parameters and this rank's optimizer state, of its shards only).
    for (auto& [b, z] : zero_) {
        Tensor flat = torch::zeros({z.shard * plan_.dp}, z.master.options().requires_grad(false));
        for (size_t i = 0; i < z.params.size(); ++i) flat.narrow(0, z.offsets[i], z.params[i].numel()).copy_(z.params[i].detach().reshape({-1}));
        z.master.copy_(flat.narrow(0, replica_ * z.shard, z.shard));
        if (zero_stage_ >= 3) releaseBucket(z);
    }
    torch::serialize::InputArchive opt;
    if (!a.try_read("optimizer", opt)) throw Error("the checkpoint has no optimizer state");
    optimizer_->load(opt);
    Tensor scale;
    // [scale, good steps]; checkpoints before the good steps were kept hold the scale alone.
    if (a.try_read("loss_scale", scale))
        scaler_.restore(scale[0].item<double>(), scale.numel() > 1 ? static_cast<int>(scale[1].item<double>()) : 0);
}

std::string Executor::streamString() const {
    std::string s;
    for (const Instr& in : *stream_) s += (s.empty() ? "" : " ") + in.str();
    return s;
}

std::vector<int> Executor::hostedSegments() const {
    std::vector<int> out;
    for (const auto& [s, st] : stages_) out.push_back(s);
    return out;
}

}  // namespace hippie::engine
