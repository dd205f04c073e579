#pragma once
// A legend entry for a device capacity drawn as a dashed line across the memory curves:
// "capacity 40.00 GiB", or "... (off scale)" when the axis stops below it so that small curves
// stay readable. In the legend, not in the axis label: two lines of label did not fit the height
// of the memory curves at 1280x800 and were cut.
#include <QPen>
#include <QString>

#include <qcustomplot.h>

namespace hippie::widgets {

class CapacityLegendItem : public QCPAbstractLegendItem {
    Q_OBJECT
public:
    CapacityLegendItem(QCPLegend* legend, const QString& text, const QPen& pen);

    QString text() const { return text_; }
    QSize minimumOuterSizeHint() const override;

protected:
    void draw(QCPPainter* painter) override;

private:
    QRect textRect() const;

    QString text_;
    QPen pen_;
};

}  // namespace hippie::widgets
