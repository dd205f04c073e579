#include "engine/src/runtime/stage.h"

#include <set>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/variable.h>

namespace hippie::engine {

using torch::Tensor;

Stage::Stage(int segment, std::vector<LayerPtr> layers, const std::vector<bool>& recompute_layer, SegmentIO io, bool computes_loss,
             bool piece_per_layer, bool recompute_per_layer)
    : segment_(segment), layers_(std::move(layers)), io_(std::move(io)), computes_loss_(computes_loss) {
    for (size_t i = 0; i < layers_.size(); ++i) {
        const bool r = recompute_layer[i];
        if (pieces_.empty() || pieces_.back().recompute != r || piece_per_layer || (r && recompute_per_layer)) pieces_.push_back(Piece{i, i, r});
        pieces_.back().end = i + 1;
    }
}

template <class F>
auto Stage::withParameters(const Piece& p, const Piece* next, F&& f, Parameters use) const {
    if (gather_ && use != Parameters::Release)
        for (size_t i = p.begin; i < p.end; ++i) gather_(io_.first_layer + static_cast<int>(i));
    if (prefetch_ && next)
        for (size_t i = next->begin; i < next->end; ++i) prefetch_(io_.first_layer + static_cast<int>(i));
    struct Release {
        const Stage& st;
        const Piece& p;
        bool keep;
        ~Release() {
            if (!keep) st.releaseParameters(p);
        }
    } release{*this, p, use == Parameters::GatherKeep};
    return f();
}

void Stage::releaseParameters(const Piece& p) const {
    if (release_)
        for (size_t i = p.begin; i < p.end; ++i) release_(io_.first_layer + static_cast<int>(i));
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
            out.emplace_back("L" + std::to_string(io_.first_layer + static_cast<int>(i)) + "." + item.key(), item.value());
    return out;
}

std::map<std::string, ParamSplit> Stage::parameterSplits() const {
    std::map<std::string, ParamSplit> out;
    for (size_t i = 0; i < layers_.size(); ++i)
        for (const auto& [name, split] : layers_[i]->tensorParallelSplits())
            out["L" + std::to_string(io_.first_layer + static_cast<int>(i)) + "." + name] = split;
    return out;
}

std::vector<std::pair<int, std::vector<Tensor>>> Stage::parametersByLayer() const {
    std::vector<std::pair<int, std::vector<Tensor>>> out;
    for (size_t i = 0; i < layers_.size(); ++i) out.emplace_back(io_.first_layer + static_cast<int>(i), layers_[i]->parameters());
    return out;
}

void Stage::train(bool on) {
    for (const LayerPtr& l : layers_) l->train(on);
}

std::vector<std::pair<std::string, Tensor>> Stage::namedBuffers() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < layers_.size(); ++i)
        for (const auto& item : layers_[i]->named_buffers())
            out.emplace_back("L" + std::to_string(io_.first_layer + static_cast<int>(i)) + "." + item.key(), item.value());
    return out;
}

bool Stage::fromProducer(const std::string& key) const {
    for (const auto& [k, producer] : io_.inputs)
        if (k == key) return producer >= 0;
    return false;
}

Live Stage::runPiece(const Piece& p, Live x) const {
    for (size_t i = p.begin; i < p.end; ++i) {
        layers_[i]->run(x);
        const std::set<std::string>& keep = io_.keep[i];
        const bool loss_layer = computes_loss_ && i + 1 == layers_.size();
        if (loss_layer) continue;  // the loss reads the head's outputs
        for (const std::string& k : keep)
            TORCH_CHECK(x.count(k), "layer ", io_.first_layer + static_cast<int>(i), " did not produce '", k,
                        "', which the graph says a later layer reads");
        for (auto it = x.begin(); it != x.end();) it = keep.count(it->first) ? std::next(it) : x.erase(it);
    }
    return x;
}

Shapes Stage::probeOutputShapes(const Live& inputs) {
    torch::NoGradGuard no_grad;
    train(false);  // keeps batch-norm running statistics untouched
    Live x = inputs;
    for (const Piece& p : pieces_) x = withParameters(p, nullptr, [&] { return runPiece(p, std::move(x)); });
    train(true);
    Shapes out;
    for (const std::string& k : io_.outputs) out[k] = x.at(k).sizes().vec();
    return out;
}

