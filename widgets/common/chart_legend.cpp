#include "widgets/common/chart_legend.h"

#include <QEvent>
#include <QObject>

#include <algorithm>
#include <vector>

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
    // Free space beside the legend: a grid is no wider than its elements allow, and an empty
    // legend's few pixels would cap the plot's one column, the axes too.
    holder->addElement(0, 1, new QCPLayoutElement(plot));
    holder->setColumnStretchFactor(0, 0.001);
    holder->setColumnStretchFactor(1, 1000);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);  // only the height its entries need
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    new LegendColumnFitter(plot);
}

void addBesideLegend(QCustomPlot* plot, QCPLayoutElement* element) {
    auto* holder = qobject_cast<QCPLayoutGrid*>(plot->legend->layout());
    Q_ASSERT(holder);  // putLegendUnderAxes first
    const int column = holder->columnCount() - 1;  // before the free space
    holder->insertColumn(column);
    holder->addElement(0, column, element);
    holder->setColumnStretchFactor(column, 0.001);
    fitLegendColumns(plot);
}

void fitLegendColumns(QCustomPlot* plot) {
    QCPLegend* legend = plot->legend;
    // What else the legend's row holds (addBesideLegend) keeps its width.
    int others = 0;
    if (const auto* holder = qobject_cast<QCPLayoutGrid*>(legend->layout()))
        for (int i = 0; i < holder->elementCount(); ++i)
            if (QCPLayoutElement* e = holder->elementAt(i); e && e != legend && e->visible())
                others += e->minimumOuterSizeHint().width() + holder->columnSpacing();
    // itemCount() counts the grid's cells, empty ones (null items) too.
    std::vector<int> widths;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (const QCPAbstractLegendItem* item = legend->item(i)) widths.push_back(item->minimumOuterSizeHint().width());
    if (widths.empty()) return;
    const QMargins m = legend->margins();
    const int room = plot->width() - 2 * kLegendInsetPx - m.left() - m.right() - others;
    // The most columns whose widest entries fit side by side (each column as wide as its widest).
    int columns = static_cast<int>(widths.size());
    for (; columns > 1; --columns) {
        std::vector<int> column(static_cast<size_t>(columns), 0);
        for (size_t i = 0; i < widths.size(); ++i) column[i % column.size()] = std::max(column[i % column.size()], widths[i]);
        int total = legend->columnSpacing() * (columns - 1);
        for (int w : column) total += w;
        if (total <= room) break;
    }
    if (columns == legend->wrap()) return;
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // the entries move to the new grid
}

}  // namespace hippie::widgets
