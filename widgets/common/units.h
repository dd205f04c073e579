#pragma once
// Number formatting shared by tables, tooltips and charts.
#include <cstdint>

#include <QString>

namespace hippie::widgets {

inline constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

inline double toGiB(int64_t bytes) { return static_cast<double>(bytes) / kBytesPerGiB; }
QString formatSeconds(double seconds);  // "12.3 ms", "1.20 s", "85 µs"
QString formatBytes(int64_t bytes);     // "3.2 GiB", "512 MiB"
QString formatFlops(double flops);      // "1.2 TFLOP"

}  // namespace hippie::widgets
