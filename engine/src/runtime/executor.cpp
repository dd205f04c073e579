#include "engine/src/runtime/executor.h"

#include <algorithm>
#include <cmath>

#include "engine/src/device/device.h"
#include "planners/common/error.h"

namespace hippie::engine {

using torch::Tensor;

namespace {

constexpr int kMaxMicroBatches = 1 << 20;
constexpr int kConnectTag = 1 << 30;  // above every tagOf() of a real plan

int tagOf(bool grad, int segment, int mb) { return (segment * kMaxMicroBatches + mb) * 2 + (grad ? 1 : 0); }

std::string shapeKey(int segment, int replica) { return "shape/" + std::to_string(segment) + "/" + std::to_string(replica); }

std::string shapeToString(const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : ",") + std::to_string(d);
    return out;
}

std::vector<int64_t> shapeFromString(const std::string& s) {
    std::vector<int64_t> out;
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t next = s.find(',', pos);
        out.push_back(std::stoll(s.substr(pos, next - pos)));
        if (next == std::string::npos) break;
        pos = next + 1;
    }
    return out;
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
      scaler_(plan.model.precision == Precision::FP16) {
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
    table_[static_cast<size_t>(InstrKind::OptimizerStep)] = &Executor::onOptimizerStep;

    link_order_problem_ = checkLinkOrder(program, rank_);
    if (!link_order_problem_.empty() && comm_.backend() == "nccl")
        throw Error("this plan's " + std::string(toString(plan.schedule)) + " program cannot run on NCCL, which matches transfers by order: " +
                    link_order_problem_ + "; use --comm gloo");
    buildStages(graph);
    // All-reduce groups this rank belongs to, created in id order on every rank.
    for (size_t g = 0; g < program.groups.size(); ++g) {
        const auto& members = program.groups[g];
        if (members.size() > 1 && std::find(members.begin(), members.end(), rank_) != members.end())
            comm_.addGroup(static_cast<int>(g), members);
    }
    // One more group of every rank, after the Program's (same id everywhere): the global
    // gradient norm and the fp16 overflow check are sums over all stages and replicas.
    if (comm_.worldSize() > 1 && (training_.clip_grad_norm > 0 || scaler_.enabled())) {
        world_group_ = static_cast<int>(program.groups.size());
        std::vector<int> all;
        for (int r = 0; r < comm_.worldSize(); ++r) all.push_back(r);
        comm_.addGroup(world_group_, all);
    }
    connectLinks();
    agreeShapes();
    buildBuckets(graph);
    buildOptimizer();
}

Executor::~Executor() = default;

void Executor::buildStages(const Graph& graph) {
    const int last_segment = static_cast<int>(program_.segments.size()) - 1;
    for (size_t s = 0; s < program_.segments.size(); ++s) {
        const auto& devs = program_.segment_devices[s];
        const auto it = std::find(devs.begin(), devs.end(), rank_);
        if (it == devs.end()) continue;
        replica_ = static_cast<int>(it - devs.begin());
        const StageRange range = plan_.stages[s];
        std::vector<bool> recompute(static_cast<size_t>(range.last_layer - range.first_layer + 1), false);
        for (int op : program_.segments[s].ops)
            if (program_.recompute_op[static_cast<size_t>(op)])
                recompute[static_cast<size_t>(graph.ops[static_cast<size_t>(op)].layer - range.first_layer)] = true;
        auto layers = model_.layers(range.first_layer, range.last_layer, seed_, device_);
        const int seg = static_cast<int>(s);
        stages_[seg] = std::make_unique<Stage>(seg, range.first_layer, std::move(layers), recompute, seg > 0, seg == last_segment);
        max_stashed_[seg] = 0;
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
    // Segment s learns its input shape from segment s-1 of its replica (through the store),
    // runs one forward without autograd, and publishes its output shape: agreed once, here.
    for (auto& [s, st] : stages_) {
        std::vector<int64_t> in_shape;
        torch::ScalarType dtype = torch::kFloat;
        if (s == 0) {
            const Batch probe = data_.batch(0, micro_batch_size_);
            in_shape = probe.inputs.sizes().vec();
            dtype = probe.inputs.scalar_type();
        } else {
            in_shape = shapeFromString(comm_.storeGet(shapeKey(s - 1, replica_)));
            dtype = static_cast<torch::ScalarType>(std::stoi(comm_.storeGet("dtype/" + shapeKey(s - 1, replica_))));
            out_shape_[s - 1] = in_shape;
            out_dtype_[s - 1] = dtype;
        }
        torch::ScalarType out_dtype = torch::kFloat;
        {
            AutocastScope autocast(precision_, device_);  // stages exchange what autocast computes
            out_shape_[s] = st->probeOutputShape(in_shape, dtype, device_, &out_dtype);
        }
        out_dtype_[s] = out_dtype;
        comm_.storeSet("dtype/" + shapeKey(s, replica_), std::to_string(static_cast<int>(out_dtype)));
        comm_.storeSet(shapeKey(s, replica_), shapeToString(out_shape_[s]));
    }
}

void Executor::buildBuckets(const Graph& graph) {
    buckets_ = std::make_unique<GradBuckets>(comm_, plan_.dp, [this] { return now(); });
    for (auto& [s, st] : stages_) {
        std::vector<int> ids;
        for (size_t b = 0; b < program_.buckets.size(); ++b)
            if (program_.buckets[b].segment == s) ids.push_back(static_cast<int>(b));
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
        }
        const int group = [&] {
            for (size_t g = 0; g < program_.groups.size(); ++g)
                if (program_.groups[g] == program_.segment_devices[static_cast<size_t>(s)]) return static_cast<int>(g);
            return -1;
        }();
        for (int b : ids) buckets_->addBucket(b, s, group, params_of_bucket[b]);
    }
}

void Executor::buildOptimizer() {
    std::vector<Tensor> params;
    for (auto& [s, st] : stages_)
        for (const Tensor& p : st->parameters()) params.push_back(p);
    const int64_t param_bytes = bytesOf(params);
    base_lr_ = training_.lr > 0 ? training_.lr : defaultLearningRate(plan_.optimizer);
    optimizer_ = makeOptimizer(plan_.optimizer, params, base_lr_, training_.weight_decay);
    // Parameters and gradients, plus the optimizer's state per parameter.
    switch (plan_.optimizer) {
    case Optimizer::SGD: static_bytes_ = 2 * param_bytes; break;
    case Optimizer::SGDMomentum: static_bytes_ = 3 * param_bytes; break;
    case Optimizer::Adam:
    case Optimizer::AdamW: static_bytes_ = 4 * param_bytes; break;
    }
}

bool Executor::prepareGradients(StepResult& r) {
    const std::vector<Tensor> params = [this] {
        std::vector<Tensor> out;
        for (auto& [s, st] : stages_)
            for (const Tensor& p : st->parameters()) out.push_back(p);
        return out;
    }();
    r.loss_scale = scaler_.scale();
    if (scaler_.enabled()) {
        torch::NoGradGuard no_grad;
        for (const Tensor& p : params)
            if (p.grad().defined()) p.grad().div_(scaler_.scale());
    }
    if (training_.clip_grad_norm <= 0 && !scaler_.enabled()) return true;
    // After the buckets, every replica of a stage holds the same (averaged) gradients, so the
    // sum over all ranks counts each stage dp times.
    double local[2] = {squaredGradNorm(params) / plan_.dp, 0};
    if (scaler_.enabled())
        for (const Tensor& p : params)
            if (p.grad().defined() && !torch::isfinite(p.grad()).all().item<bool>()) local[1] = 1;
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
    if (training_.clip_grad_norm > 0) scaleGradsToNorm(params, norm, training_.clip_grad_norm);
    return true;
}

Stage& Executor::stage(int segment) {
    auto it = stages_.find(segment);
    TORCH_CHECK(it != stages_.end(), "rank ", rank_, " does not hold segment ", segment);
    return *it->second;
}

int Executor::deviceOf(int segment) const {
    return program_.segment_devices[static_cast<size_t>(segment)][static_cast<size_t>(replica_)];
}

double Executor::now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count(); }

