#include "engine/src/models/trainable.h"

#include <algorithm>
#include <filesystem>

#include <torch/script.h>

#include "planners/common/error.h"

namespace hippie::engine {

using torch::Tensor;

namespace {

constexpr uint64_t kDataSeedStride = 1000003;  // as zoo_trainable.cpp: data apart from parameters
constexpr uint64_t kTeacherSeed = 424242;

std::string shapeString(c10::IntArrayRef s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
    return out + "]";
}

// One top-level child of a scripted module as a pipeline layer. Its parameters are registered
// here too (same tensors), so stages, buckets and the optimizer see them like any module's.
class ScriptLayer : public LayerModule {
public:
    ScriptLayer(std::string name, torch::jit::Module m) : name_(std::move(name)), m_(std::move(m)) {
        for (const auto& p : m_.named_parameters(/*recurse=*/true)) {
            std::string n = p.name;
            std::replace(n.begin(), n.end(), '.', '_');  // nn::Module names may not contain dots
            register_parameter(n, p.value, /*requires_grad=*/true);
        }
    }
    Tensor forward(Tensor x) override {
        const c10::IValue out = m_.forward({x});
        TORCH_CHECK(out.isTensor(), "child '", name_, "' returns ", out.tagKind(), ", not a tensor: a trainable TorchScript module's ",
                    "top-level children must each take and return one tensor");
        return out.toTensor();
    }
    void train(bool on) override {
        torch::nn::Module::train(on);
        m_.train(on);
    }

private:
    std::string name_;
    torch::jit::Module m_;
};

class ScriptTrainable : public Trainable {
public:
    ScriptTrainable(const std::string& file, const std::vector<int64_t>& sample_shape, torch::ScalarType dtype)
        : file_(file), sample_shape_(sample_shape), dtype_(dtype) {
        try {
            module_ = torch::jit::load(file);
        } catch (const std::exception& e) {
            throw Error("'" + file + "' is not a TorchScript module that LibTorch can load: " + firstLine(e.what()));
        }
        module_.train();
        for (const auto& c : module_.named_children()) children_.push_back({c.name, c.value});
        if (children_.empty())
            throw Error("'" + file + "' has no top-level children: the engine trains a TorchScript module split at its children, "
                        "which must run in sequence");
        if (!sample_shape_.empty() && dtype_ == torch::kFloat) {
            // The output's shape for one sample decides the synthetic labels.
            torch::NoGradGuard no_grad;
            module_.eval();
            std::vector<int64_t> shape{1};
            shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
            try {
                Tensor x = torch::zeros(shape);
                for (auto& c : children_) x = c.second.forward({x}).toTensor();
                output_shape_ = x.sizes().vec();
            } catch (const std::exception& e) {
                module_.train();
                throw Error("running '" + file + "' on one sample of shape " + shapeString(sample_shape_) +
                            " failed (check --input-shape): " + firstLine(e.what()));
            }
            module_.train();
        }
    }
    std::string name() const override { return std::filesystem::path(file_).stem().string(); }
    int layerCount() const override { return static_cast<int>(children_.size()); }
    std::vector<LayerPtr> layers(int first, int last, uint64_t, const torch::Device& device) const override {
        std::vector<LayerPtr> out;
        for (int i = first; i <= last; ++i) {
            torch::jit::Module child = children_.at(static_cast<size_t>(i)).second;
            child.to(device);
            out.push_back(std::make_shared<ScriptLayer>(children_[static_cast<size_t>(i)].first, child));
        }
        return out;
    }
    Batch synthetic(int samples, uint64_t seed, int step) const override {
        if (sample_shape_.empty())
            throw Error("training the TorchScript model '" + file_ + "' needs --data FILE or --input-shape (one sample's shape)");
        if (dtype_ != torch::kFloat || output_shape_.size() != 2)
            throw Error("synthetic data for '" + file_ +
                        "' is defined for float inputs and [batch, classes] outputs only; pass --data FILE");
        torch::manual_seed(seed * kDataSeedStride + static_cast<uint64_t>(step) + 1);
        std::vector<int64_t> shape{samples};
        shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
        Batch b;
        b.inputs = torch::randn(shape);
        torch::manual_seed(kTeacherSeed);
        const Tensor flat = b.inputs.flatten(1);
        const Tensor teacher = torch::randn({flat.size(1), output_shape_[1]});
        b.targets = torch::matmul(flat, teacher).argmax(1);
        return b;
    }
    using Trainable::loss;
    Tensor loss(const Tensor& output, const Tensor& targets) const override {
        if (targets.scalar_type() == torch::kLong) return torch::nn::functional::cross_entropy(output, targets);
        return torch::mse_loss(output, targets);
    }

private:
    std::string file_;
    std::vector<int64_t> sample_shape_;
    torch::ScalarType dtype_;
    mutable torch::jit::Module module_;
    std::vector<std::pair<std::string, torch::jit::Module>> children_;
    std::vector<int64_t> output_shape_;
};

}  // namespace

void tieWeightsInPlace(const std::vector<LayerPtr>& layers) {
    for (const LayerPtr& l : layers)
        if (const auto tied = l->tiedWeight()) l->setTied(*layers.at(static_cast<size_t>(tied->owner_layer))->named_parameters().find(tied->owner_param));
}

std::unique_ptr<Trainable> makeScriptTrainable(const std::string& pt_file, const std::vector<int64_t>& sample_shape,
                                               torch::ScalarType sample_dtype) {
    return std::make_unique<ScriptTrainable>(pt_file, sample_shape, sample_dtype);
}

}  // namespace hippie::engine
