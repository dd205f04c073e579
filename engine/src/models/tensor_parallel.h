#pragma once
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019; sequence parallelism, Korthikanti et
// al. 2022) as LibTorch building blocks: the conjugate operators that move activations into
// and out of a tensor-parallel region, and the layers split over the `t` ranks of a group.
//
// - f "copy to the tp region": identity forward, all-reduce of the gradient backward. It
//   stands before a column-parallel layer whose input every rank holds whole.
// - g "reduce from the tp region": all-reduce forward, identity backward. It stands after a
//   row-parallel layer, whose output is a partial sum on each rank.
// - With sequence parallelism the activations between those layers are split along the
//   sequence (dimension 1) instead of replicated: f becomes an all-gather along the sequence
//   (reduce-scatter of the gradient backward) and g a reduce-scatter (all-gather backward).
//
// Every split layer is made from the layer a one-process run builds (the same seed, the same
// initialisation): rank k keeps exactly its slice of each parameter, so the t ranks together
// hold exactly the one-process parameters, and fullParameter() puts them back together.
//
// Collectives are synchronous (each waits before the layer goes on: they sit on the critical
// path of the compute that runs them) and counted by the group, so the executor can check
// them against the Program's TensorParallel instructions.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace hippie::engine {

// The collectives of one tensor-parallel group, as seen by one member. Implemented over c10d
// by the runtime (runtime/tp_group.h) and over threads by the layer tests.
class TpGroup {
public:
    TpGroup(int rank, int size) : rank_(rank), size_(size) {}
    virtual ~TpGroup() = default;
    int rank() const { return rank_; }
    int size() const { return size_; }

    // What kind of collective, for the count: the activation collectives of the f and g
    // operators (what the Program's TensorParallel instructions list), and the small
    // all-reduces of the vocabulary-parallel cross-entropy (a max and two sums per token).
    // Other: gathers of whole parameters (dumps), counted nowhere.
    enum class Purpose { Activation, LossStatistics, Other };
    struct Counts {
        int all_reduces = 0;       // activation all-reduces (tp without sequence parallelism)
        int reduce_scatters = 0;   // activation reduce-scatters (sequence parallelism)
        int all_gathers = 0;       // activation all-gathers (sequence parallelism)
        int loss_all_reduces = 0;  // cross-entropy statistics
        int64_t bytes = 0;         // whole tensors of the activation collectives
        bool operator==(const Counts&) const = default;
    };
    const Counts& counts() const { return counts_; }
    void resetCounts() { counts_ = Counts{}; }

    // Sum (or maximum) over the group; returns a new tensor.
    torch::Tensor allReduceSum(const torch::Tensor& t, Purpose why = Purpose::Activation);
    torch::Tensor allReduceMax(const torch::Tensor& t, Purpose why = Purpose::LossStatistics);
    // The members' tensors (same shape) concatenated along `dim`, in member order.
    torch::Tensor allGather(const torch::Tensor& t, int64_t dim, Purpose why = Purpose::Activation);
    // The sum over the group, cut into size() parts along `dim`: this member's part. Gloo in
    // LibTorch 1.13 has no reduce-scatter: it is composed from an all-reduce of which each
    // member keeps its part (twice the traffic of a real one; counted as one reduce-scatter).
    torch::Tensor reduceScatter(const torch::Tensor& t, int64_t dim);

protected:
    // In place, over the group: sum or max of `t` (contiguous).
    virtual void allReduceInPlace(torch::Tensor& t, bool max) = 0;
    // `out` (size() x t.numel(), contiguous) receives every member's `t` in member order.
    virtual void allGatherFlat(const torch::Tensor& t, torch::Tensor& out) = 0;

private:
    void count(Purpose why, int Counts::*field, int64_t bytes);
    int rank_, size_;
    Counts counts_;
};

// What a layer needs to know to be split: its group (null: not split) and whether the
// replicated regions are split along the sequence.
struct TpContext {
    std::shared_ptr<TpGroup> group;
    bool sequence_parallel = false;
    int size() const { return group ? group->size() : 1; }
    int rank() const { return group ? group->rank() : 0; }
    bool enabled() const { return size() > 1; }
};

// How a split parameter is cut (LayerModule::tensorParallelSplits). The whole tensor is
// `chunks` equal blocks along `dim` (a fused QKV projection: 3), each cut into size() equal
// parts; rank k holds part k of every block, concatenated.
struct ParamSplit {
    int64_t dim = 0;
    int64_t chunks = 1;
};
torch::Tensor shardOf(const torch::Tensor& whole, const ParamSplit& split, int rank, int size);
// The whole tensor from every rank's shard (in rank order).
torch::Tensor wholeOf(const std::vector<torch::Tensor>& shards, const ParamSplit& split);
// The whole parameter from this rank's shard: an all-gather over the group (every member
// calls it for the same parameter at the same point).
torch::Tensor fullParameter(const torch::Tensor& shard, const ParamSplit& split, TpGroup& group);

