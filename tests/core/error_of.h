#pragma once
// For tests of refusals: the message of the hippie::Error a call throws, or "" when it throws
// none, and whether a message says something.
#include <functional>
#include <string>

#include "planners/common/error.h"

namespace hippie::test {

inline std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace hippie::test
