#include "engine/src/inspect/kernel_probe.h"

#include <algorithm>
#include <functional>

#include "engine/src/device/device.h"
#include "engine/src/inspect/timing.h"
#include "planners/cost/cost_model.h"

namespace hippie::engine {

using torch::Tensor;

namespace {

using timing::Clock;
using timing::median;
using timing::secondsSince;

constexpr double kFp32Bytes = 4;
// A small convolution's time beyond the FLOP curve is its lower efficiency at that size, not
// bytes: it gets no bytes rate but a half-rate size of its own (below).
constexpr const char* kConvKind = "conv2d";
constexpr int kMinRepeats = 3;

// One kind at one size: its leaves (inputs and weights, requiring grad as in training), the
// forward over them, and what the zoo counts for the op.
struct Case {
    double activation_elements = 0;  // inputs + outputs (+ kept state), as zoo.cpp's GraphBuilder::add
    double param_elements = 0;
    double forward_flops = 0, backward_flops = 0;  // only where they matter: matmuls, convolutions
    std::vector<Tensor> leaves;
    std::function<Tensor()> forward;
};

using Options = torch::TensorOptions;

Tensor leaf(std::vector<int64_t> shape, const Options& o) { return torch::randn(shape, o).requires_grad_(true); }

// Elements of the flat tensors of the elementwise kinds at each size.
int64_t elements(bool large) { return large ? int64_t{1} << 20 : 256; }

// Weight-free one-input ops: input + output.
Case unary(bool large, const Options& o, std::function<Tensor(const Tensor&)> f) {
    const int64_t n = elements(large);
    Case c;
    c.leaves = {leaf({n}, o)};
    c.activation_elements = 2.0 * static_cast<double>(n);
    c.forward = [x = c.leaves[0], f] { return f(x); };
    return c;
}

// The kinds and their two sizes. Each mirrors how the engine's layers call LibTorch
// (engine/src/models): GELU's tanh form, training-mode batch norm, ResNet's 3x3 stride-2
// max pool, a linear layer of a few rows (the skinny matmul that streams its weights), a
// 3x3 convolution without bias, attention's batched Q K^T.
std::vector<std::pair<std::string, std::function<Case(bool)>>> kinds(const Options& o) {
    return {
        {"add", [o](bool large) {
             const int64_t n = elements(large);
             Case c;
             c.leaves = {leaf({n}, o), leaf({n}, o)};
             c.activation_elements = 3.0 * static_cast<double>(n);
             c.forward = [a = c.leaves[0], b = c.leaves[1]] { return a + b; };
             return c;
         }},
        {"relu", [o](bool large) { return unary(large, o, [](const Tensor& x) { return torch::relu(x); }); }},
        {"gelu", [o](bool large) { return unary(large, o, [](const Tensor& x) { return torch::gelu(x, "tanh"); }); }},
        {"tanh", [o](bool large) { return unary(large, o, [](const Tensor& x) { return torch::tanh(x); }); }},
        {"softmax", [o](bool large) {
             const int64_t rows = large ? 16384 : 4, cols = 64;
             Case c;
             c.leaves = {leaf({rows, cols}, o)};
             c.activation_elements = 2.0 * static_cast<double>(rows * cols);
             c.forward = [x = c.leaves[0]] { return torch::softmax(x, -1); };
             return c;
         }},
        {"layernorm", [o](bool large) {
             const int64_t rows = large ? 1024 : 4, d = large ? 768 : 64;
             Case c;
             c.leaves = {leaf({rows, d}, o), leaf({d}, o), leaf({d}, o)};
             c.activation_elements = 2.0 * static_cast<double>(rows * d);
             c.param_elements = 2.0 * static_cast<double>(d);
             c.forward = [x = c.leaves[0], w = c.leaves[1], b = c.leaves[2], d] { return torch::layer_norm(x, {d}, w, b); };
             return c;
         }},
        {"batchnorm", [o](bool large) {
             const int64_t b = large ? 8 : 1, ch = large ? 64 : 8, side = large ? 32 : 4;
             Case c;
             c.leaves = {leaf({b, ch, side, side}, o), leaf({ch}, o), leaf({ch}, o)};
             c.activation_elements = 2.0 * static_cast<double>(b * ch * side * side);
             c.param_elements = 2.0 * static_cast<double>(ch);
             const Tensor mean = torch::zeros({ch}, o), var = torch::ones({ch}, o);
             c.forward = [x = c.leaves[0], w = c.leaves[1], bias = c.leaves[2], mean, var] {
                 return torch::batch_norm(x, w, bias, mean, var, /*training=*/true, 0.1, 1e-5, /*cudnn_enabled=*/true);
             };
             return c;
         }},
        {"maxpool", [o](bool large) {
             const int64_t b = large ? 8 : 1, ch = large ? 64 : 8, side = large ? 32 : 8;
             Case c;
             c.leaves = {leaf({b, ch, side, side}, o)};
             const int64_t out_side = (side + 2 - 3) / 2 + 1;
             c.activation_elements = static_cast<double>(b * ch * (side * side + out_side * out_side));
             c.forward = [x = c.leaves[0]] { return torch::max_pool2d(x, 3, 2, 1); };
             return c;
         }},
        {"concat", [o](bool large) {
             const int64_t b = large ? 8 : 1, ch = large ? 32 : 4, side = large ? 32 : 4;
             Case c;
             c.leaves = {leaf({b, ch, side, side}, o), leaf({b, ch, side, side}, o)};
             c.activation_elements = 4.0 * static_cast<double>(b * ch * side * side);  // two inputs, an output of both
             c.forward = [x = c.leaves[0], y = c.leaves[1]] { return torch::cat({x, y}, 1); };
             return c;
         }},
        {"cross_entropy", [o](bool large) {
             const int64_t rows = large ? 256 : 4, classes = large ? 4096 : 16;
             Case c;
             c.leaves = {leaf({rows, classes}, o)};
             // The logits in, a loss per row out, the probabilities kept (zoo.cpp's crossEntropyCost).
             c.activation_elements = static_cast<double>(2 * rows * classes + rows);
             const Tensor targets = torch::randint(classes, {rows}, Options().dtype(torch::kLong).device(o.device()));
             c.forward = [x = c.leaves[0], targets] { return torch::nn::functional::cross_entropy(x, targets); };
             return c;
         }},
        {"matmul", [o](bool large) {
             const int64_t rows = 4, k = large ? 1024 : 64;
             Case c;
             c.leaves = {leaf({rows, k}, o), leaf({k, k}, o), leaf({k}, o)};
             c.activation_elements = 2.0 * static_cast<double>(rows * k);
             c.param_elements = static_cast<double>(k * k + k);
             c.forward_flops = 2.0 * static_cast<double>(rows * k * k);
             c.backward_flops = 2 * c.forward_flops;
             c.forward = [x = c.leaves[0], w = c.leaves[1], b = c.leaves[2]] { return torch::linear(x, w, b); };
             return c;
         }},
        {"attention", [o](bool large) {
             const int64_t b = large ? 4 : 1, heads = large ? 12 : 1, seq = large ? 64 : 8, d = large ? 64 : 8;
             Case c;
             c.leaves = {leaf({b, heads, seq, d}, o), leaf({b, heads, seq, d}, o)};
             c.activation_elements = static_cast<double>(2 * b * heads * seq * d + b * heads * seq * seq);
             c.forward_flops = 2.0 * static_cast<double>(b * heads * seq * seq * d);
             c.backward_flops = 2 * c.forward_flops;
             c.forward = [q = c.leaves[0], k = c.leaves[1]] { return torch::matmul(q, k.transpose(-2, -1)); };
             return c;
         }},
        {kConvKind, [o](bool large) {
             const int64_t b = large ? 4 : 1, ch = large ? 16 : 4, side = large ? 32 : 8;
             Case c;
             c.leaves = {leaf({b, ch, side, side}, o), leaf({ch, ch, 3, 3}, o)};
             c.activation_elements = 2.0 * static_cast<double>(b * ch * side * side);
             c.param_elements = static_cast<double>(ch * ch * 9);
             c.forward_flops = 2.0 * static_cast<double>(b * 9 * ch * ch * side * side);
             c.backward_flops = 2 * c.forward_flops;
             c.forward = [x = c.leaves[0], w = c.leaves[1]] { return torch::conv2d(x, w, {}, 1, 1); };
             return c;
         }},
    };
}

// Median forward and backward seconds of `c` over about `seconds` (at least kMinRepeats).
std::pair<double, double> timePasses(const torch::Device& device, Case& c, double seconds) {
    std::vector<double> forward, backward;
    const auto pass = [&](bool record) {
        for (Tensor& l : c.leaves) l.mutable_grad().reset();
        synchronizeDevice(device);
        const auto t0 = Clock::now();
        const Tensor y = c.forward();
        synchronizeDevice(device);
        const double f = secondsSince(t0);
        const Tensor grad = torch::ones_like(y);
        synchronizeDevice(device);
        const auto t1 = Clock::now();
        y.backward(grad);
        synchronizeDevice(device);
        const double b = secondsSince(t1);
        if (!record) return;
        forward.push_back(f);
        backward.push_back(b);
    };
    pass(false);  // warm-up: allocations, the library's choice of kernel
    const auto start = Clock::now();
    while (secondsSince(start) < seconds || forward.size() < kMinRepeats) pass(true);
    return {median(forward), median(backward)};
}

}  // namespace

KernelProbe probeKernels(const torch::Device& device, const ComputeRates& rates, double seconds) {
    const Options o = Options().device(device);
    const auto table = kinds(o);
    const double share = seconds / static_cast<double>(2 * table.size());
    KernelProbe probe;
    for (const auto& [kind, make] : table) {
        KernelSample sizes[2];
        for (int large = 0; large < 2; ++large) {
            Case c = make(large == 1);
            const auto [f, b] = timePasses(device, c, share);
            sizes[large] = {kind, c.activation_elements * kFp32Bytes, c.param_elements * kFp32Bytes, c.forward_flops, c.backward_flops, f, b};
            probe.samples.push_back(sizes[large]);
        }
        const double flops = rates.matmul_flops_per_s * (kind == kConvKind ? rates.conv_efficiency : 1.0);
        KernelTiming k;
        for (const bool backward : {false, true}) {
            KernelPassTime p[2];
            for (int i = 0; i < 2; ++i)
                p[i] = {passBytes(sizes[i].activation_bytes, sizes[i].param_bytes, backward), backward ? sizes[i].backward_flops : sizes[i].forward_flops,
                        backward ? sizes[i].backward_s : sizes[i].forward_s};
            const KernelPassFit fit = fitKernelPass(p[0], p[1], flops, kind != kConvKind);
            (backward ? k.backward_bytes_per_s : k.forward_bytes_per_s) = fit.bytes_per_s;
            (backward ? k.backward_overhead_s : k.forward_overhead_s) = fit.overhead_s;
        }
        // conv_efficiency is measured at CNN sizes; the large size here is a small convolution,
        // slower per FLOP: the half-rate size that explains its time beyond the overheads,
        // (F + h) / rate forward plus (F_b + 2 h) / rate backward (two kernels).
        if (kind == kConvKind && flops > 0) {
            const KernelSample& l = sizes[1];
            const double busy = (l.forward_s - k.forward_overhead_s) + (l.backward_s - k.backward_overhead_s);
            k.half_rate_flops = std::max(0.0, (busy * flops - l.forward_flops - l.backward_flops) / 3.0);
        }
        probe.kernels.emplace(kind, k);
    }
    return probe;
}

}  // namespace hippie::engine
