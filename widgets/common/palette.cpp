#include "widgets/common/palette.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "planners/algorithms/registry.h"

namespace hippie::widgets {

QColor categoryColor(int index) {
    static constexpr std::array<QRgb, 12> colors = {0x8dd3c7, 0xfdb462, 0xbebada, 0xfb8072, 0x80b1d3, 0xb3de69,
                                                    0xfccde5, 0xbc80bd, 0xccebc5, 0xffed6f, 0xa6cee3, 0xd9d9d9};
    if (index < 0) return QColor(0xd0d0d0);
    if (static_cast<size_t>(index) < colors.size()) return QColor(colors[static_cast<size_t>(index)]);
    // Beyond the palette: light colours spread by the golden angle, lightness alternating so
    // that neighbours differ (still readable with dark text; the graph legend names each).
    constexpr double kGoldenAngle = 137.508;
    const double hue = std::fmod(index * kGoldenAngle, 360.0);
    return QColor::fromHslF(static_cast<float>(hue / 360.0), 0.65f, index % 2 == 0 ? 0.78f : 0.66f);
}

QColor instrColor(InstrKind kind) {
    switch (kind) {
    case InstrKind::Forward: return QColor(0x4c78a8);
    case InstrKind::Backward: return QColor(0xf58518);
    case InstrKind::BackwardInput: return QColor(0xe45756);
    case InstrKind::BackwardWeight: return QColor(0x72b7b2);
    case InstrKind::Recompute: return QColor(0x9d755d);
    case InstrKind::SendActivation:
    case InstrKind::RecvActivation: return QColor(0x54a24b);
    case InstrKind::SendGrad:
    case InstrKind::RecvGrad: return QColor(0xeeca3b);
    case InstrKind::AllReduce: return QColor(0xb279a2);
    case InstrKind::ReduceScatter: return QColor(0xd4a6c8);
    case InstrKind::AllGather: return QColor(0x8c6d8c);
    case InstrKind::TensorParallel: return QColor(0x17becf);
    case InstrKind::ZeroGather: return QColor(0x6a3d9a);
    case InstrKind::OptimizerStep: return QColor(0x555555);
    }
    return Qt::gray;
}

QColor seriesColor(int index) {
    static constexpr std::array<QRgb, 10> colors = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                                    0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
    return QColor(colors[static_cast<size_t>(index < 0 ? 0 : index) % colors.size()]);
}

QColor plannerColor(const QString& planner) {
    // 20 distinguishable colours (Tableau 20 order: dark then light of each hue).
    static constexpr std::array<QRgb, 20> colors = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2,
                                                    0x7f7f7f, 0xbcbd22, 0x17becf, 0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896,
                                                    0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xc7c7c7, 0xdbdb8d, 0x9edae5};
    const std::vector<PlannerInfo>& registry = plannerRegistry();
    const std::string name = planner.toStdString();
    for (size_t i = 0; i < registry.size(); ++i)
        if (registry[i].name == name) return QColor(colors[i % colors.size()]);
    return QColor(colors[(registry.size() + qHash(planner)) % colors.size()]);
}

QColor deviceColor(int index, int count) {
    constexpr int kPerRing = 12;
    constexpr double kGoldenAngle = 137.508;
    const int n = std::max(1, std::min(count, kPerRing));
    const int ring = std::max(0, index) / kPerRing;
    const double hue = std::fmod((std::max(0, index) % kPerRing) * (n < kPerRing ? 360.0 / n : kGoldenAngle) + ring * 15.0, 360.0);
    // Neighbours alternate dark and medium, so that adjacent hues (yellow-green, green) differ.
    const bool dark = (index + ring) % 2 == 0;
    return QColor::fromHslF(static_cast<float>(hue / 360.0), 0.85f, dark ? 0.30f : 0.47f);
}

}  // namespace hippie::widgets
