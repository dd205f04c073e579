#pragma once
// `hippie-engine compare-params`: parameter dumps (run --dump-params) against a reference dump.
// Plain C++ (no LibTorch).
#include <string>
#include <vector>

namespace hippie::engine {

// Compares parameter dumps against a reference dump: every parameter of every file must be in
// the reference and within `tolerance` (absolute, elementwise), and together the files must
// cover the reference. Prints one JSON line; returns 0 when they match, 1 otherwise, 2 on bad files.
// `loose`: "NAME=TOL" entries: parameters whose name contains NAME are compared within TOL
// instead (reported in the output's notes).
int compareParams(const std::string& reference, const std::vector<std::string>& files, double tolerance,
                  const std::vector<std::string>& loose = {});

}  // namespace hippie::engine
