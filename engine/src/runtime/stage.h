#pragma once
// A segment of the model on this rank (a pipeline stage or interleaved chunk) and its
// activation stash. The segment reads its inputs and produces its outputs as live maps of
// named tensors (models/layer.h, runtime/boundaries.h). Its layers are cut into pieces: a run
// of layers not recomputed is one piece, and every recomputed layer is a piece of its own
// (or, where the Program checkpoints the segment's inputs only, a run of them is one piece).
// Each piece starts from detached leaves, so backward runs piece by piece, last to first,
// handing each piece's input gradients to the piece before it.
//
// Full recomputation is activation checkpointing per layer (Megatron-LM's full recompute,
// torch.utils.checkpoint around each layer): a recomputed piece runs its forward without
// keeping activations, so the stash holds only its inputs and outputs (the checkpoints). The
// Recompute instruction arms the rebuild; the backward then reruns each recomputed piece
// forward from its checkpoints right before that piece's backward and frees the rebuild after
// it, so one layer's activations are live at a time (the zb-h1 input pass keeps them for its
// weight pass). The executor learns of each rebuild (setRebuildWrapper) to time it and count
// its collectives as the Recompute instruction's.
//
// ZeRO-3 (setParameterHooks): every layer is a piece of its own, and the hooks gather a
// layer's parameters before each of its pieces runs (forward, recompute, backward) and release
// them after, so one layer's parameters at a time are whole; while a piece runs, the next
// piece of the same pass is prefetched (two at a time). A recomputed layer's rebuild keeps
// what it gathered for the backward that follows it (one gather, as FSDP's checkpointed
// layers have; zero_gathers.h).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "engine/src/models/dropout.h"
#include "engine/src/models/layer.h"
#include "engine/src/runtime/boundaries.h"

namespace hippie::engine {

using Shapes = std::map<std::string, std::vector<int64_t>>;

struct PieceRun {
    Live in;   // leaves: the piece's inputs
    Live out;  // the piece's outputs (graph attached unless recomputed and not yet rebuilt)
    bool rebuilt = false;  // a recomputed piece run again, with its graph, for backward
};

struct MicroBatchState {
    std::vector<PieceRun> pieces;
    torch::Tensor loss;  // last segment only: this micro-batch's loss, scaled by 1/m
    Live output_grad;    // kept between BackwardInput and BackwardWeight
    bool output_released = false;
    std::function<torch::Tensor(const Live& live)> rebuild_loss;  // set by recompute(): armed
    DropoutStream dropout;  // the stream its forward saw: a rebuild draws the same masks
};

class Stage {
public:
    // `piece_per_layer`: cut a piece at every layer (ZeRO-3). `recompute_per_layer`
    // (Program::recompute_per_layer): every recomputed layer a piece of its own (checkpoints
    // at each), else a run of recomputed layers is one piece (its input the one checkpoint).
    Stage(int segment, std::vector<LayerPtr> layers, const std::vector<bool>& recompute_layer, SegmentIO io, bool computes_loss,
          bool piece_per_layer = false, bool recompute_per_layer = true);

    int segment() const { return segment_; }
    int firstLayer() const { return io_.first_layer; }
    const SegmentIO& io() const { return io_; }
    bool computesLoss() const { return computes_loss_; }
    const std::vector<LayerPtr>& layers() const { return layers_; }
    std::vector<torch::Tensor> parameters() const;
    std::vector<std::pair<std::string, torch::Tensor>> namedParameters() const;  // "L<layer>.<name>"
    // Tensor parallelism: the parameters split over the tp group ("L<layer>.<name>"), and how.
    std::map<std::string, ParamSplit> parameterSplits() const;
    std::vector<std::pair<int, std::vector<torch::Tensor>>> parametersByLayer() const;  // (layer, its params)
    void train(bool on);

