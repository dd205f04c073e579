#include "app/cli/format.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace hippie::cli {

namespace {

constexpr double kMillion = 1e6;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = kMiB * 1024.0;
constexpr double kMillisecondsPerSecond = 1e3;

}  // namespace

std::string fixed(double value, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
    return buf.data();
}

std::string millions(double count) { return fixed(count / kMillion, 1); }

std::string gib(int64_t bytes) { return fixed(static_cast<double>(bytes) / kGiB, 2); }

std::string mib(int64_t bytes) { return fixed(static_cast<double>(bytes) / kMiB, 1); }

std::string percent(double fraction) { return fixed(fraction * 100.0, 1) + "%"; }

std::string milliseconds(double seconds) { return fixed(seconds * kMillisecondsPerSecond, 2) + " ms"; }

std::string flops(double count) {
    constexpr std::array<const char*, 6> kPrefixes = {"", "K", "M", "G", "T", "P"};
    size_t i = 0;
    while (i + 1 < kPrefixes.size() && std::abs(count) >= 1000.0) {
        count /= 1000.0;
        ++i;
    }
    return fixed(count, 2) + " " + kPrefixes[i] + "FLOP";
}

std::string layerRange(const StageRange& r) {
    if (r.first_layer == r.last_layer) return std::to_string(r.first_layer);
    return std::to_string(r.first_layer) + "-" + std::to_string(r.last_layer);
}

std::string deviceList(const std::vector<int>& ids) {
    std::vector<std::string> parts;
    for (int id : ids) parts.push_back(std::to_string(id));
    return "[" + joined(parts, " ") + "]";
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : separator) + parts[i];
    return out;
}

}  // namespace hippie::cli
