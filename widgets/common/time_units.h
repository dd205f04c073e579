#pragma once
// Time axes in the unit a person reads: µs, ms or s chosen from the visible span, so a tick
// reads "0.8" under "time (ms)" rather than "0.0008" under "time (s)". Plain functions,
// tested without a window.
#include <QString>

namespace hippie::widgets {

struct TimeUnit {
    const char* name = "s";   // "µs", "ms", "s"
    double per_second = 1.0;  // multiply seconds by this to get the unit
};

// The largest unit in which `span_s` is at least 1 (µs for anything shorter than 1 ms).
TimeUnit timeUnitFor(double span_s);
// "time (ms)"
QString timeAxisLabel(const TimeUnit& unit);

// Memory in the unit that keeps a few significant digits: "0.2 MiB", not "0.0002 GiB".
struct ByteUnit {
    const char* name = "GiB";
    double per_byte = 1.0;
};
ByteUnit byteUnitFor(double largest_bytes);

}  // namespace hippie::widgets