    // Shapes of the outputs for inputs of these shapes (and dtypes), from a forward without autograd.
    Shapes probeOutputShapes(const Live& inputs);
    std::vector<std::pair<std::string, torch::Tensor>> namedBuffers() const;  // "L<layer>.<name>"

    // Forward of micro-batch `mb`; `loss_fn` (last segment) turns the live tensors into the loss.
    using LossFn = std::function<torch::Tensor(const Live& live)>;
    void forward(int mb, const Live& inputs, const LossFn& loss_fn);
    // Arms the rebuild of the recomputed pieces, which the backward runs one piece at a time.
    void recompute(int mb, const LossFn& loss_fn);
    // Runs each rebuild (a recomputed piece's forward inside the backward) through `wrap`.
    using RebuildWrapper = std::function<void(const std::function<void()>& rebuild)>;
    void setRebuildWrapper(RebuildWrapper wrap) { rebuild_wrap_ = std::move(wrap); }
    // Full backward (input and weight gradients) from the gradients of the outputs (none for
    // the last segment): consumes the stash entry and returns the gradients of the inputs that
    // other segments produced.
    Live backward(int mb, const Live& output_grad);
    // zb-h1 split: input gradients only (keeps the graph), then the weight gradients.
    Live backwardInput(int mb, const Live& output_grad);
    // Tensor parallelism: the input pass of a piece without input gradients (the model's first
    // layers) still runs the backward of its activations, whose tp collectives belong to it (the
    // weight pass reuses them), by asking for its first layer's weight gradients, not kept.
    void setInputPassThroughActivations(bool on) { input_pass_through_activations_ = on; }
    // Called with a layer's index in the model (firstLayer() + i) before and after each run of
    // the piece holding it.
    using LayerHook = std::function<void(int layer)>;
    void setParameterHooks(LayerHook gather, LayerHook release, LayerHook prefetch) {
        gather_ = std::move(gather);
        release_ = std::move(release);
        prefetch_ = std::move(prefetch);
    }
    void backwardWeight(int mb);

    const Live& output(int mb) const;
    // The outputs have been sent downstream: drop their storage (their autograd nodes stay).
    void releaseOutput(int mb);
    bool holds(int mb) const { return stash_.count(mb) > 0; }
    int stashedMicroBatches() const { return static_cast<int>(stash_.size()); }
    int64_t stashedBytes() const;

private:
    struct Piece {
        size_t begin = 0, end = 0;  // layers [begin, end)
        bool recompute = false;
    };
    Live runPiece(const Piece& p, Live x) const;
    // How a run of a piece treats its layers' parameters (ZeRO-3 hooks): gathered before and
    // released after; gathered and kept (a rebuild, for its backward); or gathered already
    // (that backward) and released after.
    enum class Parameters { GatherRelease, GatherKeep, Release };
    // Runs `f` with the piece's layers' parameters whole as `use` says; `next` (if any) is the
    // piece the pass runs after it, whose gather is started meanwhile.
    template <class F>
    auto withParameters(const Piece& p, const Piece* next, F&& f, Parameters use = Parameters::GatherRelease) const;
    void releaseParameters(const Piece& p) const;
    MicroBatchState& state(int mb);
    Live backwardPieces(MicroBatchState& st, const Live& output_grad, bool keep_graph, bool accumulate);
    // Rebuilds piece k from its checkpoint; `use`: GatherKeep when its backward follows at once.
    void rebuild(MicroBatchState& st, size_t k, Parameters use = Parameters::GatherRelease);
    bool fromProducer(const std::string& key) const;

    int segment_;
    std::vector<LayerPtr> layers_;
    std::vector<Piece> pieces_;
    SegmentIO io_;
    bool computes_loss_;
    std::map<int, MicroBatchState> stash_;
    bool input_pass_through_activations_ = false;
    LayerHook gather_, release_, prefetch_;
    RebuildWrapper rebuild_wrap_;
};

}  // namespace hippie::engine
