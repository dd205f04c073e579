#pragma once
// Checks for integer options with short messages ("--pp: must be a positive integer, got '-1'"),
// where CLI11's range checks print the whole double range.
#include <CLI/CLI.hpp>

namespace hippie::cli {

const CLI::Validator& positiveInt();     // 1, 2, ...
const CLI::Validator& nonNegativeInt();  // 0, 1, ...

}  // namespace hippie::cli
