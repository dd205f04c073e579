#include "engine/src/runtime/data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <ATen/CPUGeneratorImpl.h>

#include "planners/common/error.h"

namespace hippie::engine {

using torch::Tensor;

namespace {

std::string shapeString(c10::IntArrayRef s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
    return out + "]";
}

std::string describeTensor(const Tensor& t) { return shapeString(t.sizes()) + " " + std::string(c10::toString(t.scalar_type())); }

}  // namespace

TensorFile loadTensorFile(const std::string& path) {
    const std::string what = "data file '" + path + "'";
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(what + " cannot be read: " + (std::filesystem::exists(path) ? "permission denied" : "no such file"));
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    c10::IValue v;
    try {
        v = torch::pickle_load(bytes);
    } catch (const std::exception& e) {
        throw Error(what + " is not a tensor file (a pickled (inputs, targets) pair written by torch.save or hippie-engine "
                           "make-data): " + firstLine(e.what()));
    }
    TensorFile t;
    t.path = path;
    auto take = [&](const c10::IValue& a, const c10::IValue& b) {
        if (!a.isTensor() || !b.isTensor()) throw Error(what + ": inputs and targets must both be tensors");
        t.inputs = a.toTensor();
        t.targets = b.toTensor();
    };
    if (v.isTuple() && v.toTupleRef().elements().size() == 2) take(v.toTupleRef().elements()[0], v.toTupleRef().elements()[1]);
    else if (v.isList() && v.toListRef().size() == 2) take(v.toListRef()[0], v.toListRef()[1]);
    else if (v.isGenericDict()) {
        const auto d = v.toGenericDict();
        if (!d.contains("inputs") || !d.contains("targets")) throw Error(what + ": the dict needs the keys \"inputs\" and \"targets\"");
        take(d.at("inputs"), d.at("targets"));
    } else {
        throw Error(what + " holds a " + v.tagKind() + ", not (inputs, targets)");
    }
    if (t.inputs.dim() < 1 || t.targets.dim() < 1 || t.inputs.size(0) != t.targets.size(0) || t.inputs.size(0) == 0)
        throw Error(what + ": inputs " + describeTensor(t.inputs) + " and targets " + describeTensor(t.targets) +
                    " must have the same positive number of samples in dimension 0");
    t.inputs = t.inputs.to(torch::kCPU).contiguous();
    t.targets = t.targets.to(torch::kCPU).contiguous();
    return t;
}

void saveTensorFile(const std::string& path, const Tensor& inputs, const Tensor& targets) {
    const std::vector<char> bytes = torch::pickle_save(c10::ivalue::Tuple::create({inputs, targets}));
    std::ofstream f(path, std::ios::binary);
    if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) throw Error("cannot write data file '" + path + "'");
}

TokenFile::TokenFile(const std::string& path, const std::string& dtype, int64_t vocab) : path_(path), dtype_(dtype) {
    const std::string what = "token file '" + path + "'";
    if (dtype == "uint16") bytes_per_id_ = 2;
    else if (dtype == "uint32") bytes_per_id_ = 4;
    else throw Error("--token-dtype must be uint16 or uint32, not '" + dtype + "'");
    if (vocab <= 0) throw Error(what + ": the model reads no token ids (token files are for GPT and BERT models)");
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(what + " cannot be read: " + std::strerror(errno));
    struct stat st {};
    fstat(fd, &st);
    size_ = static_cast<size_t>(st.st_size);
    if (size_ % static_cast<size_t>(bytes_per_id_) != 0) {
        close(fd);
        throw Error(what + ": " + std::to_string(size_) + " bytes is not a whole number of " + dtype + " ids (wrong --token-dtype?)");
    }
    count_ = static_cast<int64_t>(size_) / bytes_per_id_;
    if (size_ > 0) {
        void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            throw Error(what + " cannot be mapped: " + std::strerror(errno));
        }
        data_ = static_cast<const unsigned char*>(m);
    }
    close(fd);
    // Every id is checked once, here: an out-of-range id would otherwise be an index error
    // deep inside an embedding, on one rank, at some step.
    for (int64_t i = 0; i < count_; ++i) {
        const int64_t id = at(i);
        if (id >= vocab)
            throw Error(what + ": token id " + std::to_string(id) + " at offset " + std::to_string(i) + " (byte " +
                        std::to_string(i * bytes_per_id_) + ") is not below the model's vocabulary of " + std::to_string(vocab) +
                        " (wrong --token-dtype, or a file tokenized for another vocabulary?)");
    }
}

TokenFile::~TokenFile() {
    if (data_) munmap(const_cast<unsigned char*>(data_), size_);
}

