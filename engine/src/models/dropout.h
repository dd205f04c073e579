#pragma once
// Dropout as the engine trains it (architecture.h, Dropout), the same however a plan splits the
// model. A mask element is not a draw from a generator but a hash of (the run's seed, the step,
// the op's Graph name, the sample's index in the step's global batch, the element's index in
// that sample's whole tensor). So a pipeline stage, a data-parallel replica, a micro-batch, a
// tensor-parallel rank (its heads) and a sequence-parallel rank (its tokens) each compute
// exactly their part of the mask one process computes, and recomputation computes it again
// with no generator state saved. The cost: about fifteen passes of 64-bit integer arithmetic
// over the masked tensor where PyTorch's dropout makes one (on this project's 2-core CPU, in
// cache-sized chunks, a little faster than torch::dropout; on a GPU, more memory traffic).
#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace hippie::engine {

// Which samples the running forward holds: set by the executor around a micro-batch's forward,
// read by the layers (thread-local; a rebuild installs the stream its forward saw).
struct DropoutStream {
    uint64_t seed = 0;
    int64_t step = 0;
    int64_t first_sample = 0;  // index in the step's global batch of the micro-batch's first sample
};

class DropoutScope {
public:
    explicit DropoutScope(const DropoutStream& stream);
    ~DropoutScope();
    DropoutScope(const DropoutScope&) = delete;
    DropoutScope& operator=(const DropoutScope&) = delete;

private:
    DropoutStream saved_;
};

// The innermost scope's stream ({0, 0, 0} outside any).
DropoutStream currentDropoutStream();

// Where a mask is drawn: the op's Graph name ("block3.attn_dropout") and the index, in one
// sample's whole tensor (flattened), of the first element this rank holds of it: 0 unless
// tensor or sequence parallelism gives the rank a block of it (rank k of t: k x the rank's
// elements a sample, as heads and sequence parts are contiguous).
struct DropoutSite {
    std::string op;
    int64_t offset = 0;
};

// Keep-mask of x [b, ...] (true: kept), each sample's elements a contiguous block of its whole
// tensor starting at site.offset, with probability 1 - p of keeping.
torch::Tensor dropoutKeep(const torch::Tensor& x, double p, const DropoutSite& site, const DropoutStream& stream);

// Inverted dropout of x with that mask: kept elements scaled by 1 / (1 - p), the others 0;
// autograd keeps the mask (one byte an element) and not x. x itself when p is 0.
torch::Tensor applyDropout(const torch::Tensor& x, const torch::Tensor& keep, double p);

// Both, with the current stream; x itself when p is 0 or `training` is false.
torch::Tensor dropout(const torch::Tensor& x, double p, const DropoutSite& site, bool training);

}  // namespace hippie::engine
