#include "engine/src/runtime/stage.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/variable.h>

namespace hippie::engine {

using torch::Tensor;

Stage::Stage(int segment, int first_layer, std::vector<LayerPtr> layers, const std::vector<bool>& recompute_layer, bool has_producer,
             bool computes_loss)
    : segment_(segment), first_layer_(first_layer), layers_(std::move(layers)), has_producer_(has_producer), computes_loss_(computes_loss) {
    for (size_t i = 0; i < layers_.size(); ++i) {
        const bool r = recompute_layer[i];
        if (pieces_.empty() || pieces_.back().recompute != r) pieces_.push_back(Piece{i, i, r});
        pieces_.back().end = i + 1;
    }
}

std::vector<Tensor> Stage::parameters() const {
    std::vector<Tensor> out;
    for (const LayerPtr& l : layers_)
        for (const Tensor& p : l->parameters()) out.push_back(p);
    return out;
}

std::vector<std::pair<std::string, Tensor>> Stage::namedParameters() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < layers_.size(); ++i)
        for (const auto& item : layers_[i]->named_parameters())
            out.emplace_back("L" + std::to_string(first_layer_ + static_cast<int>(i)) + "." + item.key(), item.value());
    return out;
}

std::vector<std::pair<int, std::vector<Tensor>>> Stage::parametersByLayer() const {
    std::vector<std::pair<int, std::vector<Tensor>>> out;
    for (size_t i = 0; i < layers_.size(); ++i) out.emplace_back(first_layer_ + static_cast<int>(i), layers_[i]->parameters());
    return out;
}

void Stage::train(bool on) {
    for (const LayerPtr& l : layers_) l->train(on);
}

std::vector<std::pair<std::string, Tensor>> Stage::namedBuffers() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < layers_.size(); ++i)
        for (const auto& item : layers_[i]->named_buffers())
            out.emplace_back("L" + std::to_string(first_layer_ + static_cast<int>(i)) + "." + item.key(), item.value());
    return out;
}

std::vector<int64_t> Stage::probeOutputShape(const std::vector<int64_t>& shape, torch::ScalarType dtype, const torch::Device& device,
                                             torch::ScalarType* out_dtype) {
    torch::NoGradGuard no_grad;
    train(false);  // keeps batch-norm running statistics untouched
    Tensor x = torch::zeros(shape, torch::TensorOptions().dtype(dtype).device(device));
    for (const LayerPtr& l : layers_) x = l->forward(x);
    train(true);
    if (out_dtype) *out_dtype = x.scalar_type();
    return x.sizes().vec();
}

Tensor Stage::runPiece(const Piece& p, const Tensor& x) {
    Tensor y = x;
    for (size_t i = p.begin; i < p.end; ++i) y = layers_[i]->forward(y);
    return y;
}

MicroBatchState& Stage::state(int mb) {
    auto it = stash_.find(mb);
    TORCH_CHECK(it != stash_.end(), "segment ", segment_, ": no forward state for micro-batch ", mb);
    return it->second;
}

void Stage::forward(int mb, const Tensor& input, const LossFn& loss_fn) {
    TORCH_CHECK(!stash_.count(mb), "segment ", segment_, ": micro-batch ", mb, " forwarded twice");
    MicroBatchState& st = stash_[mb];
    Tensor x = input;
    for (size_t k = 0; k < pieces_.size(); ++k) {
        PieceRun run;
        const bool needs_grad = x.is_floating_point() && (k > 0 || has_producer_);
        run.in = x.detach().requires_grad_(needs_grad);
        if (pieces_[k].recompute) {
            torch::NoGradGuard no_grad;
            run.out = runPiece(pieces_[k], run.in);
        } else {
            run.out = runPiece(pieces_[k], run.in);
        }
        x = run.out;
        st.pieces.push_back(std::move(run));
    }
    if (computes_loss_) {
        if (pieces_.back().recompute) {
            torch::NoGradGuard no_grad;
            st.loss = loss_fn(x);
        } else {
            st.loss = loss_fn(x);
        }
    }
}

void Stage::recompute(int mb, const LossFn& loss_fn) {
    MicroBatchState& st = state(mb);
    for (size_t k = 0; k < pieces_.size(); ++k)
        if (pieces_[k].recompute) st.pieces[k].out = runPiece(pieces_[k], st.pieces[k].in);
    if (computes_loss_ && pieces_.back().recompute) st.loss = loss_fn(st.pieces.back().out);
}

Tensor Stage::backwardPieces(MicroBatchState& st, const Tensor& output_grad, bool keep_graph, bool accumulate) {
    auto& engine = torch::autograd::Engine::get_default_engine();
    Tensor g = output_grad;
    for (size_t k = st.pieces.size(); k-- > 0;) {
        PieceRun& run = st.pieces[k];
        Tensor root = run.out;
        if (k + 1 == st.pieces.size() && computes_loss_) {
            root = st.loss;
            g = torch::ones_like(st.loss);
        }
        TORCH_CHECK(root.requires_grad(), "segment ", segment_, ": backward of a piece that has no graph (recompute missing?)");
        const torch::autograd::edge_list roots{torch::autograd::impl::gradient_edge(root)};
        if (accumulate) {
            engine.execute(roots, {g}, keep_graph, false, true, {});
            g = run.in.requires_grad() ? run.in.grad() : Tensor();
        } else {
            if (!run.in.requires_grad()) return Tensor();
            const auto grads = engine.execute(roots, {g}, keep_graph, false, false, {torch::autograd::impl::gradient_edge(run.in)});
            g = grads.at(0);
        }
        if (!g.defined()) break;
    }
    return has_producer_ ? g : Tensor();
}

Tensor Stage::backward(int mb, const Tensor& output_grad) {
    MicroBatchState& st = state(mb);
    Tensor in_grad = backwardPieces(st, output_grad, false, true);
    stash_.erase(mb);  // activations of this micro-batch are no longer needed
    return in_grad;
}

Tensor Stage::backwardInput(int mb, const Tensor& output_grad) {
    MicroBatchState& st = state(mb);
    st.output_grad = output_grad;
    st.input_grad = has_producer_ ? backwardPieces(st, output_grad, true, false) : Tensor();
    return st.input_grad;
}

void Stage::backwardWeight(int mb) {
    MicroBatchState& st = state(mb);
    backwardPieces(st, st.output_grad, false, true);
    stash_.erase(mb);
}

const Tensor& Stage::output(int mb) const {
    auto it = stash_.find(mb);
    TORCH_CHECK(it != stash_.end(), "segment ", segment_, ": no output for micro-batch ", mb);
    return it->second.pieces.back().out;
}

void Stage::releaseOutput(int mb) {
    MicroBatchState& st = state(mb);
    if (st.output_released) return;
    // The sender holds its own reference to the storage until the transfer completes; the
    // autograd node (and its metadata) stays, which is all backward needs from the output.
    st.pieces.back().out.set_data(torch::empty({0}, st.pieces.back().out.options()));
    st.output_released = true;
}

double Stage::lossValue(int mb) const {
    auto it = stash_.find(mb);
    return it == stash_.end() || !it->second.loss.defined() ? 0.0 : it->second.loss.item<double>();
}

int64_t Stage::stashedBytes() const {
    int64_t bytes = 0;
    for (const auto& [mb, st] : stash_)
        for (const PieceRun& r : st.pieces) {
            bytes += static_cast<int64_t>(r.in.nbytes());
            if (r.out.defined()) bytes += static_cast<int64_t>(r.out.nbytes());
        }
    return bytes;
}

}  // namespace hippie::engine
