#pragma once
// Number and list formatting shared by the commands, so every table shows units the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "planners/schedule/plan.h"

namespace hippie::cli {

std::string fixed(double value, int decimals);     // 3.14159, 2 -> "3.14"
std::string millions(double count);                 // 1315758080 -> "1315.8"
std::string gib(int64_t bytes);                     // "38.25"
std::string mib(int64_t bytes);                     // "12.0"
std::string percent(double fraction);               // 0.1234 -> "12.3%"
std::string milliseconds(double seconds);           // 0.01234 -> "12.34 ms"
std::string flops(double count);                    // 1.2e12 -> "1.20 TFLOP"
std::string layerRange(const StageRange& r);        // "0-6", or "7" for one layer
std::string deviceList(const std::vector<int>& ids);  // "[0 4 8 12]"
std::string joined(const std::vector<std::string>& parts, const std::string& separator);

}  // namespace hippie::cli
