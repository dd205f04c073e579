// The device layer of a LibTorch without CUDA: every rank trains on the CPU.
#include "engine/src/device/device.h"

#include "planners/common/error.h"

namespace hippie::engine {

bool builtWithCuda() { return false; }
bool builtWithNccl() { return false; }

torch::Device resolveDevice(const std::string& want, int local_rank) {
    (void)local_rank;
    if (want == "auto" || want == "cpu") return torch::Device(torch::kCPU);
    if (want == "cuda")
        throw Error("--device cuda: this hippie-engine was built against a LibTorch without CUDA; rebuild it against a CUDA "
                    "LibTorch (cmake -DCMAKE_PREFIX_PATH=/path/to/libtorch) or run with --device cpu");
    throw Error("--device must be auto, cpu or cuda, not '" + want + "'");
}

void useDevice(const torch::Device&) {}
void synchronizeDevice(const torch::Device&) {}
std::optional<AllocatorBytes> allocatorBytes(const torch::Device&) { return std::nullopt; }
void resetAllocatorPeak(const torch::Device&) {}
std::optional<int64_t> deviceMemoryBytes(const torch::Device&) { return std::nullopt; }
std::optional<int64_t> runtimeReservedBytes(const torch::Device&) { return std::nullopt; }
std::string describeDevice(const torch::Device& device) { return device.str(); }

}  // namespace hippie::engine
