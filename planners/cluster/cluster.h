#pragma once
// Cluster: nodes of devices and the links between them. Devices are numbered globally,
// node by node: node 0 holds devices 0..n0-1, node 1 the next n1, and so on.
#include <cstdint>
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

struct DeviceSpec {
    std::string type;            // "A100-SXM4-40GB", "V100-PCIe-16GB", "cpu"
    double peak_flops_fp32 = 0;  // FLOP/s
    double peak_flops_fp16 = 0;  // FLOP/s with tensor cores (fp16 and bf16)
    double efficiency = 1.0;     // achievable fraction of peak on real kernels, (0, 1]
    int64_t memory_bytes = 0;
    // Ops with profiled times (a graph from 'hippie-engine profile') take their profiled time
    // times this on this device: 1 where the profile was measured; calibration fits it.
    double profiled_time_scale = 1.0;

    double peakFlops(Precision p) const;
    double achievableFlops(Precision p) const { return peakFlops(p) * efficiency; }
    bool operator==(const DeviceSpec&) const = default;
};

struct Link {
    double bandwidth_bytes_per_s = 0;
    double latency_s = 0;
    bool operator==(const Link&) const = default;
};

struct Node {
    int devices = 1;
    DeviceSpec device;
    Link intra;  // between two devices of this node
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
    bool sameNode(int a, int b) const { return nodeOf(a) == nodeOf(b); }
    bool operator==(const Cluster&) const = default;
};

}  // namespace hippie
