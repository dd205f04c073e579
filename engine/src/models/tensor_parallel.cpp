#include "engine/src/models/tensor_parallel.h"

namespace hippie::engine {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- the group ---------------------------------------------------------------------------------

void TpGroup::count(Purpose why, int Counts::*field, int64_t bytes) {
    if (why == Purpose::Activation) {
        ++(counts_.*field);
        counts_.bytes += bytes;
    } else if (why == Purpose::LossStatistics) {
        ++counts_.loss_all_reduces;
    }
}

Tensor TpGroup::allReduceSum(const Tensor& t, Purpose why) {
    Tensor out = t.contiguous().clone();
    allReduceInPlace(out, false);
    count(why, &Counts::all_reduces, static_cast<int64_t>(out.nbytes()));
    return out;
}

Tensor TpGroup::allReduceMax(const Tensor& t, Purpose why) {
    Tensor out = t.contiguous().clone();
    allReduceInPlace(out, true);
    count(why, &Counts::all_reduces, static_cast<int64_t>(out.nbytes()));
    return out;
}

Tensor TpGroup::allGather(const Tensor& t, int64_t dim, Purpose why) {
    const Tensor c = t.contiguous();
    Tensor flat = torch::empty({size_ * c.numel()}, c.options());
    allGatherFlat(c.reshape({-1}), flat);  // flat in, flat out: Gloo wants one shape
    count(why, &Counts::all_gathers, static_cast<int64_t>(flat.nbytes()));
    std::vector<int64_t> shape{size_};
    for (int64_t s : c.sizes()) shape.push_back(s);
    // [t, d0, .., d_dim, ..] -> [d0, .., t, d_dim, ..] -> [d0, .., t * d_dim, ..]
    std::vector<int64_t> merged = c.sizes().vec();
    merged[static_cast<size_t>(dim)] *= size_;
    return flat.view(shape).movedim(0, dim).reshape(merged);
}

Tensor TpGroup::reduceScatter(const Tensor& t, int64_t dim) {
    TORCH_CHECK(t.size(dim) % size_ == 0, "reduce-scatter: dimension ", dim, " of size ", t.size(dim), " does not split into ", size_,
                " parts");
    Tensor sum = t.contiguous().clone();
    allReduceInPlace(sum, false);
    count(Purpose::Activation, &Counts::reduce_scatters, static_cast<int64_t>(sum.nbytes()));
    const int64_t part = t.size(dim) / size_;
    return sum.narrow(dim, rank_ * part, part).contiguous();
}

// ---- parameter slices ----------------------------------------------------------------------------

Tensor shardOf(const Tensor& whole, const ParamSplit& split, int rank, int size) {
    TORCH_CHECK(whole.size(split.dim) % (split.chunks * size) == 0, "a parameter of shape ", whole.sizes(), " does not split into ",
                split.chunks, " x ", size, " parts along dimension ", split.dim);
    std::vector<Tensor> parts;
    for (const Tensor& block : whole.chunk(split.chunks, split.dim)) parts.push_back(block.chunk(size, split.dim)[static_cast<size_t>(rank)]);
    return torch::cat(parts, split.dim).detach().clone();
}

Tensor wholeOf(const std::vector<Tensor>& shards, const ParamSplit& split) {
    std::vector<Tensor> parts;
    for (int64_t c = 0; c < split.chunks; ++c)
        for (const Tensor& s : shards) parts.push_back(s.chunk(split.chunks, split.dim)[static_cast<size_t>(c)]);
    return torch::cat(parts, split.dim);
}

Tensor fullParameter(const Tensor& shard, const ParamSplit& split, TpGroup& group) {
    torch::NoGradGuard no_grad;
    const Tensor all = group.allGather(shard.detach().unsqueeze(0), 0, TpGroup::Purpose::Other);  // [t, shard...]
    std::vector<Tensor> shards;
    for (int64_t r = 0; r < group.size(); ++r) shards.push_back(all[r]);
    return wholeOf(shards, split);
}

// ---- the conjugate operators ---------------------------------------------------------------------

namespace {

void keepGroup(AutogradContext* ctx, TpGroup& group) { ctx->saved_data["group"] = reinterpret_cast<int64_t>(&group); }
TpGroup& groupOf(AutogradContext* ctx) { return *reinterpret_cast<TpGroup*>(ctx->saved_data["group"].toInt()); }

// The gradient a first backward communicated for, handed out again by a second backward over
// the same graph (zb-h1's weight pass): the same value, no communication.
template <class F>
Tensor onceBackward(AutogradContext* ctx, F&& communicate) {
    auto it = ctx->saved_data.find("grad");
    if (it != ctx->saved_data.end()) return it->second.toTensor();
    Tensor g = communicate();
    ctx->saved_data["grad"] = g;
    return g;
}

struct CopyToRegion : public torch::autograd::Function<CopyToRegion> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x, TpGroup* group) {
        keepGroup(ctx, *group);
        return x;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        return {onceBackward(ctx, [&] { return groupOf(ctx).allReduceSum(grads[0]); }), Tensor()};
    }
};

