// TorchScript in and out: `inspect` turns a scripted module into graph JSON with measured
// per-layer times (layers = its top-level children, ops = the aten calls inside each);
// `export-script` writes the zoo's MLP as such a module, built here from TorchScript source,
// so the engine needs no Python to produce a .pt file.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include "engine/src/inspect/tools.h"
#include "engine/src/models/trainable.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/architecture.h"
#include "planners/model/overrides.h"
#include "planners/model/presets.h"

namespace hippie::engine {

using nlohmann::json;
using torch::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int fail(const std::string& message) {
    std::cout << json{{"event", "error"}, {"message", message}, {"exit_code", 2}}.dump() << std::endl;
    return 2;
}

struct Child {
    std::string name;
    torch::jit::Module module;
};

std::vector<std::string> atenOps(torch::jit::Module& m) {
    std::vector<std::string> ops;
    if (!m.find_method("forward")) return ops;
    auto graph = m.get_method("forward").graph()->copy();
    torch::jit::Inline(*graph);
    for (const torch::jit::Node* n : graph->nodes()) {
        const std::string kind = n->kind().toQualString();
        if (kind.rfind("aten::", 0) == 0) ops.push_back(kind.substr(6));
    }
    return ops;
}

}  // namespace

Graph scriptGraph(const std::string& file, const std::vector<int64_t>& shape, const std::string& input_dtype, int repeats,
                  json* layers_out) {
    if (shape.empty()) throw Error("an input shape is required, e.g. --input-shape 8,32");
    if (input_dtype != "float" && input_dtype != "long") throw Error("the input dtype must be float or long, not '" + input_dtype + "'");
    torch::jit::Module module;
    try {
        module = torch::jit::load(file);
    } catch (const std::exception& e) {
        throw Error("'" + file + "' is not a TorchScript module that LibTorch can load: " + firstLine(e.what()));
    }
    module.train();
    std::vector<Child> children;
    for (const auto& c : module.named_children()) children.push_back({c.name, c.value});
    if (children.empty()) children.push_back({"module", module});
    Tensor x = input_dtype == "long" ? torch::zeros(shape, torch::kLong) : torch::randn(shape);

    Graph g;
    g.name = std::filesystem::path(file).stem().string();
    g.batch_size = static_cast<int>(shape[0]);
    g.source.file = file;
    g.source.batch_size = g.batch_size;
    json layers = json::array();
    int prev_last_op = -1;
    int64_t prev_out_bytes = 0;
    try {
        for (size_t i = 0; i < children.size(); ++i) {
            Child& c = children[i];
            const Tensor in = x.is_floating_point() ? x.detach().requires_grad_(true) : x;
            std::vector<double> tf, tb;
            Tensor y;
            for (int r = 0; r < std::max(0, repeats) + 1; ++r) {
                auto t0 = Clock::now();
                const c10::IValue out = c.module.forward({in});
                if (!out.isTensor())
                    throw Error("child '" + c.name + "' of '" + file + "' returns " + out.tagKind() +
                                ", not a tensor: the engine needs top-level children that run in sequence");
                y = out.toTensor();
                if (r > 0) tf.push_back(secondsSince(t0));
                if (y.requires_grad() && repeats > 0) {
                    t0 = Clock::now();
                    y.backward(torch::ones_like(y) / std::max<int64_t>(1, y.numel()));
                    if (r > 0) tb.push_back(secondsSince(t0));
                }
            }
            std::sort(tf.begin(), tf.end());
            std::sort(tb.begin(), tb.end());
            const bool timed = !tf.empty();  // repeats 0: shapes only
            const double fwd = timed ? tf[tf.size() / 2] : 0, bwd = tb.empty() ? 0 : tb[tb.size() / 2];
            int64_t param_bytes = 0;
            for (const Tensor& p : c.module.parameters()) param_bytes += static_cast<int64_t>(p.nbytes());
            std::vector<std::string> ops = atenOps(c.module);
            if (ops.empty()) ops.push_back("module");
            const int64_t out_bytes = static_cast<int64_t>(y.nbytes());
            for (size_t k = 0; k < ops.size(); ++k) {
                Op op;
                op.name = c.name + "." + ops[k] + "_" + std::to_string(k);
                op.kind = ops[k];
                op.layer = static_cast<int>(i);
                if (timed) {
                    op.fwd_time_s = fwd / static_cast<double>(ops.size());
                    op.bwd_time_s = bwd / static_cast<double>(ops.size());
                }
                op.param_bytes = k == 0 ? param_bytes : 0;
                op.output_bytes = k + 1 == ops.size() ? out_bytes : 0;
                const int id = static_cast<int>(g.ops.size());
                g.ops.push_back(op);
                if (prev_last_op >= 0) g.edges.push_back(Edge{prev_last_op, id, k == 0 ? prev_out_bytes : 0});
                prev_last_op = id;
            }
            prev_out_bytes = out_bytes;
            layers.push_back({{"name", c.name}, {"ops", ops.size()}, {"fwd_time_s", fwd}, {"bwd_time_s", bwd},
                              {"param_bytes", param_bytes}, {"output_shape", y.sizes().vec()}});
            x = y.detach();
        }
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error("running '" + file + "' on an input of shape " + json(shape).dump() + " failed: " + firstLine(e.what()));
    }
    if (layers_out) *layers_out = layers;
    return g;
}

