// The device layer of a LibTorch with CUDA (compiled only when CMake sets HIPPIE_ENGINE_CUDA):
// a rank trains on cuda:<local_rank> when asked or when `auto` finds a GPU, and its memory is
// the CUDA caching allocator's statistics.
#include <algorithm>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <torch/cuda.h>

#include "engine/src/device/device.h"
#include "planners/common/error.h"

namespace hippie::engine {

namespace {

// Index of the aggregate over all pools in the allocator's statistics arrays: StatType::AGGREGATE,
// 0 in every LibTorch (PyTorch 2.6 moved the enum to c10::CachingDeviceAllocator).
constexpr size_t kAllPools = 0;

c10::DeviceIndex indexOf(const torch::Device& device) { return device.has_index() ? device.index() : c10::DeviceIndex{0}; }

}  // namespace

bool builtWithCuda() { return true; }

bool builtWithNccl() {
#if defined(USE_C10D_NCCL)
    return true;
#else
    return false;
#endif
}

torch::Device resolveDevice(const std::string& want, int local_rank) {
    if (want == "cpu") return torch::Device(torch::kCPU);
    if (want != "auto" && want != "cuda") throw Error("--device must be auto, cpu or cuda, not '" + want + "'");
    const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
    if (gpus == 0) {
        if (want == "auto") return torch::Device(torch::kCPU);
        throw Error("--device cuda: this LibTorch has CUDA but no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES) "
                    "or run with --device cpu");
    }
    if (local_rank < 0) local_rank = 0;
    if (local_rank >= gpus)
        throw Error("--device " + want + ": local rank " + std::to_string(local_rank) + " needs GPU " + std::to_string(local_rank) +
                    " but this host shows " + std::to_string(gpus) + "; start at most " + std::to_string(gpus) +
                    " ranks per host or set --local-rank");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

void useDevice(const torch::Device& device) {
    if (device.is_cuda()) c10::cuda::set_device(indexOf(device));
}

void synchronizeDevice(const torch::Device& device) {
    if (device.is_cuda()) c10::cuda::device_synchronize();
}

std::optional<AllocatorBytes> allocatorBytes(const torch::Device& device) {
    if (!device.is_cuda()) return std::nullopt;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(indexOf(device));
    const auto& allocated = stats.allocated_bytes[kAllPools];
    return AllocatorBytes{allocated.current, allocated.peak};
}

void resetAllocatorPeak(const torch::Device& device) {
    if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(indexOf(device));
}

std::optional<int64_t> deviceMemoryBytes(const torch::Device& device) {
    if (!device.is_cuda()) return std::nullopt;
    return static_cast<int64_t>(at::cuda::getDeviceProperties(indexOf(device))->totalGlobalMem);
}

std::optional<int64_t> runtimeReservedBytes(const torch::Device& device) {
    if (!device.is_cuda()) return std::nullopt;
    c10::cuda::CUDAGuard guard(indexOf(device));
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(indexOf(device));
    const int64_t held = stats.reserved_bytes[kAllPools].current;  // the allocator's blocks, tensors or cached
    return std::max<int64_t>(static_cast<int64_t>(total - free) - held, 0);
}

std::string describeDevice(const torch::Device& device) {
    if (!device.is_cuda()) return device.str();
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(indexOf(device));
    const double gib = static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    return device.str() + " (" + p->name + ", " + std::to_string(static_cast<int>(gib + 0.5)) + " GiB)";
}

}  // namespace hippie::engine