struct ReduceFromRegion : public torch::autograd::Function<ReduceFromRegion> {
    static Tensor forward(AutogradContext*, const Tensor& x, TpGroup* group) { return group->allReduceSum(x); }
    static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], Tensor()}; }
};

struct GatherFromSequence : public torch::autograd::Function<GatherFromSequence> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x, TpGroup* group, int64_t dim) {
        keepGroup(ctx, *group);
        ctx->saved_data["dim"] = dim;
        return group->allGather(x, dim);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const int64_t dim = ctx->saved_data["dim"].toInt();
        return {onceBackward(ctx, [&] { return groupOf(ctx).reduceScatter(grads[0], dim); }), Tensor(), Tensor()};
    }
};

struct ReduceScatterToSequence : public torch::autograd::Function<ReduceScatterToSequence> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x, TpGroup* group, int64_t dim) {
        keepGroup(ctx, *group);
        ctx->saved_data["dim"] = dim;
        return group->reduceScatter(x, dim);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const int64_t dim = ctx->saved_data["dim"].toInt();
        return {onceBackward(ctx, [&] { return groupOf(ctx).allGather(grads[0], dim); }), Tensor(), Tensor()};
    }
};

constexpr int64_t kSequenceDim = 1;  // activations are [batch, sequence, features]

}  // namespace

Tensor copyToTensorParallel(const Tensor& x, TpGroup& group) { return CopyToRegion::apply(x, &group); }
Tensor reduceFromTensorParallel(const Tensor& x, TpGroup& group) { return ReduceFromRegion::apply(x, &group); }
Tensor gatherFromSequenceParallel(const Tensor& x, TpGroup& group, int64_t dim) { return GatherFromSequence::apply(x, &group, dim); }
Tensor reduceScatterToSequenceParallel(const Tensor& x, TpGroup& group, int64_t dim) {
    return ReduceScatterToSequence::apply(x, &group, dim);
}

Tensor enterTensorParallel(const Tensor& x, const TpContext& tp) {
    if (!tp.enabled()) return x;
    return tp.sequence_parallel ? gatherFromSequenceParallel(x, *tp.group, kSequenceDim) : copyToTensorParallel(x, *tp.group);
}

Tensor leaveTensorParallel(const Tensor& x, const TpContext& tp) {
    if (!tp.enabled()) return x;
    return tp.sequence_parallel ? reduceScatterToSequenceParallel(x, *tp.group, kSequenceDim) : reduceFromTensorParallel(x, *tp.group);
}

Tensor sequenceShard(const Tensor& x, const TpContext& tp) {
    if (!tp.enabled() || !tp.sequence_parallel) return x;
    TORCH_CHECK(x.size(kSequenceDim) % tp.size() == 0, "sequence parallelism: a sequence of ", x.size(kSequenceDim),
                " tokens does not split over ", tp.size(), " ranks");
    const int64_t part = x.size(kSequenceDim) / tp.size();
    return x.narrow(kSequenceDim, tp.rank() * part, part);
}

// ---- split layers --------------------------------------------------------------------------------

ColumnParallelLinearImpl::ColumnParallelLinearImpl(const torch::nn::Linear& whole, TpContext tp, int64_t chunks)
    : tp_(std::move(tp)), chunks_(chunks) {
    weight = register_parameter("weight", shardOf(whole->weight, ParamSplit{0, chunks}, tp_.rank(), tp_.size()));
    if (whole->bias.defined()) bias = register_parameter("bias", shardOf(whole->bias, ParamSplit{0, chunks}, tp_.rank(), tp_.size()));
}

Tensor ColumnParallelLinearImpl::forward(const Tensor& x) { return torch::linear(enterTensorParallel(x, tp_), weight, bias); }

