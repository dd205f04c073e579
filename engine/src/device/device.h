#pragma once
// The rank's device: everything device-specific the engine does goes through these few
// functions. device_cpu.cpp implements them for a LibTorch without CUDA; device_cuda.cpp (built
// only when CMake finds a CUDA LibTorch, HIPPIE_ENGINE_CUDA=1) for one with it. The executor,
// stages, buckets, data and loss only see a torch::Device.
#include <cstdint>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace hippie::engine {

// True when this binary was built against a LibTorch with CUDA.
bool builtWithCuda();
// True when this binary can create NCCL process groups (CUDA LibTorch and nccl.h found).
bool builtWithNccl();

// The device a rank trains on: `want` is "auto" (cuda:<local_rank> when CUDA is built and a
// GPU is visible, else cpu), "cpu" or "cuda". Throws Error with what to do when "cuda" is asked
// and this binary or host cannot give it, or when local_rank has no GPU.
torch::Device resolveDevice(const std::string& want, int local_rank);

// Makes `device` the calling thread's current device (CUDA); nothing on CPU.
void useDevice(const torch::Device& device);

// Waits for the device's queued work (CUDA), so host clocks time it; nothing on CPU.
void synchronizeDevice(const torch::Device& device);

// The caching allocator's statistics (CUDA): bytes allocated now and the peak since the last
// reset. std::nullopt on CPU, where the engine counts the tensors it holds instead.
struct AllocatorBytes {
    int64_t current = 0;
    int64_t peak = 0;
};
std::optional<AllocatorBytes> allocatorBytes(const torch::Device& device);
void resetAllocatorPeak(const torch::Device& device);

// The device's own memory (CUDA: total global memory); std::nullopt on CPU.
std::optional<int64_t> deviceMemoryBytes(const torch::Device& device);
// Of that memory, what the process holds outside the caching allocator's blocks: the CUDA
// context, the libraries' handles and workspaces (cudaMemGetInfo's used bytes less the
// allocator's reserved ones; other processes on the GPU count too). std::nullopt on CPU.
std::optional<int64_t> runtimeReservedBytes(const torch::Device& device);

// A short description for logs and probe output: "cpu", "cuda:0 (NVIDIA H100, 80 GiB)".
std::string describeDevice(const torch::Device& device);

}  // namespace hippie::engine
