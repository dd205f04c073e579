#include "engine/src/inspect/kernel_probe.h"

#include <algorithm>
#include <cmath>
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
    std::vector<Tensor> leaves;  // the inputs first, then the weights (param_elements > 0)
    std::function<Tensor()> forward;
    bool weighted() const { return param_elements > 0; }
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

// A 3x3 convolution without bias, `ch` channels in and out on `side` x `side` images.
Case convCase(const Options& o, int64_t b, int64_t ch, int64_t side) {
    Case c;
    c.leaves = {leaf({b, ch, side, side}, o), leaf({ch, ch, 3, 3}, o)};
    c.activation_elements = 2.0 * static_cast<double>(b * ch * side * side);
    c.param_elements = static_cast<double>(ch * ch * 9);
    c.forward_flops = 2.0 * static_cast<double>(b * 9 * ch * ch * side * side);
    c.backward_flops = 2 * c.forward_flops;
    c.forward = [x = c.leaves[0], w = c.leaves[1]] { return torch::conv2d(x, w, {}, 1, 1); };
    return c;
}

// Small CNNs' convolutions besides the table's large size, for the half-rate size: the
// channels and image sides of a ResNet or VGG at a quarter width on 32-64 pixel images.
struct ConvShape {
    int64_t batch, channels, side;
};
constexpr ConvShape kSmallConvs[] = {{4, 8, 32}, {4, 32, 16}, {4, 64, 8}};

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
        {kConvKind, [o](bool large) { return large ? convCase(o, 4, 16, 32) : convCase(o, 1, 4, 8); }},
    };
}

// A weighted kind is timed over copies of its case taking this many bytes in all (at most
// kMaxCopies), used in turn: more than any CPU's last-level cache slice a rank sees, or a
// GPU's L2.
constexpr double kColdBytes = 128.0 * (1 << 20);
constexpr int kMaxCopies = 64;

int copiesOf(const Case& c) {
    if (!c.weighted()) return 1;
    const double bytes = (c.activation_elements + c.param_elements) * kFp32Bytes;
    return static_cast<int>(std::clamp(std::ceil(kColdBytes / bytes), 1.0, static_cast<double>(kMaxCopies)));
}

// Forward and backward seconds of each group of cases, the groups run in turn for about
// `seconds` (at least kMinRepeats rounds), each group's copies in turn (copiesOf), after one
// untimed pass of every case (allocations, the library's choice of kernel). In turn, so that
// a stall of the host (this VM stops a process for 10-80 ms now and then) costs each kind a
// pass, not one kind its every pass. Copies of a weighted case meet their weights and saved
// inputs out of the caches, as a training step does: a layer's weights were last used a
// whole pass earlier, and the model's other layers streamed through the caches meanwhile.
// Timed on one copy, a 4 x 1024 linear streams its 4 MiB weight from the cache, and a small
// MLP's step ran 1.5 times what that table predicted here. A copy's input, as if just
// written by the op before it, is read into the cache first.
struct PassTimes {
    std::vector<double> forward, backward;
};
std::vector<PassTimes> timeInTurn(const torch::Device& device, std::vector<std::vector<Case>>& groups, double seconds) {
    std::vector<PassTimes> times(groups.size());
    const auto pass = [&](size_t g, size_t k, bool record) {
        Case& c = groups[g][k];
        for (Tensor& l : c.leaves) l.mutable_grad().reset();
        if (groups[g].size() > 1) (void)c.leaves[0].detach().sum().item<float>();
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
        times[g].forward.push_back(f);
        times[g].backward.push_back(b);
    };
    for (size_t g = 0; g < groups.size(); ++g)
        for (size_t k = 0; k < groups[g].size(); ++k) pass(g, k, false);
    const auto start = Clock::now();
    for (size_t round = 0; secondsSince(start) < seconds || round < kMinRepeats; ++round)
        for (size_t g = 0; g < groups.size(); ++g) pass(g, round % groups[g].size(), true);
    return times;
}

// `make`'s case and its copies (copiesOf).
std::vector<Case> withCopies(const std::function<Case()>& make) {
    std::vector<Case> copies{make()};
    for (int k = copiesOf(copies[0]); k > 1; --k) copies.push_back(make());
    return copies;
}

}  // namespace

