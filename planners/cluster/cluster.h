#pragma once
// Cluster: nodes of devices and the links between them. Devices are numbered globally,
// node by node: node 0 holds devices 0..n0-1, node 1 the next n1, and so on.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

// Measured times of one kind of op on a device (`hippie-engine probe` times the kinds the
// zoo uses, forward and backward through autograd as the engine runs them). A pass takes its
// overhead (dispatch, launch, autograd) plus the bytes it moves at its rate: on a CPU host a
// GELU or a softmax runs far below the copy bandwidth, a convolution pays oneDNN's set-up
// and a skinny matmul streams its packed weights slower than a copy. 0 = the device's figure
// (memory bandwidth; launch overhead per kernel).
struct KernelTiming {
    double forward_bytes_per_s = 0;
    double backward_bytes_per_s = 0;
    double forward_overhead_s = 0;
    double backward_overhead_s = 0;
    // The kind's own kernel size at half its rate on the FLOP curve (small convolutions
    // reach a fraction of what CNN-sized ones do); 0 = the device's half_rate_flops.
    double half_rate_flops = 0;
    bool operator==(const KernelTiming&) const = default;
};

struct DeviceSpec {
    std::string type;            // "A100-SXM4-40GB", "V100-PCIe-16GB", "cpu"
    double peak_flops_fp32 = 0;  // FLOP/s
    double peak_flops_fp16 = 0;  // FLOP/s with tensor cores (fp16 and bf16)
    double efficiency = 1.0;     // achievable fraction of peak on large kernels, (0, 1]
    int64_t memory_bytes = 0;
    // Bytes of memory_bytes that no tensor of the training can have: what the driver keeps
    // from the part's capacity (nvidia-smi's total is below it), the CUDA context with the
    // framework's kernels loaded, and its libraries' workspaces. A plan fits when its peak
    // tensor bytes fit in usableBytes(). 0 = every byte holds tensors (CPU ranks; old files).
    int64_t reserved_bytes = 0;
    // Bytes/s between the device's memory and its cores; 0 = unknown (no memory bound).
    double memory_bandwidth_bytes_per_s = 0;
    // Seconds every kernel costs on top of its work (launch and dispatch).
    double launch_overhead_s = 0;
    // Kernel size, in FLOPs at the FP16 peak, at which a kernel reaches half the achievable
    // rate: rate(f) = peak x efficiency x f / (f + half_rate). It scales with the precision's
    // peak (a kernel needs the same time to fill the device). 0 = every kernel at full rate.
    double half_rate_flops = 0;
    // Convolutions' rate as a fraction of a matmul's of the same FLOPs on this device (its
    // convolution kernels: im2col or implicit GEMM, layout reorders). 1 = as fast as matmul;
    // `hippie-engine probe` measures it.
    double conv_efficiency = 1.0;
    // Ops of these kinds (Op::kind) move their bytes and pay their overhead as measured here,
    // in place of memory_bandwidth_bytes_per_s and launch_overhead_s; the FLOP curve still
    // bounds them from below. Empty on presets.
    std::map<std::string, KernelTiming> kernels{};
    // Ops with profiled times (a graph from 'hippie-engine profile') take their profiled time
    // times this on this device: 1 where the profile was measured; calibration fits it.
    double profiled_time_scale = 1.0;

    int64_t usableBytes() const { return memory_bytes - reserved_bytes; }  // what tensors may take
    double peakFlops(Precision p) const;
    double achievableFlops(Precision p) const { return peakFlops(p) * efficiency; }
    double halfRateFlops(Precision p) const;  // half_rate_flops scaled to the precision's peak
    bool operator==(const DeviceSpec&) const = default;
};

struct Link {
    double bandwidth_bytes_per_s = 0;
    double latency_s = 0;
    bool operator==(const Link&) const = default;
};

// A node's network ports: every transfer and collective leaving the node shares them.
// count = 0 means "one port per device at the inter-node link's bandwidth".
struct NetworkPorts {
    int count = 0;
    double bandwidth_bytes_per_s = 0;  // each, per direction
    bool operator==(const NetworkPorts&) const = default;
};

struct Node {
    int devices = 1;
    DeviceSpec device;
    Link intra;  // between two devices of this node
    NetworkPorts ports;
    // Devices that time-share one host's cores (CPU ranks): how many devices' worth of
    // compute the node has in all. A device computes at its own rate times
    // min(1, compute_slots / devices computing at once); the simulator counts them over each
    // compute. 0: every device computes on its own (GPUs).
    double compute_slots = 0;
    bool operator==(const Node&) const = default;
};

struct Cluster {
    std::string name;
    std::string source;  // where the hardware figures come from
    std::vector<Node> nodes;
    Link inter;          // between devices of different nodes

    int deviceCount() const;
    int nodeOf(int device) const;
    int firstDeviceOf(int node) const;
    const DeviceSpec& device(int device) const;
    const Link& link(int a, int b) const;  // a != b
    // Bytes/s all of `node`'s network ports carry together in one direction.
    double egressBandwidth(int node) const;
    bool sameNode(int a, int b) const { return nodeOf(a) == nodeOf(b); }
    bool operator==(const Cluster&) const = default;
};

}  // namespace hippie
