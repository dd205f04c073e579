#include "engine/src/runtime/data.h"

#include <filesystem>
#include <fstream>
#include <iterator>

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

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

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

DataSource::DataSource(const Trainable& model, uint64_t seed, std::optional<TensorFile> file)
    : model_(model), seed_(seed), file_(std::move(file)) {}

Batch DataSource::batch(int step, int samples) const {
    if (!file_) return model_.synthetic(samples, seed_, step);
    const int64_t n = file_->inputs.size(0);
    const Tensor index = (torch::arange(samples, torch::kLong) + int64_t{step} * samples).remainder(n);
    return Batch{file_->inputs.index_select(0, index), file_->targets.index_select(0, index)};
}

std::string DataSource::describe() const {
    if (!file_) return "synthetic (seed " + std::to_string(seed_) + ")";
    return "file " + file_->path + " (" + std::to_string(file_->inputs.size(0)) + " samples, inputs " + describeTensor(file_->inputs) +
           ", targets " + describeTensor(file_->targets) + ")";
}

void DataSource::checkFitsModel(int samples) const {
    if (!file_) return;
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
        Live x{{kDataKey, b.inputs}};
        for (const LayerPtr& l : layers) {
            l->eval();  // batch-norm running statistics stay untouched
            if (const auto tied = l->tiedWeight()) l->setTied(*layers.at(static_cast<size_t>(tied->owner_layer))->named_parameters().find(tied->owner_param));
            l->run(x);
        }
        (void)model_.loss(x, b.targets);
    } catch (const std::exception& e) {
        throw Error("data file '" + file_->path + "' does not fit the model " + model_.name() + ": inputs " + describeTensor(b.inputs) +
                    ", targets " + describeTensor(b.targets) + expected + " (" + firstLine(e.what()) + ")");
    }
}

}  // namespace hippie::engine
