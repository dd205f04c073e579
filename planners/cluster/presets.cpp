// Built-in clusters. Every hardware figure is a named constant with the document it comes
// from; the same sources are repeated in each preset's `source` so they travel with plans.
#include <cstdint>
#include <functional>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"

namespace hippie {

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr double kGigabitPerS = 1e9 / 8;  // bytes/s in one Gb/s

// Achievable fraction of peak on transformer training kernels. Megatron-LM sustains
// 138-163 TFLOP/s per A100 on GPT models, 44-52% of the 312 TFLOP/s peak (Narayanan et al.,
// "Efficient Large-Scale Language Model Training on GPU Clusters", SC'21); we use 0.5 for
// every GPU preset. Calibrate with `hippie-engine probe` for a particular machine.
constexpr double kGpuEfficiency = 0.5;

// NVIDIA A100 Tensor Core GPU datasheet (2020), SXM4 40GB: 19.5 TFLOP/s FP32, 312 TFLOP/s
// FP16/BF16 tensor core (dense), 40 GB HBM2 at 1,555 GB/s.
constexpr double kA100PeakFp32 = 19.5e12;
constexpr double kA100PeakFp16 = 312e12;
constexpr int64_t kA100MemoryBytes = 40 * kGiB;
constexpr double kA100MemoryBytesPerS = 1555e9;

// NVIDIA H100 Tensor Core GPU datasheet, SXM 80GB: 67 TFLOP/s FP32, 989 TFLOP/s FP16/BF16
// tensor core dense (1979 is the figure with 2:4 sparsity), 80 GB HBM3 at 3.35 TB/s.
constexpr double kH100PeakFp32 = 67e12;
constexpr double kH100PeakFp16 = 989e12;
constexpr int64_t kH100MemoryBytes = 80 * kGiB;
constexpr double kH100MemoryBytesPerS = 3.35e12;

// NVIDIA Tesla V100 datasheet, PCIe 16GB: 14 TFLOP/s FP32, 112 TFLOP/s tensor (FP16), HBM2
// at 900 GB/s.
constexpr double kV100PciePeakFp32 = 14e12;
constexpr double kV100PciePeakFp16 = 112e12;
constexpr int64_t kV100MemoryBytes = 16 * kGiB;
constexpr double kV100MemoryBytesPerS = 900e9;

// Memory no tensor can have (DeviceSpec::reserved_bytes). What the driver keeps from the
// part's capacity: nvidia-smi's total on idle GPUs with ECC on is 40536 MiB for an
// A100-SXM4-40GB, 81559 MiB for an H100 80GB HBM3 and 16160 MiB for a V100 16GB (as printed
// in many public nvidia-smi listings), 424, 361 and 224 MiB below their 40, 80 and 16 GiB.
// What PyTorch's CUDA context takes before its first tensor: 666,632,192 bytes with CUDA's
// eager module loading, measured in PyTorch PR 86509 (287,047,680 with lazy loading, which
// leaves the difference to NCCL's buffers and cuBLAS's workspaces, not counted apart here;
// PyTorch issue 34323 saw 781 MiB). `hippie-engine probe` measures the whole reserve on a GPU.
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTorchCudaContextBytes = 666'632'192;
constexpr int64_t kA100ReservedBytes = 424 * kMiB + kTorchCudaContextBytes;
constexpr int64_t kH100ReservedBytes = 361 * kMiB + kTorchCudaContextBytes;
constexpr int64_t kV100ReservedBytes = 224 * kMiB + kTorchCudaContextBytes;

// Small kernels do not fill the GPU. Calculon's A100 system file (Isaev et al., "Calculon: a
// Methodology and Tool for High-Level Codesign of Systems and Large Language Models", SC'23,
// systems/a100_80g.json) gives FP16 matrix efficiency 0.95 at >= 128 GFLOP and 0.6 at
// 1 GFLOP; rate(f) = R f / (f + h) through those points gives h = 1 GFLOP x (0.95/0.6 - 1)
// = 0.58 GFLOP on A100. Other GPUs take the same fill time (h / peak = 1.9 us), so h scales
// with their FP16 peak.
constexpr double kA100HalfRateFlops = 0.58e9;
constexpr double kFillTimeS = kA100HalfRateFlops / kA100PeakFp16;
constexpr double kH100HalfRateFlops = kFillTimeS * kH100PeakFp16;
constexpr double kV100HalfRateFlops = kFillTimeS * kV100PciePeakFp16;
// Every kernel costs a launch: NVIDIA's "Getting Started with CUDA Graphs" (developer blog,
// 2019) measures 3.8 us a kernel for short kernels launched back to back from one stream.
constexpr double kGpuLaunchOverheadS = 3.8e-6;

// Third-generation NVLink (A100, through NVSwitch on DGX A100): 600 GB/s total per GPU,
// 300 GB/s per direction.
constexpr double kNvlink3BytesPerS = 300e9;
// Fourth-generation NVLink (H100 SXM, DGX H100): 900 GB/s total per GPU, 450 GB/s per direction.
constexpr double kNvlink4BytesPerS = 450e9;
// Small-message latency of an NCCL transfer over NVLink/NVSwitch: a few microseconds.
constexpr double kNvlinkLatencyS = 3e-6;

// DGX A100: one ConnectX-6 InfiniBand HDR 200 Gb/s compute port per GPU, 8 in all (DGX A100
// user guide; the storage ports are not counted).
constexpr double kInfinibandHdrBytesPerS = 200 * kGigabitPerS;
// DGX H100: one ConnectX-7 InfiniBand NDR 400 Gb/s compute port per GPU, 8 in all (DGX H100
// user guide).
constexpr double kInfinibandNdrBytesPerS = 400 * kGigabitPerS;
constexpr int kDgxComputePorts = 8;
// InfiniBand small-message latency through one switch with NCCL's protocol: ~5-10 us.
constexpr double kInfinibandLatencyS = 6e-6;

// PCIe 3.0 x16: 8 GT/s x 16 lanes x 128b/130b encoding = 15.75 GB/s per direction (PCI-SIG).
constexpr double kPcie3x16BytesPerS = 8e9 * 16 * 128 / 130 / 8;
// GPU-to-GPU through the PCIe switch or host bridge: several microseconds.
constexpr double kPcieLatencyS = 8e-6;
// 10 Gb/s Ethernet between servers, as in PipeDream's Cluster-A (Narayanan et al., SOSP'19,
// Table 2: servers of 4 V100 on PCIe, 10 Gbps Ethernet between them); one port per server,
// which all four GPUs share. TCP latency ~50 us.
constexpr double kEthernet10GBytesPerS = 10 * kGigabitPerS;
constexpr int kPipeDreamServerPorts = 1;
constexpr double kEthernetLatencyS = 50e-6;

// cpu-local: the development machine (2 cores) running 4 CPU ranks that share them. Rough
// figures, to be replaced by `hippie-engine probe` measurements:
// - an AVX2 core peaks at ~80 GFLOP/s FP32 (2 FMA units x 8 lanes x 2 FLOP x ~2.5 GHz);
//   2 cores over 4 ranks give each rank half a core;
// - LibTorch CPU kernels on small layers reach about a third of that peak;
// - CPUs have no faster half-precision path, so FP16 gets the FP32 peak;
// - Gloo over TCP loopback moves ~2 GB/s with tens of microseconds per message;
// - memory bandwidth and launch overhead as `hippie-engine probe` measured them on the 2-core
//   development VM (three probes, 2026-12-07: a 64 MiB copy at 26.6, 28.5 and 31.1 GB/s, the
//   median 28.5 GB/s shared like the cores, half a host's each; the matmul curve's fixed
//   cost per kernel 0.54-0.57 us).
constexpr double kCpuHostMemoryBytesPerS = 28.5e9;
constexpr double kCpuLaunchOverheadS = 0.57e-6;
constexpr int kCpuLocalRanks = 4;
constexpr int kCpuLocalCores = 2;
constexpr double kCpuCorePeakFlops = 80e9;
constexpr double kCpuRankPeakFlops = kCpuCorePeakFlops * kCpuLocalCores / kCpuLocalRanks;
constexpr double kCpuEfficiency = 0.3;
constexpr int64_t kCpuRankMemoryBytes = 4 * kGiB;
constexpr double kLoopbackBytesPerS = 2e9;
constexpr double kLoopbackLatencyS = 30e-6;

constexpr int kDgxGpusPerNode = 8;
constexpr int kPipeDreamGpusPerServer = 4;

const char* const kDgxA100Source =
    "NVIDIA A100 datasheet (SXM4 40GB: 19.5 TFLOP/s FP32, 312 TFLOP/s FP16 tensor dense, 1555 GB/s HBM2); "
    "NVLink3 300 GB/s per direction; DGX A100 user guide: 8 InfiniBand HDR 200 Gb/s compute ports, one per GPU; "
    "latencies 3 us NVLink, 6 us IB; efficiency 0.5 from Megatron-LM's 44-52% of peak on A100 (SC'21); "
    "half rate at 0.58 GFLOP a kernel from Calculon's A100 curve (SC'23); 3.8 us a kernel launch (NVIDIA CUDA Graphs blog); "
    "1.03 GiB a GPU reserved: 424 MiB below nvidia-smi's 40536 MiB total and PyTorch's CUDA context (666,632,192 bytes, PR 86509)";
const char* const kDgxH100Source =
    "NVIDIA H100 datasheet (SXM 80GB: 67 TFLOP/s FP32, 989 TFLOP/s FP16 tensor dense, 3.35 TB/s HBM3); "
    "NVLink4 450 GB/s per direction; DGX H100 user guide: 8 InfiniBand NDR 400 Gb/s compute ports, one per GPU; "
    "latencies 3 us NVLink, 6 us IB; efficiency 0.5 as for A100 (Megatron-LM, SC'21); kernel fill time and "
    "launch as for A100; 0.97 GiB a GPU reserved: 361 MiB below nvidia-smi's 81559 MiB total and PyTorch's CUDA context";
const char* const kV100Source =
    "NVIDIA V100 datasheet (PCIe 16GB: 14 TFLOP/s FP32, 112 TFLOP/s tensor, 900 GB/s HBM2); PCIe 3.0 x16 "
    "15.75 GB/s inside a server; one 10 Gb/s Ethernet port per server, shared by its 4 GPUs, as in PipeDream's "
    "Cluster-A (SOSP'19); latencies 8 us PCIe, 50 us Ethernet; efficiency 0.5; kernel fill time and launch as for A100; "
    "0.84 GiB a GPU reserved: 224 MiB below nvidia-smi's 16160 MiB total and PyTorch's CUDA context";
const char* const kCpuLocalSource =
    "rough figures for this machine: 2 cores shared by 4 CPU ranks (20 GFLOP/s peak each, 0.3 efficiency), "
    "4 GiB per rank, Gloo over TCP loopback (~2 GB/s, 30 us); memory bandwidth 14.25 GB/s a rank (half of the "
    "28.5 GB/s host copy rate hippie-engine probe measured on the 2-core development VM) and 0.57 us a kernel "
    "(its matmul curve); run 'hippie-engine probe' to measure this machine";

DeviceSpec gpu(const char* type, double fp32, double fp16, int64_t memory, int64_t reserved, double memory_bytes_per_s,
               double half_rate_flops) {
    DeviceSpec d{type, fp32, fp16, kGpuEfficiency, memory, reserved};
    d.memory_bandwidth_bytes_per_s = memory_bytes_per_s;
    d.launch_overhead_s = kGpuLaunchOverheadS;
    d.half_rate_flops = half_rate_flops;
    return d;
}

Cluster uniform(std::string name, std::string source, int node_count, int devices_per_node, const DeviceSpec& d,
                Link intra, Link inter, NetworkPorts ports = {}) {
    Cluster c;
    c.name = std::move(name);
    c.source = std::move(source);
    c.nodes.assign(static_cast<size_t>(node_count), Node{devices_per_node, d, intra, ports});
    c.inter = inter;
    return c;
}

Cluster dgxA100(const std::string& name, int node_count) {
    return uniform(name, kDgxA100Source, node_count, kDgxGpusPerNode,
                   gpu("A100-SXM4-40GB", kA100PeakFp32, kA100PeakFp16, kA100MemoryBytes, kA100ReservedBytes, kA100MemoryBytesPerS, kA100HalfRateFlops),
                   {kNvlink3BytesPerS, kNvlinkLatencyS}, {kInfinibandHdrBytesPerS, kInfinibandLatencyS},
                   {kDgxComputePorts, kInfinibandHdrBytesPerS});
}

Cluster dgxH100(const std::string& name, int node_count) {
    return uniform(name, kDgxH100Source, node_count, kDgxGpusPerNode,
                   gpu("H100-SXM-80GB", kH100PeakFp32, kH100PeakFp16, kH100MemoryBytes, kH100ReservedBytes, kH100MemoryBytesPerS, kH100HalfRateFlops),
                   {kNvlink4BytesPerS, kNvlinkLatencyS}, {kInfinibandNdrBytesPerS, kInfinibandLatencyS},
                   {kDgxComputePorts, kInfinibandNdrBytesPerS});
}

Cluster v100Pcie(const std::string& name, int node_count) {
    return uniform(name, kV100Source, node_count, kPipeDreamGpusPerServer,
                   gpu("V100-PCIe-16GB", kV100PciePeakFp32, kV100PciePeakFp16, kV100MemoryBytes, kV100ReservedBytes, kV100MemoryBytesPerS, kV100HalfRateFlops),
                   {kPcie3x16BytesPerS, kPcieLatencyS}, {kEthernet10GBytesPerS, kEthernetLatencyS},
                   {kPipeDreamServerPorts, kEthernet10GBytesPerS});
}

Cluster cpuLocal(const std::string& name) {
    DeviceSpec cpu{"cpu", kCpuRankPeakFlops, kCpuRankPeakFlops, kCpuEfficiency, kCpuRankMemoryBytes};
    cpu.memory_bandwidth_bytes_per_s = kCpuHostMemoryBytesPerS * kCpuLocalCores / kCpuLocalRanks;
    cpu.launch_overhead_s = kCpuLaunchOverheadS;
    const Link loopback{kLoopbackBytesPerS, kLoopbackLatencyS};
    return uniform(name, kCpuLocalSource, 1, kCpuLocalRanks, cpu, loopback, loopback);
}

struct PresetEntry {
    ClusterPreset info;
    std::function<Cluster(const std::string&)> build;
};

const std::vector<PresetEntry>& entries() {
    static const std::vector<PresetEntry> list = {
        {{"dgx-a100-1x8", "1 DGX A100: 8 A100 SXM4 40GB on NVLink3"}, [](const std::string& n) { return dgxA100(n, 1); }},
        {{"dgx-a100-2x8", "2 DGX A100 (16 A100) on InfiniBand HDR"}, [](const std::string& n) { return dgxA100(n, 2); }},
        {{"dgx-a100-4x8", "4 DGX A100 (32 A100) on InfiniBand HDR"}, [](const std::string& n) { return dgxA100(n, 4); }},
        {{"dgx-h100-2x8", "2 DGX H100 (16 H100 SXM 80GB) on InfiniBand NDR"}, [](const std::string& n) { return dgxH100(n, 2); }},
        {{"v100-4x4", "4 servers of 4 V100 PCIe 16GB, 10 Gb/s Ethernet (PipeDream's Cluster-A)"},
         [](const std::string& n) { return v100Pcie(n, 4); }},
        {{"cpu-local", "this machine: 4 CPU ranks over loopback (rough; measure with hippie-engine probe)"},
         [](const std::string& n) { return cpuLocal(n); }},
    };
    return list;
}

}  // namespace

const std::vector<ClusterPreset>& clusterPresets() {
    static const std::vector<ClusterPreset> presets = [] {
        std::vector<ClusterPreset> out;
        for (const PresetEntry& e : entries()) out.push_back(e.info);
        return out;
    }();
    return presets;
}

Cluster buildClusterPreset(const std::string& name) {
    std::string known;
    for (const PresetEntry& e : entries()) {
        if (e.info.name == name) return e.build(name);
        known += (known.empty() ? "" : ", ") + e.info.name;
    }
    throw Error("unknown cluster preset '" + name + "'; presets: " + known);
}

}  // namespace hippie
