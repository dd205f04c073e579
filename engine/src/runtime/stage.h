#pragma once
// A segment of the model on this rank (a pipeline stage or interleaved chunk) and its
// activation stash. The segment's layers are cut into pieces at recompute boundaries: a
// recomputed piece runs its forward without keeping activations and runs it again (Recompute)
// before its backward. Each piece starts from a detached leaf, so backward runs piece by
// piece, last to first, handing each piece's input gradient to the piece before it.
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "engine/src/models/tiny_models.h"

namespace hippie::engine {

struct PieceRun {
    torch::Tensor in;   // leaf: the piece's input
    torch::Tensor out;  // the piece's output (graph attached unless recomputed and not yet rerun)
};

struct MicroBatchState {
    std::vector<PieceRun> pieces;
    torch::Tensor loss;         // last segment only: this micro-batch's loss, scaled by 1/m
    torch::Tensor input_grad;   // after BackwardInput (zb-h1), before BackwardWeight
    torch::Tensor output_grad;  // kept between BackwardInput and BackwardWeight
    bool output_released = false;
};

class Stage {
public:
    Stage(int segment, int first_layer, std::vector<LayerPtr> layers, const std::vector<bool>& recompute_layer, bool has_producer,
          bool computes_loss);

    int segment() const { return segment_; }
    int firstLayer() const { return first_layer_; }
    bool hasProducer() const { return has_producer_; }
    bool computesLoss() const { return computes_loss_; }
    std::vector<torch::Tensor> parameters() const;
    std::vector<std::pair<std::string, torch::Tensor>> namedParameters() const;  // "L<layer>.<name>"
    std::vector<std::pair<int, std::vector<torch::Tensor>>> parametersByLayer() const;  // (layer, its params)
    void train(bool on);

    // Output shape for an input of `shape` and dtype, from a forward without autograd.
    // `out_dtype`, when given, receives the output's dtype (bf16/fp16 under autocast).
    std::vector<int64_t> probeOutputShape(const std::vector<int64_t>& shape, torch::ScalarType dtype, const torch::Device& device,
                                          torch::ScalarType* out_dtype = nullptr);
    std::vector<std::pair<std::string, torch::Tensor>> namedBuffers() const;  // "L<layer>.<name>"

    // Forward of micro-batch `mb`; `loss_fn` (last segment) turns the output into the loss.
    using LossFn = std::function<torch::Tensor(const torch::Tensor& output)>;
    void forward(int mb, const torch::Tensor& input, const LossFn& loss_fn);
    void recompute(int mb, const LossFn& loss_fn);
    // Full backward (input and weight gradients): consumes the stash entry and returns the
    // gradient w.r.t. the segment's input (undefined for the first segment).
    torch::Tensor backward(int mb, const torch::Tensor& output_grad);
    // zb-h1 split: input gradient only (keeps the graph), then the weight gradients.
    torch::Tensor backwardInput(int mb, const torch::Tensor& output_grad);
    void backwardWeight(int mb);

    const torch::Tensor& output(int mb) const;
    // The output has been sent downstream: drop its storage (its autograd node stays).
    void releaseOutput(int mb);
    double lossValue(int mb) const;
    bool holds(int mb) const { return stash_.count(mb) > 0; }
    int stashedMicroBatches() const { return static_cast<int>(stash_.size()); }
    int64_t stashedBytes() const;

private:
    struct Piece {
        size_t begin = 0, end = 0;  // layers [begin, end)
        bool recompute = false;
    };
    torch::Tensor runPiece(const Piece& p, const torch::Tensor& x);
    MicroBatchState& state(int mb);
    // Backward through pieces [0, n) starting from the last piece's output gradient.
    torch::Tensor backwardPieces(MicroBatchState& st, const torch::Tensor& output_grad, bool keep_graph, bool accumulate);

    int segment_;
    int first_layer_;
    std::vector<LayerPtr> layers_;
    std::vector<Piece> pieces_;
    bool has_producer_;
    bool computes_loss_;
    std::map<int, MicroBatchState> stash_;
};

}  // namespace hippie::engine
