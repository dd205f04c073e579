#include "planners/schedule/program.h"

#include <algorithm>
#include <cstdint>

namespace hippie {

const char* toString(InstrKind k) {
    switch (k) {
    case InstrKind::Forward: return "forward";
    case InstrKind::Backward: return "backward";
    case InstrKind::BackwardInput: return "backward-input";
    case InstrKind::BackwardWeight: return "backward-weight";
    case InstrKind::Recompute: return "recompute";
    case InstrKind::SendActivation: return "send-activation";
    case InstrKind::RecvActivation: return "recv-activation";
    case InstrKind::SendGrad: return "send-grad";
    case InstrKind::RecvGrad: return "recv-grad";
    case InstrKind::AllReduce: return "all-reduce";
    case InstrKind::ReduceScatter: return "reduce-scatter";
    case InstrKind::AllGather: return "all-gather";
    case InstrKind::TensorParallel: return "tensor-parallel";
    case InstrKind::ZeroGather: return "zero-gather";
    case InstrKind::OptimizerStep: return "optimizer-step";
    }
    return "?";
}


std::string Instr::str() const {
    const std::string s = std::to_string(segment);
    const std::string m = std::to_string(mb);
    switch (kind) {
    case InstrKind::Forward: return s + "F" + m;
    case InstrKind::Backward: return s + "B" + m + (bucket >= 0 ? "." + std::to_string(bucket) : "");
    case InstrKind::BackwardInput: return s + "I" + m;
    case InstrKind::BackwardWeight: return s + "W" + m + (bucket >= 0 ? "." + std::to_string(bucket) : "");
    case InstrKind::Recompute: return s + "R" + m;
    case InstrKind::SendActivation: return s + "SEND_F" + m;
    case InstrKind::RecvActivation: return s + "RECV_F" + m;
    case InstrKind::SendGrad: return s + "SEND_B" + m;
    case InstrKind::RecvGrad: return s + "RECV_B" + m;
    case InstrKind::AllReduce: return "AR" + std::to_string(bucket);
    case InstrKind::ReduceScatter: return "RS" + std::to_string(bucket) + (mb >= 0 ? "@" + m : "");
    case InstrKind::AllGather: return "AG" + std::to_string(bucket) + (mb >= 0 ? "@" + m : "");
    case InstrKind::TensorParallel: {
        Instr compute = *this;
        compute.kind = of;
        compute.bucket = -1;
        return std::string(sequence_parallel ? "TPSP" : "TPAR") + compute.str();
    }
    case InstrKind::ZeroGather: {
        Instr compute = *this;
        compute.kind = of;
        return "Z3AG" + compute.str();
    }
    case InstrKind::OptimizerStep: return "OPT";
    }
    return "?";
}

int Program::tpOf(int segment) const {
    if (segment >= 0 && static_cast<size_t>(segment) < segment_tp.size()) return std::max(segment_tp[static_cast<size_t>(segment)], 1);
    return std::max(tp, 1);
}

int Program::replicasOf(int segment) const {
    return static_cast<int>(segment_devices[static_cast<size_t>(segment)].size()) / tpOf(segment);
}

int Program::deviceFor(int segment, int from, int lane, int mb) const {
    const auto& devs = segment_devices[static_cast<size_t>(segment)];
    if (round_robin) return devs[static_cast<size_t>(mb) % devs.size()];
    const int t_from = tpOf(from), t = tpOf(segment);
    if (t_from == t) return devs[static_cast<size_t>(lane)];
    return devs[static_cast<size_t>((lane / t_from) * t + (lane % t_from) % t)];
}

std::vector<int> Program::devicesServedBy(int segment, int from, int lane, int mb) const {
    const int t_from = tpOf(from), t = tpOf(segment);
    if (round_robin || t_from == t) return {deviceFor(segment, from, lane, mb)};
    const auto& devs = segment_devices[static_cast<size_t>(segment)];
    const int r = lane / t_from, k = lane % t_from;
    std::vector<int> out;
    for (int k2 = k; k2 < t; k2 += t_from) out.push_back(devs[static_cast<size_t>(r * t + k2)]);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<int> Program::microBatchesOf(int segment, int lane) const {
    std::vector<int> out;
    if (!round_robin) {
        for (int mb = 0; mb < micro_batches; ++mb) out.push_back(mb);
        return out;
    }
    const int r = replicasOf(segment);
    for (int64_t mb = lane; mb < int64_t{pipelines} * micro_batches; mb += r) out.push_back(static_cast<int>(mb));
    return out;
}

int Program::streamOf(int device) const {
    const auto it = std::find(devices.begin(), devices.end(), device);
    return it == devices.end() ? -1 : static_cast<int>(it - devices.begin());
}

std::string Program::str() const {
    std::string out;
    for (size_t i = 0; i < streams.size(); ++i) {
        out += "d" + std::to_string(devices[i]) + ":";
        for (const Instr& in : streams[i]) out += " " + in.str();
        out += "\n";
    }
    return out;
}

}  // namespace hippie
