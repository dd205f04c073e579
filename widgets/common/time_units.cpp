#include "widgets/common/time_units.h"

#include <cmath>

namespace hippie::widgets {

TimeUnit timeUnitFor(double span_s) {
    const double a = std::abs(span_s);
    if (a >= 1.0) return {"s", 1.0};
    if (a >= 1e-3) return {"ms", 1e3};
    return {"µs", 1e6};
}

QString timeAxisLabel(const TimeUnit& unit) { return QStringLiteral("time (%1)").arg(QString::fromUtf8(unit.name)); }

ByteUnit byteUnitFor(double largest_bytes) {
    constexpr double kKiB = 1024.0;
    const double a = std::abs(largest_bytes);
    if (a >= kKiB * kKiB * kKiB) return {"GiB", 1.0 / (kKiB * kKiB * kKiB)};
    if (a >= kKiB * kKiB) return {"MiB", 1.0 / (kKiB * kKiB)};
    if (a >= kKiB) return {"KiB", 1.0 / kKiB};
    return {"B", 1.0};
}

}  // namespace hippie::widgets
