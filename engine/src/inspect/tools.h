#pragma once
// Measuring commands: `probe` (this host as Cluster JSON), `profile` (a tiny model's graph
// with measured per-layer times), `inspect` (TorchScript -> graph JSON with measured times)
// and `export-script` (a tiny model as a TorchScript file, for inspect and its tests).
// Each returns the process exit code and prints JSON on stdout or an error event.
#include <string>
#include <vector>

namespace hippie::engine {

struct ProbeOptions {
    double seconds = 0.5;           // time spent measuring FLOP/s
    bool loopback_bandwidth = true;  // measure TCP over 127.0.0.1 between two threads
};
int probeCommand(const ProbeOptions& o);

int profileCommand(const std::string& model, int batch_size, int seq_len, int repeats, const std::string& out_file);

int inspectCommand(const std::string& file, const std::vector<long long>& input_shape, const std::string& input_dtype,
                   int repeats, const std::string& out_file);

int exportScriptCommand(const std::string& model, const std::string& out_file, unsigned long long seed);

}  // namespace hippie::engine
