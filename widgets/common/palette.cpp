#include "widgets/common/palette.h"

#include <array>

namespace hippie::widgets {

QColor categoryColor(int index) {
    static constexpr std::array<QRgb, 12> colors = {0x8dd3c7, 0xfdb462, 0xbebada, 0xfb8072, 0x80b1d3, 0xb3de69,
                                                    0xfccde5, 0xbc80bd, 0xccebc5, 0xffed6f, 0xa6cee3, 0xd9d9d9};
    if (index < 0) return QColor(0xd0d0d0);
    return QColor(colors[static_cast<size_t>(index) % colors.size()]);
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
    case InstrKind::OptimizerStep: return QColor(0x555555);
    }
    return Qt::gray;
}

QColor seriesColor(int index) {
    static constexpr std::array<QRgb, 10> colors = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                                    0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
    return QColor(colors[static_cast<size_t>(index < 0 ? 0 : index) % colors.size()]);
}

}  // namespace hippie::widgets
