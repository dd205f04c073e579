#include "engine/src/runtime/grad_buckets.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace hippie::engine {

using torch::Tensor;

struct GradBuckets::Bucket {
    int id = 0;
    int segment = 0;
    int group = 0;
    std::vector<Tensor> params;
    int ready = 0;
    bool launched = false;
    double launch_s = 0;
    double end_s = -1;
    // The bucket's gradients side by side, all-reduced in place. Allocated once and reused
    // every step: a fresh tensor of tens of megabytes each step costs a page fault per 4 KiB
    // (the kernel zeroes every new page), which on a virtual machine took longer than the
    // all-reduce itself.
    Tensor flat;
    Pending work;
};

// Runs after a parameter's AccumulateGrad node: its .grad then holds the sum so far.
class GradBuckets::Hook : public torch::autograd::FunctionPostHook {
public:
    Hook(GradBuckets* owner, int id) : owner_(owner), id_(id) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list& /*inputs*/) override {
        owner_->onGradReady(id_);
        return outputs;
    }

private:
    GradBuckets* owner_;
    int id_;
};

GradBuckets::GradBuckets(Comm& comm, int replicas, Clock clock) : comm_(comm), replicas_(replicas), clock_(std::move(clock)) {}

GradBuckets::~GradBuckets() = default;

void GradBuckets::addBucket(int id, int segment, int group, std::vector<Tensor> params) {
    auto b = std::make_unique<Bucket>();
    b->id = id;
    b->segment = segment;
    b->group = group;
    b->params = std::move(params);
    for (const Tensor& p : b->params) {
        auto acc = torch::autograd::impl::grad_accumulator(p);
        acc->add_post_hook(std::make_unique<Hook>(this, id));
        accumulators_.push_back(acc);
    }
    buckets_[id] = std::move(b);
    auto& ids = of_segment_[segment];
    ids.push_back(id);
    std::sort(ids.begin(), ids.end());
}

bool GradBuckets::hasParams(int id) const { return buckets_.count(id) && !buckets_.at(id)->params.empty(); }

void GradBuckets::beginStep() {
    std::lock_guard lock(mutex_);
    for (auto& [id, b] : buckets_) {
        b->ready = 0;
        b->launched = false;
        b->end_s = -1;
        b->work = Pending();
    }
}

void GradBuckets::arm(int segment) {
    std::lock_guard lock(mutex_);
    armed_[segment] = true;
}

void GradBuckets::disarm(int segment) {
    std::lock_guard lock(mutex_);
    armed_[segment] = false;
}

void GradBuckets::onGradReady(int id) {
    std::lock_guard lock(mutex_);
    Bucket& b = *buckets_.at(id);
    if (!armed_[b.segment] || b.launched) return;
    ++b.ready;
    if (b.ready >= static_cast<int>(b.params.size())) launchReadyInOrder(b.segment);
}

void GradBuckets::launchReadyInOrder(int segment) {
    for (int id : of_segment_[segment]) {
        Bucket& b = *buckets_.at(id);
        if (b.launched) continue;
        if (b.ready < static_cast<int>(b.params.size())) break;
        launchLocked(b);
    }
}

// Whether a launched bucket all-reduces its gradients (and so fills `flat`).
bool GradBuckets::reduces(const Bucket& b) const { return !b.params.empty() && replicas_ >= 2; }

void GradBuckets::launchLocked(Bucket& b) {
    b.launched = true;
    b.launch_s = clock_();
    if (!reduces(b)) return;
    int64_t numel = 0;
    for (const Tensor& p : b.params) numel += p.numel();
    // The gradients' type and device (mixed precision keeps them in the parameters').
    const Tensor& first = b.params.front();
    const auto options = first.grad().defined() ? first.grad().options() : first.options();
    if (!b.flat.defined() || b.flat.numel() != numel || b.flat.dtype() != options.dtype() || b.flat.device() != options.device())
        b.flat = torch::empty({numel}, options);
    int64_t offset = 0;
    for (const Tensor& p : b.params) {
        Tensor part = b.flat.narrow(0, offset, p.numel());
        if (p.grad().defined()) part.copy_(p.grad().reshape({-1}));
        else part.zero_();
        offset += p.numel();
    }
    b.work = comm_.allReduceSum(b.flat, b.group);
}

void GradBuckets::launch(int id) {
    std::lock_guard lock(mutex_);
    Bucket& b = *buckets_.at(id);
    if (b.launched) return;
    // Launch order within a segment must be the same on every replica: earlier buckets first.
    for (int other : of_segment_[b.segment]) {
        if (other == id) break;
        if (!buckets_.at(other)->launched) launchLocked(*buckets_.at(other));
    }
    launchLocked(b);
}

bool GradBuckets::launched(int id) const {
    std::lock_guard lock(mutex_);
    return buckets_.at(id)->launched;
}

double GradBuckets::launchTime(int id) const {
    std::lock_guard lock(mutex_);
    return buckets_.at(id)->launch_s;
}

void GradBuckets::poll() {
    std::lock_guard lock(mutex_);
    for (auto& [id, b] : buckets_)
        if (b->launched && b->end_s < 0 && b->work.completed()) b->end_s = clock_();
}

std::vector<std::pair<int, double>> GradBuckets::finish() {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<int, double>> ends;
    for (auto& [id, b] : buckets_) {
        if (!b->launched) continue;
        b->work.wait();
        if (b->end_s < 0) b->end_s = clock_();
        ends.emplace_back(id, b->end_s);
        if (!reduces(*b)) continue;
        b->flat.div_(replicas_);
        int64_t offset = 0;
        for (const Tensor& p : b->params) {
            const Tensor avg = b->flat.narrow(0, offset, p.numel()).view_as(p);
            offset += p.numel();
            if (p.grad().defined()) p.mutable_grad().copy_(avg);
            else p.mutable_grad() = avg.clone();
        }
    }
    return ends;
}

}  // namespace hippie::engine
