#pragma once
// The probe's kernel table (DeviceSpec::kernels): the op kinds the zoo's graphs use, each run
// forward and backward through autograd on its device as the engine runs it, at a size where
// the kernel's own work is negligible (its overhead) and at one where it dominates (its rate).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "planners/cluster/cluster.h"

namespace hippie::engine {

// The device's FLOP curve as the probe measured it: a kind's time below it is compute, not bytes.
struct ComputeRates {
    double matmul_flops_per_s = 0;
    double conv_efficiency = 1.0;
    // The matmul rate at this moment, measured again (the host's speed drifts): a kind judged
    // against a rate it must share a moment with (the convolution's half-rate size) uses it.
    std::function<double()> matmul_flops_now;
};

// One kind at one size: what the cost model counts for it (planners/model/zoo*.cpp's bytes
// and FLOPs) and the median times measured.
struct KernelSample {
    std::string kind;
    double activation_bytes = 0;  // inputs + outputs (+ state kept for backward), fp32
    double param_bytes = 0;
    double forward_flops = 0, backward_flops = 0;
    double forward_s = 0, backward_s = 0;
};

struct KernelProbe {
    std::map<std::string, KernelTiming> kernels;
    std::vector<KernelSample> samples;  // two per kind, small then large (conv2d: then kSmallConvs)
    std::vector<std::string> warnings;  // kinds whose cold timing the host disturbed
};

// About `seconds` of timed passes, besides one untimed pass of every copy (copies of a weighted
// kind exceed the caches), the weighted kinds' warm timings and any sweep timed again. Each
// pass's overhead and rate come from its two sizes with the cost model's formula, time =
// overhead + max(FLOPs / the curve's rate, bytes / rate); where the large size is compute
// bound, the rate is left 0 (the device's bandwidth). A convolution gets no bytes rate but a
// half-rate size of its own (a small one runs below the curve).
KernelProbe probeKernels(const torch::Device& device, const ComputeRates& rates, double seconds);

}  // namespace hippie::engine
