#pragma once
// Where each step's global batch comes from: the model's deterministic synthetic data (from
// the seed) or a tensor file (docs/formats.md, "Tensor data file"): a pickled pair
// (inputs, targets) as written by Python's `torch.save((inputs, targets), path)` or
// `hippie-engine make-data`. Step i of a file with N samples takes samples
// [i*B, (i+1)*B) mod N, B the global batch, so any split over replicas and micro-batches
// sees the same samples.
#include <cstdint>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "engine/src/models/trainable.h"

namespace hippie::engine {

struct TensorFile {
    std::string path;
    torch::Tensor inputs;   // [N, ...]: what layer 0 reads
    torch::Tensor targets;  // [N, ...]: what the loss reads
};

// Throws Error naming the file: missing, not a pickled pair/list of two tensors or a dict with
// "inputs" and "targets", or the two disagree on the number of samples (or there are none).
TensorFile loadTensorFile(const std::string& path);
void saveTensorFile(const std::string& path, const torch::Tensor& inputs, const torch::Tensor& targets);

class DataSource {
public:
    DataSource(const Trainable& model, uint64_t seed, std::optional<TensorFile> file);
    // The global batch of `step` (CPU tensors).
    Batch batch(int step, int samples) const;
    bool fromFile() const { return file_.has_value(); }
    std::string describe() const;  // "synthetic (seed 7)" or "file data.pt (40 samples)"

    // Runs one batch of the file through the whole model (CPU, no autograd) and its loss; throws
    // Error naming the file, the shapes and what the model expected when they do not fit.
    void checkFitsModel(int samples) const;

private:
    const Trainable& model_;
    uint64_t seed_;
    std::optional<TensorFile> file_;
};

}  // namespace hippie::engine
