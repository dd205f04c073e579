#pragma once
// What both halves of hippie-engine print when a command cannot run: one JSON error event on
// stdout, exit code 2.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

namespace hippie::engine {

inline int errorEvent(const std::string& message) {
    std::cout << nlohmann::json{{"event", "error"}, {"message", message}, {"exit_code", 2}}.dump() << std::endl;
    return 2;
}

}  // namespace hippie::engine