int inspectCommand(const std::string& file, const std::vector<long long>& input_shape, const std::string& input_dtype, int repeats,
                   const std::string& out_file) {
    if (input_shape.empty()) return fail("--input-shape is required, e.g. --input-shape 8,32");
    if (input_dtype != "float" && input_dtype != "long") return fail("--input-dtype must be float or long");
    json layers;
    Graph g;
    try {
        g = scriptGraph(file, std::vector<int64_t>(input_shape.begin(), input_shape.end()), input_dtype, std::max(1, repeats), &layers);
        if (out_file.empty()) std::cout << graphToJson(g).dump(2) << std::endl;
        else saveGraphFile(g, out_file);
    } catch (const Error& e) {
        return fail(e.what());
    }
    if (!out_file.empty())
        std::cout << json{{"event", "inspect"}, {"file", file}, {"layers", layers}, {"ops", g.ops.size()}}.dump() << std::endl;
    return 0;
}

int exportScriptCommand(const std::string& model, const std::string& overrides, const std::string& out_file, unsigned long long seed) {
    ModelSpec spec;
    spec.zoo = model;
    const Architecture* arch = publishedArchitecture(expandPreset(spec).zoo);
    if (!arch || std::string(familyOf(*arch)) != "mlp") return fail("export-script writes the zoo's MLP (mlp, mlp-tiny); got '" + model + "'");
    try {
        applyOverrideText(spec, overrides);
        const std::unique_ptr<Trainable> mlp = makeZooTrainable(expandPreset(spec));
        const int layers = mlp->layerCount();
        const auto modules = mlp->layers(0, layers - 1, seed, torch::kCPU);
        torch::jit::Module top("HippieMlp");
        std::string body = "def forward(self, x):\n";
        for (int i = 0; i < layers; ++i) {
            const std::string name = "fc" + std::to_string(i);
            torch::jit::Module child("HippieDense" + std::to_string(i));
            auto params = modules[static_cast<size_t>(i)]->named_parameters();
            child.register_parameter("weight", params["linear.weight"].detach().clone(), false);
            child.register_parameter("bias", params["linear.bias"].detach().clone(), false);
            const bool relu = i + 1 < layers;
            child.define(std::string("def forward(self, x):\n    y = torch.matmul(x, self.weight.t()) + self.bias\n    return ") +
                         (relu ? "torch.relu(y)\n" : "y\n"));
            top.register_module(name, child);
            body += "    x = self." + name + ".forward(x)\n";
        }
        top.define(body + "    return x\n");
        top.save(out_file);
    } catch (const std::exception& e) {
        return fail("writing TorchScript '" + out_file + "' failed: " + std::string(e.what()).substr(0, 600));
    }
    std::cout << json{{"event", "export"}, {"model", model}, {"file", out_file}}.dump() << std::endl;
    return 0;
}

}  // namespace hippie::engine
