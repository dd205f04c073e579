#pragma once
// Measuring commands: `probe` (this host as Cluster JSON), `profile` (a model's graph with
// measured per-layer times), `inspect` (TorchScript -> graph JSON with measured times)
// and `export-script` (an MLP of the zoo as a TorchScript file, for inspect and its tests).
// Each returns the process exit code and prints JSON on stdout or an error event.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planners/model/graph.h"

namespace hippie::engine {

struct ProbeOptions {
    double seconds = 0.5;           // time spent measuring FLOP/s
    bool loopback_bandwidth = true;  // measure TCP over 127.0.0.1 and the Gloo transport between two processes
    int transport_peer_port = 0;     // > 0: be the second process of the Gloo measurement (internal)
};
int probeCommand(const ProbeOptions& o);

// profile: a zoo model (at its size overrides) or a preset of one, layer by layer as the engine
// builds it: the median forward and backward time of each layer and its measured memory
// (output bytes, bytes autograd keeps for backward, transient peaks), written into the
// model's graph (a layer's time shared among its ops by FLOPs); see measure.cpp.
struct ProfileOptions {
    std::string model;
    std::string overrides;  // zoo models: "layers=2,seq_len=64"
    int batch_size = 8;
    int seq_len = 0;  // 0: the model's
    int repeats = 5;
    std::string out_file;  // empty: stdout
    std::string device = "cpu";
};
int profileCommand(const ProfileOptions& o);

// make-data: `samples` samples of a zoo model's (or preset's) synthetic data (seed), at its size
// overrides ("layers=2,..."), as a tensor data file: the samples `run` makes for step 0.
int makeDataCommand(const std::string& model, const std::string& overrides, int samples, int seq_len, unsigned long long seed,
                    const std::string& out_file);

int inspectCommand(const std::string& file, const std::vector<long long>& input_shape, const std::string& input_dtype,
                   int repeats, const std::string& out_file);

// The graph of a TorchScript module whose top-level children run in sequence (layer i = child
// i, ops = the aten calls inside each), run on an input of `input_shape` (batch first).
// repeats > 0 also measures each child's forward and backward time (median of `repeats`).
// Per layer, `layers` (when given) receives name, ops, times, param bytes and output shape.
// Throws Error naming the file when it cannot be loaded or run.
Graph scriptGraph(const std::string& file, const std::vector<int64_t>& input_shape, const std::string& input_dtype, int repeats,
                  nlohmann::json* layers = nullptr);

// export-script: the zoo's MLP (or its preset mlp-tiny) at its size overrides as a TorchScript
// module, child fc<i> = layer i with the parameters `run` starts from for `seed`.
int exportScriptCommand(const std::string& model, const std::string& overrides, const std::string& out_file, unsigned long long seed);

}  // namespace hippie::engine
