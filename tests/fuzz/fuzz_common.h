#pragma once
// Shared by the libFuzzer harnesses (README.md): what counts as a finding. A reader may refuse
// any input with hippie::Error (that is its job); any other exception, a crash, a sanitizer
// report, a hang or unbounded memory is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "planners/common/error.h"

namespace hippie::fuzz {

inline std::string_view asText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// Runs `body`; hippie::Error is an accepted refusal, anything else aborts with the message so
// libFuzzer saves the input.
template <typename Body>
void expectOnlyErrors(Body&& body) {
    try {
        body();
    } catch (const hippie::Error&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "finding: %s escaped: %s\n", typeid(e).name(), e.what());
        std::abort();
    }
}

[[noreturn]] inline void finding(const std::string& what) {
    std::fprintf(stderr, "finding: %s\n", what.c_str());
    std::abort();
}

}  // namespace hippie::fuzz
