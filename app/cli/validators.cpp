#include "app/cli/validators.h"

#include <charconv>
#include <string>

namespace hippie::cli {

namespace {

CLI::Validator intAtLeast(int minimum, const std::string& what) {
    return CLI::Validator(
        [minimum, what](std::string& text) -> std::string {
            int value = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, value);
            if (ec != std::errc() || ptr != end || value < minimum) return "must be " + what + ", got '" + text + "'";
            return {};
        },
        "");
}

}  // namespace

const CLI::Validator& positiveInt() {
    static const CLI::Validator v = intAtLeast(1, "a positive integer");
    return v;
}

const CLI::Validator& nonNegativeInt() {
    static const CLI::Validator v = intAtLeast(0, "a non-negative integer");
    return v;
}

}  // namespace hippie::cli