MicroBatchState& Stage::state(int mb) {
    auto it = stash_.find(mb);
    TORCH_CHECK(it != stash_.end(), "segment ", segment_, ": no forward state for micro-batch ", mb);
    return it->second;
}

void Stage::forward(int mb, const Live& inputs, const LossFn& loss_fn) {
    TORCH_CHECK(!stash_.count(mb), "segment ", segment_, ": micro-batch ", mb, " forwarded twice");
    MicroBatchState& st = stash_[mb];
    st.dropout = currentDropoutStream();
    Live x = inputs;
    for (size_t k = 0; k < pieces_.size(); ++k) {
        PieceRun run;
        for (const auto& [key, t] : x) {
            const bool needs_grad = t.is_floating_point() && (k > 0 || fromProducer(key));
            run.in[key] = t.detach().requires_grad_(needs_grad);
        }
        const Piece* next = k + 1 < pieces_.size() ? &pieces_[k + 1] : nullptr;
        if (pieces_[k].recompute) {
            torch::NoGradGuard no_grad;
            run.out = withParameters(pieces_[k], next, [&] { return runPiece(pieces_[k], run.in); });
        } else {
            run.out = withParameters(pieces_[k], next, [&] { return runPiece(pieces_[k], run.in); });
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
    // (A segment whose only recomputation is selective has nothing to rebuild here: its layers'
    // attention cores recompute themselves inside their backward.)
    TORCH_CHECK(!st.rebuild_loss, "segment ", segment_, ": micro-batch ", mb, " recomputed twice");
    st.rebuild_loss = loss_fn ? loss_fn : LossFn([](const Live&) { return Tensor(); });
}

void Stage::rebuild(MicroBatchState& st, size_t k, Parameters use) {
    PieceRun& run = st.pieces[k];
    TORCH_CHECK(st.rebuild_loss, "segment ", segment_, ": backward of a recomputed layer before its Recompute");
    const auto body = [&] {
        const DropoutScope same_masks(st.dropout);
        run.out = withParameters(pieces_[k], nullptr, [&] { return runPiece(pieces_[k], run.in); }, use);
        if (computes_loss_ && k + 1 == pieces_.size()) st.loss = st.rebuild_loss(run.out);
    };
    if (rebuild_wrap_) rebuild_wrap_(body);
    else body();
    run.rebuilt = true;
}

Live Stage::backwardPieces(MicroBatchState& st, const Live& output_grad, bool keep_graph, bool accumulate) {
    auto& engine = torch::autograd::Engine::get_default_engine();
    Live g = output_grad;
    for (size_t k = st.pieces.size(); k-- > 0;) {
        PieceRun& run = st.pieces[k];
        // A layer rebuilt here keeps its gathered parameters for its backward, just below.
        const bool rebuilt_here = pieces_[k].recompute && !run.rebuilt;
        if (rebuilt_here) rebuild(st, k, Parameters::GatherKeep);
        bool backward_ran = false;
        torch::autograd::edge_list roots;
        std::vector<Tensor> root_grads;
        Live passed;  // outputs that are inputs of the piece, unchanged: their gradient passes through
        if (k + 1 == st.pieces.size() && computes_loss_) {
            TORCH_CHECK(st.loss.requires_grad(), "segment ", segment_, ": backward of a loss that has no graph (recompute missing?)");
            roots.push_back(torch::autograd::impl::gradient_edge(st.loss));
            root_grads.push_back(torch::ones_like(st.loss));
        } else {
            for (const auto& [key, t] : run.out) {
                auto it = g.find(key);
                if (it == g.end() || !it->second.defined()) continue;
                auto in = run.in.find(key);
                if (in != run.in.end() && in->second.is_same(t)) {
                    passed[key] = it->second;
                    continue;
                }
                if (!t.requires_grad()) continue;
                roots.push_back(torch::autograd::impl::gradient_edge(t));
                root_grads.push_back(it->second);
            }
        }
        std::vector<std::string> leaf_keys;
        torch::autograd::edge_list leaves;
        for (const auto& [key, t] : run.in)
            if (t.requires_grad()) {
                leaf_keys.push_back(key);
                leaves.push_back(torch::autograd::impl::gradient_edge(t));
            }
        if (!accumulate && leaves.empty() && input_pass_through_activations_) {
            // Gradients of the piece's first layer's weights (or all its weights), thrown away:
            // the backward then runs through every activation of the piece.
            const Piece& piece = pieces_[k];
            for (size_t i = piece.begin; i < piece.end && leaves.empty(); ++i)
                for (const Tensor& p : layers_[i]->parameters())
                    if (p.requires_grad()) leaves.push_back(torch::autograd::impl::gradient_edge(p));
        }
        Live in_grad;
        if (!roots.empty() && (accumulate || !leaves.empty())) {
            backward_ran = true;
            const Parameters use = rebuilt_here ? Parameters::Release : Parameters::GatherRelease;
            withParameters(pieces_[k], k > 0 ? &pieces_[k - 1] : nullptr, [&] {
                if (accumulate) {
                    engine.execute(roots, root_grads, keep_graph, false, true, {});
                    for (const std::string& key : leaf_keys)
                        if (run.in[key].grad().defined()) in_grad[key] = run.in[key].grad();
                } else {
                    const auto grads = engine.execute(roots, root_grads, keep_graph, false, false, leaves);
                    for (size_t i = 0; i < leaf_keys.size(); ++i)
                        if (grads[i].defined()) in_grad[leaf_keys[i]] = grads[i];
                }
                return 0;
            }, use);
        }
        if (rebuilt_here && !backward_ran) releaseParameters(pieces_[k]);
        // The rebuild's activations went with its graph; its outputs go now (one layer live).
        if (run.rebuilt && !keep_graph) run.out.clear();
        for (const auto& [key, p] : passed) {
            auto it = in_grad.find(key);
            if (it == in_grad.end()) in_grad[key] = p;
            else it->second = it->second + p;
        }
        g = std::move(in_grad);
    }
    Live out;
    for (const auto& [key, t] : g)
        if (fromProducer(key)) out[key] = t;
    return out;
}

Live Stage::backward(int mb, const Live& output_grad) {
    MicroBatchState& st = state(mb);
    Live in_grad = backwardPieces(st, output_grad, false, true);
    stash_.erase(mb);  // activations of this micro-batch are no longer needed
    return in_grad;
}

Live Stage::backwardInput(int mb, const Live& output_grad) {
    MicroBatchState& st = state(mb);
    st.output_grad = output_grad;
    return backwardPieces(st, output_grad, true, false);
}

void Stage::backwardWeight(int mb) {
    MicroBatchState& st = state(mb);
    backwardPieces(st, st.output_grad, false, true);
    stash_.erase(mb);
}

const Live& Stage::output(int mb) const {
    auto it = stash_.find(mb);
    TORCH_CHECK(it != stash_.end(), "segment ", segment_, ": no output for micro-batch ", mb);
    return it->second.pieces.back().out;
}

void Stage::releaseOutput(int mb) {
    MicroBatchState& st = state(mb);
    if (st.output_released) return;
    // The sender holds its own reference to the storage until the transfer completes; the
    // autograd node (and its metadata) stays, which is all backward needs from an output that
    // no op of this segment read.
    for (const std::string& key : io_.outputs) {
        if (io_.read_here.count(key)) continue;
        Tensor& t = st.pieces.back().out.at(key);
        t.set_data(torch::empty({0}, t.options()));
    }
    st.output_released = true;
}

int64_t Stage::stashedBytes() const {
    // A piece's inputs are the views of the previous piece's outputs: each storage counts once.
    std::set<const void*> seen;
    int64_t bytes = 0;
    const auto add = [&](const Tensor& t) {
        if (t.defined() && t.has_storage() && seen.insert(t.storage().unsafeGetStorageImpl()).second)
            bytes += static_cast<int64_t>(t.storage().nbytes());
    };
    for (const auto& [mb, st] : stash_)
        for (const PieceRun& r : st.pieces) {
            for (const auto& [k, t] : r.in) add(t);
            for (const auto& [k, t] : r.out) add(t);
        }
    return bytes;
}

}  // namespace hippie::engine
