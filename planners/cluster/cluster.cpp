#include "planners/cluster/cluster.h"

#include "planners/common/error.h"

namespace hippie {

double DeviceSpec::peakFlops(Precision p) const {
    // FP16 and BF16 run on the same tensor-core paths at the same peak.
    return p == Precision::FP32 ? peak_flops_fp32 : peak_flops_fp16;
}

double DeviceSpec::halfRateFlops(Precision p) const {
    const double fp16 = peakFlops(Precision::FP16);
    return fp16 > 0 ? half_rate_flops * peakFlops(p) / fp16 : 0.0;
}

int Cluster::deviceCount() const {
    int n = 0;
    for (const Node& node : nodes) n += node.devices;
    return n;
}

int Cluster::nodeOf(int device) const {
    if (device >= 0) {
        int first = 0;
        for (size_t i = 0; i < nodes.size(); ++i) {
            first += nodes[i].devices;
            if (device < first) return static_cast<int>(i);
        }
    }
    throw Error("cluster '" + name + "' has no device " + std::to_string(device) + " (it has " +
                std::to_string(deviceCount()) + ", numbered from 0)");
}

int Cluster::firstDeviceOf(int node) const {
    if (node < 0 || static_cast<size_t>(node) >= nodes.size())
        throw Error("cluster '" + name + "' has no node " + std::to_string(node) + " (it has " +
                    std::to_string(nodes.size()) + ", numbered from 0)");
    int first = 0;
    for (int i = 0; i < node; ++i) first += nodes[static_cast<size_t>(i)].devices;
    return first;
}

const DeviceSpec& Cluster::device(int d) const { return nodes[static_cast<size_t>(nodeOf(d))].device; }

const Link& Cluster::link(int a, int b) const {
    const int na = nodeOf(a);
    return na == nodeOf(b) ? nodes[static_cast<size_t>(na)].intra : inter;
}

double Cluster::egressBandwidth(int node) const {
    const Node& n = nodes[static_cast<size_t>(node)];
    if (n.ports.count > 0) return n.ports.count * n.ports.bandwidth_bytes_per_s;
    return n.devices * inter.bandwidth_bytes_per_s;
}

}  // namespace hippie