// ---- the conjugate operators (autograd functions) --------------------------------------------
// Gradients each of them computed in a first backward are reused when the same graph runs
// backward again (zb-h1's weight pass re-runs the graph the input pass kept): the second pass
// then communicates nothing.

// f: identity forward, all-reduce backward.
torch::Tensor copyToTensorParallel(const torch::Tensor& x, TpGroup& group);
// g: all-reduce forward, identity backward.
torch::Tensor reduceFromTensorParallel(const torch::Tensor& x, TpGroup& group);
// Sequence parallelism: all-gather along `dim` forward, reduce-scatter backward (f's twin).
torch::Tensor gatherFromSequenceParallel(const torch::Tensor& x, TpGroup& group, int64_t dim);
// Sequence parallelism: reduce-scatter along `dim` forward, all-gather backward (g's twin).
torch::Tensor reduceScatterToSequenceParallel(const torch::Tensor& x, TpGroup& group, int64_t dim);
// The input of a column-parallel layer: f, or the all-gather with sequence parallelism.
torch::Tensor enterTensorParallel(const torch::Tensor& x, const TpContext& tp);
// The output of a row-parallel layer: g, or the reduce-scatter with sequence parallelism.
torch::Tensor leaveTensorParallel(const torch::Tensor& x, const TpContext& tp);
// This rank's part of `x` along the sequence (dimension 1), no communication (positions).
torch::Tensor sequenceShard(const torch::Tensor& x, const TpContext& tp);

// ---- split layers ----------------------------------------------------------------------------
// Each keeps torch::nn::Linear's parameter names ("weight", "bias"), so a model's parameter
// names are the same split or not.

// Y = X A + b with A split by output columns: rank k computes its part of the outputs from the
// whole input (entered through f, or all-gathered along the sequence). `chunks`: the output is
// that many blocks split each (a fused QKV: 3, heads of rank k from each of Q, K and V).
class ColumnParallelLinearImpl : public torch::nn::Module {
public:
    ColumnParallelLinearImpl(const torch::nn::Linear& whole, TpContext tp, int64_t chunks = 1);
    torch::Tensor forward(const torch::Tensor& x);
    std::map<std::string, ParamSplit> splits() const;
    torch::Tensor weight, bias;

private:
    TpContext tp_;
    int64_t chunks_;
};
TORCH_MODULE(ColumnParallelLinear);

// Y = X A + b with A split by input rows: rank k holds the inputs of its part (the output of a
// column-parallel layer) and computes a partial sum, reduced over the group (g, or a
// reduce-scatter along the sequence); the bias, whole on every rank, is added after.
class RowParallelLinearImpl : public torch::nn::Module {
public:
    RowParallelLinearImpl(const torch::nn::Linear& whole, TpContext tp);
    torch::Tensor forward(const torch::Tensor& x);
    std::map<std::string, ParamSplit> splits() const;
    torch::Tensor weight, bias;

private:
    TpContext tp_;
};
TORCH_MODULE(RowParallelLinear);

// An embedding table split by vocabulary: rank k holds rows [k V/t, (k+1) V/t), looks up the
// tokens in its range (zeros for the others) and the partial sums are reduced over the group
// (g, or a reduce-scatter along the sequence with sequence parallelism).
class VocabParallelEmbeddingImpl : public torch::nn::Module {
public:
    VocabParallelEmbeddingImpl(const torch::nn::Embedding& whole, TpContext tp);
    torch::Tensor forward(const torch::Tensor& tokens);
    // The lookup without the reduction (partial: zeros for other ranks' tokens).
    torch::Tensor partial(const torch::Tensor& tokens) const;
    std::map<std::string, ParamSplit> splits() const { return {{"weight", ParamSplit{0, 1}}}; }
    int64_t firstToken() const { return first_; }
    torch::Tensor weight;

private:
    TpContext tp_;
    int64_t first_ = 0;
};
TORCH_MODULE(VocabParallelEmbedding);

// The LM head over a vocabulary-split table (tied to a VocabParallelEmbedding): this rank's
// logits [.., V/t] of the whole input (entered through f, or all-gathered along the sequence).
torch::Tensor vocabParallelLogits(const torch::Tensor& x, const torch::Tensor& table_shard, const TpContext& tp);

// Mean cross-entropy over the tokens of logits split by vocabulary ([N, V/t] on each rank,
// rank k's columns [k V/t, (k+1) V/t)) against whole targets [N]: the maximum and the sum of
// exponentials are all-reduced over the group, and the target's logit too (it lives on one
// rank); backward is local (softmax minus the one-hot target, on this rank's columns).
// Equals F::cross_entropy of the whole logits.
torch::Tensor vocabParallelCrossEntropy(const torch::Tensor& logits_shard, const torch::Tensor& targets, TpGroup& group);

}  // namespace hippie::engine