std::map<std::string, ParamSplit> ColumnParallelLinearImpl::splits() const {
    std::map<std::string, ParamSplit> s{{"weight", ParamSplit{0, chunks_}}};
    if (bias.defined()) s["bias"] = ParamSplit{0, chunks_};
    return s;
}

RowParallelLinearImpl::RowParallelLinearImpl(const torch::nn::Linear& whole, TpContext tp) : tp_(std::move(tp)) {
    weight = register_parameter("weight", shardOf(whole->weight, ParamSplit{1, 1}, tp_.rank(), tp_.size()));
    if (whole->bias.defined()) bias = register_parameter("bias", whole->bias.detach().clone());
}

Tensor RowParallelLinearImpl::forward(const Tensor& x) {
    const Tensor y = leaveTensorParallel(torch::linear(x, weight), tp_);
    return bias.defined() ? y + bias : y;
}

std::map<std::string, ParamSplit> RowParallelLinearImpl::splits() const { return {{"weight", ParamSplit{1, 1}}}; }

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(const torch::nn::Embedding& whole, TpContext tp) : tp_(std::move(tp)) {
    weight = register_parameter("weight", shardOf(whole->weight, ParamSplit{0, 1}, tp_.rank(), tp_.size()));
    first_ = weight.size(0) * tp_.rank();
}

Tensor VocabParallelEmbeddingImpl::partial(const Tensor& tokens) const {
    const Tensor local = tokens - first_;
    const Tensor mine = (local >= 0).logical_and(local < weight.size(0));
    const Tensor rows = torch::embedding(weight, local.masked_fill(mine.logical_not(), 0));
    return rows.masked_fill(mine.logical_not().unsqueeze(-1), 0.0);
}

Tensor VocabParallelEmbeddingImpl::forward(const Tensor& tokens) { return leaveTensorParallel(partial(tokens), tp_); }

Tensor vocabParallelLogits(const Tensor& x, const Tensor& table_shard, const TpContext& tp) {
    return torch::matmul(enterTensorParallel(x, tp), table_shard.t());
}

// ---- cross-entropy over split logits -------------------------------------------------------------

namespace {

struct VocabParallelCrossEntropy : public torch::autograd::Function<VocabParallelCrossEntropy> {
    static Tensor forward(AutogradContext* ctx, const Tensor& logits, const Tensor& targets, TpGroup* group) {
        const int64_t width = logits.size(-1), first = width * group->rank();
        // The maximum only keeps exp() in range: any value common to the group would do.
        const Tensor max = group->allReduceMax(std::get<0>(logits.max(-1)));
        const Tensor shifted = logits - max.unsqueeze(-1);
        const Tensor exps = shifted.exp();
        const Tensor local = targets - first;
        const Tensor mine = (local >= 0).logical_and(local < width);
        const Tensor column = local.masked_fill(mine.logical_not(), 0);
        const Tensor target_logit = shifted.gather(-1, column.unsqueeze(-1)).squeeze(-1).masked_fill(mine.logical_not(), 0.0);
        // The sum of exponentials and the target's logit (on one rank, zero elsewhere): one all-reduce.
        const Tensor sums = group->allReduceSum(torch::stack({exps.sum(-1), target_logit}), TpGroup::Purpose::LossStatistics);
        const Tensor sum_exp = sums[0];
        ctx->save_for_backward({exps, sum_exp, column, mine});
        return (sum_exp.log() - sums[1]).mean();
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const Tensor& exps = saved[0];
        const Tensor& sum_exp = saved[1];
        const Tensor& column = saved[2];
        const Tensor& mine = saved[3];
        Tensor g = exps / sum_exp.unsqueeze(-1);
        g.scatter_add_(-1, column.unsqueeze(-1), -mine.to(g.scalar_type()).unsqueeze(-1));
        g.mul_(grads[0] / static_cast<double>(exps.size(0)));
        return {g, Tensor(), Tensor()};
    }
};

}  // namespace

Tensor vocabParallelCrossEntropy(const Tensor& logits_shard, const Tensor& targets, TpGroup& group) {
    TORCH_CHECK(logits_shard.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits_shard.size(0),
                "vocabulary-parallel cross-entropy takes logits [N, V/t] and targets [N]");
    return VocabParallelCrossEntropy::apply(logits_shard, targets, &group);
}

}  // namespace hippie::engine
