#include "widgets/memory/capacity_legend_item.h"

#include <algorithm>

namespace hippie::widgets {

CapacityLegendItem::CapacityLegendItem(QCPLegend* legend, const QString& text, const QPen& pen)
    : QCPAbstractLegendItem(legend), text_(text), pen_(pen) {
    setSelectable(false);  // clicking a device's entry highlights it; this one names no device
}

QRect CapacityLegendItem::textRect() const {
    return QFontMetrics(mFont).boundingRect(0, 0, 0, mParentLegend->iconSize().height(), Qt::TextDontClip, text_);
}

// As QCPPlottableLegendItem lays out its icon and name, so that the entries line up.
void CapacityLegendItem::draw(QCPPainter* painter) {
    const QSize icon = mParentLegend->iconSize();
    const QRect text = textRect();
    const int height = std::max(text.height(), icon.height());
    painter->setFont(mFont);
    painter->setPen(QPen(mTextColor));
    painter->drawText(mRect.x() + icon.width() + mParentLegend->iconTextPadding(), mRect.y(), text.width(), height, Qt::TextDontClip, text_);
    painter->setPen(pen_);
    const int y = mRect.y() + icon.height() / 2;
    painter->drawLine(QLineF(mRect.x(), y, mRect.x() + icon.width(), y));
}

QSize CapacityLegendItem::minimumOuterSizeHint() const {
    const QSize icon = mParentLegend->iconSize();
    const QRect text = textRect();
    return {icon.width() + mParentLegend->iconTextPadding() + text.width() + mMargins.left() + mMargins.right(),
            std::max(text.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
}

}  // namespace hippie::widgets
