#pragma once
// What both halves of hippie-engine share on the command line: a command that cannot run prints
// one JSON error event on stdout and exits with code 2.
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace hippie::engine {

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
