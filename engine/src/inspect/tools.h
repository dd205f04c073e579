#pragma once
// Measuring commands: `probe` (this host as Cluster JSON), `profile` (a tiny model's graph
// with measured per-layer times), `inspect` (TorchScript -> graph JSON with measured times)
// and `export-script` (a tiny model as a TorchScript file, for inspect and its tests).
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

// profile: per layer, the median forward and backward time and the measured memory (output
// bytes, bytes autograd keeps for backward, transient peaks); see measure.cpp.
int profileCommand(const std::string& model, int batch_size, int seq_len, int repeats, const std::string& out_file,
                   const std::string& device = "cpu");

// make-data: `samples` samples of a tiny model's synthetic data (seed) as a tensor data file.
int makeDataCommand(const std::string& model, int samples, int seq_len, unsigned long long seed, const std::string& out_file);

int inspectCommand(const std::string& file, const std::vector<long long>& input_shape, const std::string& input_dtype,
                   int repeats, const std::string& out_file);

// The graph of a TorchScript module whose top-level children run in sequence (layer i = child
// i, ops = the aten calls inside each), run on an input of `input_shape` (batch first).
// repeats > 0 also measures each child's forward and backward time (median of `repeats`).
// Per layer, `layers` (when given) receives name, ops, times, param bytes and output shape.
// Throws Error naming the file when it cannot be loaded or run.
Graph scriptGraph(const std::string& file, const std::vector<int64_t>& input_shape, const std::string& input_dtype, int repeats,
                  nlohmann::json* layers = nullptr);

int exportScriptCommand(const std::string& model, const std::string& out_file, unsigned long long seed);

}  // namespace hippie::engine
