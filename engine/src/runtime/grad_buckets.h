#pragma once
// Gradient buckets and their all-reduce. Each bucket of the Program maps to the parameters of
// the layers it completes; hooks on the parameters' gradient accumulators count gradients as
// they become final during an armed backward (the last micro-batch's, in the hippie
// schedule), and a bucket's all-reduce is launched the moment its last gradient lands, in
// bucket order, while backward goes on. The optimizer step waits for all of them.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include "engine/src/comm/comm.h"

namespace hippie::engine {

class GradBuckets {
public:
    using Clock = std::function<double()>;  // seconds since the step started
    GradBuckets(Comm& comm, int replicas, Clock clock);
    ~GradBuckets();

    // Bucket `id` of `segment`, all-reduced in `group`. Buckets of one segment are launched in
    // increasing id. A bucket may hold no parameters (its all-reduce is then a no-op).
    void addBucket(int id, int segment, int group, std::vector<torch::Tensor> params);
    bool hasParams(int id) const;

    void beginStep();
    void arm(int segment);     // hooks of this segment's buckets launch all-reduces
    void disarm(int segment);
    void launch(int id);       // launches it now unless already launched
    bool launched(int id) const;
    double launchTime(int id) const;
    // Polls the launched all-reduces, stamping completion times; cheap.
    void poll();
    // Waits for every launched all-reduce, averages the gradients over the replicas and writes
    // them back to the parameters. Returns (bucket, end time) for each.
    std::vector<std::pair<int, double>> finish();

private:
    struct Bucket;
    void onGradReady(int id);
    void launchLocked(Bucket& b);
    bool reduces(const Bucket& b) const;
    void launchReadyInOrder(int segment);

    class Hook;
    Comm& comm_;
    int replicas_;
    Clock clock_;
    std::map<int, std::unique_ptr<Bucket>> buckets_;
    std::map<int, std::vector<int>> of_segment_;
    std::map<int, bool> armed_;
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // keep the hooked nodes alive
    mutable std::recursive_mutex mutex_;
};

}  // namespace hippie::engine
