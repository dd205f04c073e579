#pragma once
// Where each step's global batch comes from: the model's deterministic synthetic data (from
// the seed), a tensor file (docs/formats.md, "Tensor data file": a pickled pair
// (inputs, targets) as written by Python's `torch.save((inputs, targets), path)` or
// `hippie-engine make-data`), or, for GPT and BERT models, a token-id file: a flat binary of
// uint16 or uint32 token ids (nanoGPT's train.bin layout), sample j being the ids
// [j*S, j*S + S] (S the sequence length; one more id for the next-token targets).
// Epochs: with N samples and a global batch of B, an epoch is N / B steps (the last partial
// batch is dropped, as DistributedSampler's drop_last does); each epoch visits the samples in
// a permutation seeded by (seed, epoch), step k of the epoch takes its entries [k*B, (k+1)*B),
// and replica r of dp takes the r-th B/dp of those. So the replicas' samples of one epoch are
// disjoint and together every sample once, and any split over replicas and micro-batches
// trains on the same samples as one process.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// A token-id file, memory-mapped: ids are read where a batch needs them.
class TokenFile {
public:
    // dtype "uint16" or "uint32". Throws Error naming the file when it cannot be read, its
    // size is not a whole number of ids, or an id is not below `vocab` (naming the first such
    // id and its offset, in ids and bytes).
    TokenFile(const std::string& path, const std::string& dtype, int64_t vocab);
    ~TokenFile();
    TokenFile(const TokenFile&) = delete;
    TokenFile& operator=(const TokenFile&) = delete;
    const std::string& path() const { return path_; }
    const std::string& dtype() const { return dtype_; }
    int64_t tokens() const { return count_; }
    // [n, length] int64: row i holds the ids [starts[i], starts[i] + length).
    torch::Tensor windows(const std::vector<int64_t>& starts, int64_t length) const;

private:
    int64_t at(int64_t i) const;
    std::string path_, dtype_;
    int64_t bytes_per_id_ = 2, count_ = 0;
    size_t size_ = 0;
    const unsigned char* data_ = nullptr;
};

// Which samples each step takes (see the top of this file).
class EpochSampler {
public:
    EpochSampler(int64_t samples, int64_t global_batch, uint64_t seed);  // throws Error if samples < global_batch
    int64_t stepsPerEpoch() const { return steps_per_epoch_; }
    std::vector<int64_t> indices(int step) const;  // the global batch's samples, in order

private:
    int64_t samples_, batch_, steps_per_epoch_;
    uint64_t seed_;
};

class DataSource {
public:
    DataSource(const Trainable& model, uint64_t seed, std::optional<TensorFile> file, int64_t global_batch);
    DataSource(const Trainable& model, uint64_t seed, std::unique_ptr<TokenFile> tokens, int64_t global_batch);
    ~DataSource();
    // The global batch of `step` (CPU tensors).
    Batch batch(int step, int samples) const;
    // Sample indices of the global batch of `step` (empty for synthetic data).
    std::vector<int64_t> sampleIndices(int step) const;
    bool fromFile() const { return file_.has_value() || tokens_ != nullptr; }
    std::string describe() const;  // "synthetic (seed 7)" or "file data.pt (40 samples)"

    // Runs one batch of the file through the whole model (CPU, no autograd) and its loss; throws
    // Error naming the file, the shapes and what the model expected when they do not fit.
    void checkFitsModel(int samples) const;

private:
    const Trainable& model_;
    uint64_t seed_;
    std::optional<TensorFile> file_;
    std::unique_ptr<TokenFile> tokens_;
    std::optional<EpochSampler> sampler_;
};

}  // namespace hippie::engine