KernelProbe probeKernels(const torch::Device& device, const ComputeRates& rates, double seconds) {
    const Options o = Options().device(device);
    const auto table = kinds(o);
    const double half = seconds / 2;
    // The small sizes, whose time is the kinds' overheads, run in turn as a model's ops do, not
    // each over and over: here each then costs 1-3.5 us more a pass (the dispatcher's code and
    // the kernels' set-up no longer hot), which a small CNN's 170 ops a pass add up to.
    // The large sizes run one kind at a time, in two sweeps over the kinds: a kind's input is
    // in the cache as the op before it leaves it (timed in turn with the others, every kind's
    // input came from memory, and a small CNN's predicted pass rose 1.7 times above its
    // measured one), and each kind keeps the sweep that ran faster, so that a slow spell of
    // the host (one probe here timed the large add's backward at a twentieth of its rate)
    // costs one sweep, not the kind.
    std::vector<std::vector<Case>> small;
    std::vector<std::function<Case()>> large;
    for (const auto& [kind, make] : table) {
        small.push_back({make(false)});
        large.push_back([&, make = make] { return make(true); });
    }
    for (const ConvShape& shape : kSmallConvs) large.push_back([&, shape] { return convCase(o, shape.batch, shape.channels, shape.side); });
    const std::vector<PassTimes> small_times = timeInTurn(device, small, half);
    std::vector<PassTimes> large_times(large.size());
    std::vector<Case> large_cases(large.size());
    // A weighted kind is also timed on one warm copy: its weights from memory cost it 1.4-1.7
    // times that here. Far more (one probe in about ten timed the large matmul's backward at
    // twenty times its warm time, in both sweeps) is a disturbance of the host, not the cache:
    // the kind is timed again on fresh copies, up to kColdRetries sweeps more, and if it stays
    // so, its warm times are taken and the probe says so (KernelProbe::warnings).
    constexpr double kMaxColdPenalty = 3.0;
    constexpr int kColdRetries = 2;
    const auto total = [](const PassTimes& p) { return p.forward.empty() ? INFINITY : median(p.forward) + median(p.backward); };
    const double sweep = half / 2 / static_cast<double>(large.size());
    std::vector<PassTimes> warm_times(large.size());
    const auto timeLarge = [&](size_t i) {
        std::vector<std::vector<Case>> copies{withCopies(large[i])};
        const PassTimes t = timeInTurn(device, copies, sweep).front();
        if (total(t) < total(large_times[i])) large_times[i] = t;
        large_cases[i] = copies[0][0];
        if (copies[0].size() > 1) {
            std::vector<std::vector<Case>> one{{copies[0][0]}};
            const PassTimes w = timeInTurn(device, one, sweep / 4).front();
            if (total(w) < total(warm_times[i])) warm_times[i] = w;
        }
    };
    for (int round = 0; round < 2; ++round)
        for (size_t i = 0; i < large.size(); ++i) timeLarge(i);
    KernelProbe probe;
    for (size_t i = 0; i < large.size(); ++i) {
        if (warm_times[i].forward.empty()) continue;
        for (int retry = 0; retry < kColdRetries && total(large_times[i]) > kMaxColdPenalty * total(warm_times[i]); ++retry) timeLarge(i);
        if (const double ratio = total(large_times[i]) / total(warm_times[i]); ratio > kMaxColdPenalty) {
            const std::string kind = i < table.size() ? table[i].first : kConvKind;
            probe.warnings.push_back(kind + ": its copies out of the cache ran " + std::to_string(static_cast<int>(std::lround(ratio))) +
                                     " times its warm time in " + std::to_string(2 + kColdRetries) +
                                     " sweeps (a disturbance of the host, not the cache); the warm times are used");
            large_times[i] = warm_times[i];
        }
    }
    const auto sample = [&](const std::string& kind, const Case& c, const PassTimes& t) {
        probe.samples.push_back({kind, c.activation_elements * kFp32Bytes, c.param_elements * kFp32Bytes, c.forward_flops, c.backward_flops,
                                 median(t.forward), median(t.backward)});
        return probe.samples.back();
    };
    for (size_t i = 0; i < table.size(); ++i) {
        const std::string& kind = table[i].first;
        const KernelSample small_sample = sample(kind, small[i][0], small_times[i]);
        const KernelSample large_sample = sample(kind, large_cases[i], large_times[i]);
        std::vector<KernelSample> small_convs{large_sample};
        if (kind == kConvKind)
            for (size_t j = table.size(); j < large.size(); ++j) small_convs.push_back(sample(kind, large_cases[j], large_times[j]));
        const double matmul = kind == kConvKind && rates.matmul_flops_now ? rates.matmul_flops_now() : rates.matmul_flops_per_s;
        const double flops = matmul * (kind == kConvKind ? rates.conv_efficiency : 1.0);
        KernelTiming k;
        for (const bool backward : {false, true}) {
            const auto pass = [&](const KernelSample& s) {
                return KernelPassTime{passBytes(s.activation_bytes, s.param_bytes, backward), backward ? s.backward_flops : s.forward_flops,
                                      backward ? s.backward_s : s.forward_s};
            };
            const KernelPassFit fit = fitKernelPass(pass(small_sample), pass(large_sample), flops, kind != kConvKind);
            (backward ? k.backward_bytes_per_s : k.forward_bytes_per_s) = fit.bytes_per_s;
            (backward ? k.backward_overhead_s : k.forward_overhead_s) = fit.overhead_s;
        }
        // conv_efficiency is measured at CNN sizes; the large size here and kSmallConvs are small
        // convolutions, slower per FLOP: each gives the half-rate size that explains its time
        // beyond the overheads, (F + h) / rate forward plus (F_b + 2 h) / rate backward (two
        // kernels), and the kind takes their median (one size alone swung it 4x between probes).
        if (kind == kConvKind && flops > 0) {
            std::vector<double> half_rates;
            for (const KernelSample& l : small_convs) {
                const double busy = (l.forward_s - k.forward_overhead_s) + (l.backward_s - k.backward_overhead_s);
                half_rates.push_back(std::max(0.0, (busy * flops - l.forward_flops - l.backward_flops) / 3.0));
            }
            k.half_rate_flops = median(half_rates);
        }
        probe.kernels.emplace(kind, k);
    }
    return probe;
}

}  // namespace hippie::engine
