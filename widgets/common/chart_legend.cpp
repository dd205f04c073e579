#include "widgets/common/chart_legend.h"

#include <QEvent>
#include <QObject>

#include <algorithm>

#include <qcustomplot.h>

namespace hippie::widgets {

namespace {

constexpr int kLegendInsetPx = 3;

// Refits the legend's columns before the plot lays itself out at its new size.
class LegendColumnFitter : public QObject {
public:
    explicit LegendColumnFitter(QCustomPlot* plot) : QObject(plot), plot_(plot) { plot->installEventFilter(this); }

    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == plot_ && event->type() == QEvent::Resize) fitLegendColumns(plot_);
        return false;
    }

private:
    QCustomPlot* plot_;
};

}  // namespace

void putLegendUnderAxes(QCustomPlot* plot) {
    QCPLegend* legend = plot->legend;
    if (plot->axisRect()->insetLayout()->take(legend)) plot->axisRect()->insetLayout()->simplify();
    auto* holder = new QCPLayoutGrid;
    holder->setMargins(QMargins(kLegendInsetPx, 0, kLegendInsetPx, kLegendInsetPx));
    const int row = plot->plotLayout()->rowCount();
    plot->plotLayout()->addElement(row, 0, holder);
    holder->addElement(0, 0, legend);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);  // only the height its entries need
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    new LegendColumnFitter(plot);
}

void fitLegendColumns(QCustomPlot* plot) {
    QCPLegend* legend = plot->legend;
    // itemCount() counts the grid's cells, empty ones (null items) too.
    int items = 0, widest = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (const QCPAbstractLegendItem* item = legend->item(i)) {
            ++items;
            widest = std::max(widest, item->minimumOuterSizeHint().width());
        }
    if (items == 0) return;
    const QMargins m = legend->margins();
    const int room = plot->width() - 2 * kLegendInsetPx - m.left() - m.right() + legend->columnSpacing();
    const int columns = std::clamp(room / std::max(1, widest + legend->columnSpacing()), 1, items);
    if (columns == legend->wrap()) return;
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // the entries move to the new grid
}

}  // namespace hippie::widgets