int64_t TokenFile::at(int64_t i) const {
    const unsigned char* p = data_ + i * bytes_per_id_;
    if (bytes_per_id_ == 2) {
        uint16_t v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

Tensor TokenFile::windows(const std::vector<int64_t>& starts, int64_t length) const {
    Tensor out = torch::empty({static_cast<int64_t>(starts.size()), length}, torch::kLong);
    int64_t* o = out.data_ptr<int64_t>();
    for (size_t r = 0; r < starts.size(); ++r)
        for (int64_t j = 0; j < length; ++j) *o++ = at(starts[r] + j);
    return out;
}

EpochSampler::EpochSampler(int64_t samples, int64_t global_batch, uint64_t seed)
    : samples_(samples), batch_(global_batch), steps_per_epoch_(global_batch > 0 ? samples / global_batch : 0), seed_(seed) {
    if (steps_per_epoch_ < 1)
        throw Error("the data has " + std::to_string(samples) + " samples, fewer than the global batch of " + std::to_string(global_batch));
}

std::vector<int64_t> EpochSampler::indices(int step) const {
    constexpr uint64_t kEpochSeedStride = 1000003;  // seeds of (seed, epoch) pairs do not collide for small epochs
    const int64_t epoch = step / steps_per_epoch_, k = step % steps_per_epoch_;
    auto gen = at::detail::createCPUGenerator(seed_ * kEpochSeedStride + static_cast<uint64_t>(epoch));
    const Tensor perm = torch::randperm(samples_, gen, torch::kLong).narrow(0, k * batch_, batch_).contiguous();
    return std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + batch_);
}

DataSource::DataSource(const Trainable& model, uint64_t seed, std::optional<TensorFile> file, int64_t global_batch)
    : model_(model), seed_(seed), file_(std::move(file)) {
    if (file_) sampler_.emplace(file_->inputs.size(0), global_batch, seed);
}

DataSource::DataSource(const Trainable& model, uint64_t seed, std::unique_ptr<TokenFile> tokens, int64_t global_batch)
    : model_(model), seed_(seed), tokens_(std::move(tokens)) {
    const int64_t s = model_.sequenceLength();
    const int64_t samples = s > 0 && tokens_->tokens() > 0 ? (tokens_->tokens() - 1) / s : 0;
    if (samples < global_batch)
        throw Error("token file '" + tokens_->path() + "': " + std::to_string(tokens_->tokens()) + " ids make " + std::to_string(samples) +
                    " samples of " + std::to_string(s) + "+1 ids, fewer than the global batch of " + std::to_string(global_batch));
    sampler_.emplace(samples, global_batch, seed);
}

DataSource::~DataSource() = default;

std::vector<int64_t> DataSource::sampleIndices(int step) const { return sampler_ ? sampler_->indices(step) : std::vector<int64_t>{}; }

Batch DataSource::batch(int step, int samples) const {
    if (!file_ && !tokens_) return model_.synthetic(samples, seed_, step);
    std::vector<int64_t> idx = sampler_->indices(step);
    idx.resize(std::min(idx.size(), static_cast<size_t>(samples)));  // a probe of the first samples
    if (tokens_) {
        const int64_t s = model_.sequenceLength();
        std::vector<int64_t> starts;
        for (int64_t i : idx) starts.push_back(i * s);
        return model_.tokenBatch(tokens_->windows(starts, s + 1));
    }
    const Tensor index = torch::tensor(idx, torch::kLong);
    return Batch{file_->inputs.index_select(0, index), file_->targets.index_select(0, index)};
}

std::string DataSource::describe() const {
    if (tokens_)
        return "token file " + tokens_->path() + " (" + std::to_string(tokens_->tokens()) + " " + tokens_->dtype() + " ids, " +
               std::to_string(sampler_->stepsPerEpoch()) + " steps per epoch)";
    if (!file_) return "synthetic (seed " + std::to_string(seed_) + ")";
    return "file " + file_->path + " (" + std::to_string(file_->inputs.size(0)) + " samples, inputs " + describeTensor(file_->inputs) +
           ", targets " + describeTensor(file_->targets) + ")";
}

void DataSource::checkFitsModel(int samples) const {
    if (!file_) return;  // token files are checked against the vocabulary when opened
    const Batch b = batch(0, samples);
    std::string expected;
    try {
        const Batch s = model_.synthetic(samples, seed_, 0);
        expected = "; the model's own data has inputs " + describeTensor(s.inputs) + " and targets " + describeTensor(s.targets);
        if (s.inputs.sizes().slice(1) != b.inputs.sizes().slice(1) || s.inputs.scalar_type() != b.inputs.scalar_type() ||
            s.targets.sizes().slice(1) != b.targets.sizes().slice(1) || s.targets.scalar_type() != b.targets.scalar_type())
            throw Error("data file '" + file_->path + "': a batch of " + std::to_string(samples) + " has inputs " + describeTensor(b.inputs) +
                        " and targets " + describeTensor(b.targets) + expected);
    } catch (const Error&) {
        if (!expected.empty()) throw;  // a mismatch; otherwise the model has no synthetic data to compare with
    }
    try {
        torch::NoGradGuard no_grad;
        auto layers = model_.layers(0, model_.layerCount() - 1, seed_, torch::Device(torch::kCPU));
        tieWeightsInPlace(layers);
        Live x{{kDataKey, b.inputs}};
        for (const LayerPtr& l : layers) {
            l->eval();  // batch-norm running statistics stay untouched
            l->run(x);
        }
        (void)model_.loss(x, b.targets);
    } catch (const std::exception& e) {
        throw Error("data file '" + file_->path + "' does not fit the model " + model_.name() + ": inputs " + describeTensor(b.inputs) +
                    ", targets " + describeTensor(b.targets) + expected + " (" + firstLine(e.what()) + ")");
    }
}

}  // namespace hippie::engine
