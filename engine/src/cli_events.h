#pragma once
// What both halves of hippie-engine share on the command line: which commands the LibTorch half
// runs, and how a command that cannot run ends (one JSON error event on stdout, exit code 2).
#include <algorithm>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace hippie::engine {

// The commands of hippie-engine-torch (torch_main.cpp), which the front (main.cpp) lists in its
// --help and hands over. `computes`: it runs kernels, so OpenBLAS's kernels are chosen first
// (blas_core.h: forceBlasKernels).
struct TorchCommand {
    const char* name;
    const char* help;
    bool computes;
};
inline constexpr TorchCommand kTorchCommands[] = {
    {"run", "Run one rank of a plan (JSON lines on stdout)", true},
    {"probe", "Measure this host: devices, FLOP/s, memory and loopback bandwidth, the ranks' all-reduce (Cluster JSON)", true},
    {"profile", "Measure a model's per-layer times and memory (a zoo model or preset at its size overrides); write graph JSON", true},
    {"inspect", "TorchScript file -> graph JSON with measured per-layer times", false},
    {"export-script", "Write the zoo's MLP (mlp, mlp-tiny) as a TorchScript module (children = layers)", false},
    {"make-data", "Write a model's synthetic samples as a tensor data file (for run --data)", false},
};

// The LibTorch half's command of that name, or nullptr.
inline const TorchCommand* findTorchCommand(std::string_view name) {
    const auto* it = std::find_if(std::begin(kTorchCommands), std::end(kTorchCommands), [&](const TorchCommand& c) { return name == c.name; });
    return it == std::end(kTorchCommands) ? nullptr : it;
}

inline int errorEvent(const std::string& message) {
    std::cout << nlohmann::json{{"event", "error"}, {"message", message}, {"exit_code", 2}}.dump() << std::endl;
    return 2;
}

// Parses the command line. The exit code when the command ends there (--help, --version, or a
// bad command line, then also an error event), else nothing.
inline std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << e.what() << "\n";
        return errorEvent(std::string("bad command line: ") + e.what());
    }
    return std::nullopt;
}

}  // namespace hippie::engine