size_t Executor::record(const Instr& in, double start, double end) {
    TraceEvent e;
    e.device = rank_;
    e.start_s = start;
    e.end_s = end;
    e.kind = in.kind;
    e.stage = in.kind == InstrKind::AllReduce ? program_.buckets[static_cast<size_t>(in.bucket)].segment : in.segment;
    e.mb = in.mb;
    e.peer = in.peer;
    e.bytes = in.bytes;
    if (in.kind == InstrKind::AllReduce) e.bytes = program_.buckets[static_cast<size_t>(in.bucket)].bytes;
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

void Executor::waitPostedReceives() {
    for (Posted& p : posted_recvs_) {
        p.work.wait();
        trace_.events[p.event].end_s = now();
    }
    posted_recvs_.clear();
}

void Executor::pollSends() {
    for (Posted& p : posted_sends_)
        if (trace_.events[p.event].end_s < 0 && p.work.completed()) trace_.events[p.event].end_s = now();
}

Stage::LossFn Executor::lossFor(int mb) {
    const Tensor targets = targets_.narrow(0, int64_t{mb} * micro_batch_size_, micro_batch_size_);
    const double scale = scaler_.scale() / plan_.micro_batches;  // fp16: the loss scale rides on the loss
    return [this, targets, scale](const Tensor& out) { return model_.loss(out, targets) * scale; };
}

Tensor Executor::outputGrad(int segment, int mb) {
    if (stage(segment).computesLoss()) return Tensor();
    auto it = recv_grad_.find({segment, mb});
    TORCH_CHECK(it != recv_grad_.end(), "segment ", segment, " micro-batch ", mb, ": output gradient never arrived");
    Tensor g = it->second;
    recv_grad_.erase(it);
    return g;
}

void Executor::storeInputGrad(const Stage& st, int mb, const Tensor& grad) {
    if (!st.hasProducer()) return;
    const int producer = st.segment() - 1;
    // A producer on this rank (interleaved chunks with one device) takes it directly.
    if (hosts(producer)) recv_grad_[{producer, mb}] = grad;
    else input_grad_[{producer, mb}] = grad;
}

// ---- compute ----------------------------------------------------------------------------------

void Executor::onForward(const Instr& in) {
    Stage& st = stage(in.segment);
    Tensor x;
    if (!st.hasProducer()) {
        x = inputs_.narrow(0, int64_t{in.mb} * micro_batch_size_, micro_batch_size_);
    } else if (hosts(in.segment - 1)) {
        x = stage(in.segment - 1).output(in.mb);
    } else {
        auto it = recv_activation_.find({in.segment - 1, in.mb});
        TORCH_CHECK(it != recv_activation_.end(), "segment ", in.segment, " micro-batch ", in.mb, ": activation never arrived");
        x = it->second;
        recv_activation_.erase(it);
    }
    {
        AutocastScope autocast(precision_, device_);
        st.forward(in.mb, x, lossFor(in.mb));
    }
    if (st.computesLoss()) loss_sum_ += st.lossValue(in.mb) / scaler_.scale();
}

void Executor::onRecompute(const Instr& in) {
    AutocastScope autocast(precision_, device_);
    stage(in.segment).recompute(in.mb, lossFor(in.mb));
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
    const Tensor og = outputGrad(in.segment, in.mb);
    if (in.bucket >= 0) buckets_->arm(in.segment);
    const Tensor ig = st.backward(in.mb, og);
    if (in.bucket >= 0) buckets_->disarm(in.segment);
    storeInputGrad(st, in.mb, ig);
}

void Executor::onBackwardInput(const Instr& in) {
    backward_started_.insert({in.segment, in.mb});
    Stage& st = stage(in.segment);
    const Tensor ig = st.backwardInput(in.mb, outputGrad(in.segment, in.mb));
    storeInputGrad(st, in.mb, ig);
}

void Executor::onBackwardWeight(const Instr& in) {
    if (!weight_done_.insert({in.segment, in.mb}).second) {
        noop_ = true;
        return;
    }
    if (in.bucket >= 0) buckets_->arm(in.segment);
    stage(in.segment).backwardWeight(in.mb);
    if (in.bucket >= 0) buckets_->disarm(in.segment);
}

void Executor::onOptimizerStep(const Instr&) {
    for (const auto& [bucket, end] : buckets_->finish()) {
        auto it = allreduce_event_.find(bucket);
        if (it != allreduce_event_.end()) trace_.events[it->second].end_s = end;
    }
    pending_.lr = learningRate(training_, base_lr_, step_index_, total_steps_);
    setLearningRate(*optimizer_, pending_.lr);
    if (prepareGradients(pending_)) optimizer_->step();
}

// ---- communication ----------------------------------------------------------------------------

void Executor::onSendActivation(const Instr& in) {
    Stage& st = stage(in.segment);
    const size_t ev = record(in, now(), -1);
    posted_sends_.push_back({comm_.send(st.output(in.mb).detach(), in.peer, tagOf(false, in.segment, in.mb)), ev});
    st.releaseOutput(in.mb);
}

void Executor::onSendGrad(const Instr& in) {
    auto it = input_grad_.find({in.segment, in.mb});
    TORCH_CHECK(it != input_grad_.end(), "segment ", in.segment, " micro-batch ", in.mb, ": no input gradient to send");
    const size_t ev = record(in, now(), -1);
    posted_sends_.push_back({comm_.send(it->second, in.peer, tagOf(true, in.segment, in.mb)), ev});
    input_grad_.erase(it);
}

void Executor::onRecvActivation(const Instr& in) {
    Tensor t = torch::empty(out_shape_.at(in.segment), torch::TensorOptions().dtype(out_dtype_.at(in.segment)).device(device_));
    recv_activation_[{in.segment, in.mb}] = t;
    const size_t ev = record(in, now(), -1);
    posted_recvs_.push_back({comm_.recv(t, in.peer, tagOf(false, in.segment, in.mb)), ev});
}

void Executor::onRecvGrad(const Instr& in) {
    Tensor t = torch::empty(out_shape_.at(in.segment), torch::TensorOptions().dtype(out_dtype_.at(in.segment)).device(device_));
    recv_grad_[{in.segment, in.mb}] = t;
    const size_t ev = record(in, now(), -1);
    posted_recvs_.push_back({comm_.recv(t, in.peer, tagOf(true, in.segment, in.mb)), ev});
}

void Executor::onAllReduce(const Instr& in) {
    buckets_->launch(in.bucket);
    allreduce_event_[in.bucket] = record(in, buckets_->launchTime(in.bucket), -1);
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
    input_grad_.clear();
    backward_started_.clear();
    weight_done_.clear();
    allreduce_event_.clear();
    loss_sum_ = 0;
    for (auto& [s, st] : stages_)
        for (Tensor& p : st->parameters()) p.mutable_grad() = Tensor();
    buckets_->beginStep();

    const Batch batch = data_.batch(index, plan_.global_batch);
    const int64_t per_replica = plan_.global_batch / plan_.dp;
    inputs_ = batch.inputs.narrow(0, replica_ * per_replica, per_replica).to(device_);
    targets_ = batch.targets.narrow(0, replica_ * per_replica, per_replica).to(device_);
    sampleMemory();

    for (const Instr& in : *stream_) {
        const Handler h = table_[static_cast<size_t>(in.kind)];
        if (isCompute(in.kind)) {
            waitPostedReceives();
            const double start = now();
            noop_ = false;
            (this->*h)(in);
            synchronizeDevice(device_);  // CUDA: the event ends when its kernels have
            record(in, start, noop_ ? start : now());  // a bucket part whose backward already ran
            sampleMemory();
        } else {
            (this->*h)(in);
        }
        pollSends();
        buckets_->poll();
    }
    waitPostedReceives();
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
        if (plan_.dp > 1) {
            int group = -1;
            for (size_t g = 0; g < program_.groups.size(); ++g)
                if (program_.groups[g] == program_.segment_devices[static_cast<size_t>(last)]) group = static_cast<int>(g);
            Tensor t = torch::tensor({loss}, torch::TensorOptions().dtype(torch::kDouble).device(device_));
            comm_.allReduceSum(t, group).wait();
            loss = t.item<double>() / plan_.dp;
        }
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

void Executor::saveState(torch::serialize::OutputArchive& a) const {
    for (const auto& [s, st] : stages_) {
        for (const auto& [name, t] : st->namedParameters()) a.write("param/" + name, t.detach().to(torch::kCPU));
        for (const auto& [name, t] : st->namedBuffers()) a.write("buffer/" + name, t.detach().to(torch::kCPU));
    }
    torch::serialize::OutputArchive opt;
    optimizer_->save(opt);
    a.write("optimizer", opt);
    a.write("loss_scale", torch::tensor({scaler_.scale()}, torch::kDouble));
}

void Executor::loadState(torch::serialize::InputArchive& a) {
    torch::NoGradGuard no_grad;
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
    torch::serialize::InputArchive opt;
    if (!a.try_read("optimizer", opt)) throw Error("the checkpoint has no optimizer state");
    optimizer_->load(opt);
    Tensor scale;
    if (a.try_read("loss_scale", scale)) scaler_.setScale(scale.item<double>());
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
