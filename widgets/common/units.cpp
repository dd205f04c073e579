#include "widgets/common/units.h"

#include <cmath>

namespace hippie::widgets {

QString formatSeconds(double seconds) {
    const double a = std::abs(seconds);
    if (a >= 1.0) return QString::number(seconds, 'f', 2) + QStringLiteral(" s");
    if (a >= 1e-3) return QString::number(seconds * 1e3, 'f', 1) + QStringLiteral(" ms");
    return QString::number(seconds * 1e6, 'f', 0) + QStringLiteral(" µs");
}

QString formatBytes(int64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= kBytesPerGiB) return QString::number(b / kBytesPerGiB, 'f', 2) + QStringLiteral(" GiB");
    if (b >= 1024.0 * 1024.0) return QString::number(b / (1024.0 * 1024.0), 'f', 1) + QStringLiteral(" MiB");
    if (b >= 1024.0) return QString::number(b / 1024.0, 'f', 1) + QStringLiteral(" KiB");
    return QString::number(bytes) + QStringLiteral(" B");
}

QString formatFlops(double flops) {
    static constexpr const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
    int p = 0;
    while (std::abs(flops) >= 1000.0 && p < 6) {
        flops /= 1000.0;
        ++p;
    }
    return QString::number(flops, 'f', p == 0 ? 0 : 1) + QStringLiteral(" ") + QLatin1String(prefixes[p]) +
           QStringLiteral("FLOP");
}

}  // namespace hippie::widgets
