#pragma once
// All Gantt blocks of a trace drawn by one QCustomPlot plottable in one paint pass: blocks
// outside the visible time range are skipped and the rest are batched by colour, so tens of
// thousands of blocks pan and zoom smoothly (one item per block would not). Blocks narrower
// than a pixel are drawn in one neutral grey, not their kind's colour: zoomed out, a pixel
// holding many short sends must not read as a long all-reduce.
#include <limits>
#include <vector>

#include <qcustomplot.h>

#include "widgets/gantt/timeline.h"

namespace hippie::widgets {

class GanttPlottable : public QCPAbstractPlottable {
    Q_OBJECT
public:
    GanttPlottable(QCPAxis* time_axis, QCPAxis* row_axis);

    void setBlocks(std::vector<GanttBlock> blocks);
    const std::vector<GanttBlock>& blocks() const { return blocks_; }
    int blockCount() const { return static_cast<int>(blocks_.size()); }

    // Teaching mode: only what has started by `t_s` is drawn, cut at `t_s`.
    void setRevealTime(double t_s);
    double revealTime() const { return reveal_s_; }
    // Blocks the last paint actually drew (after culling), for benchmarks and tests.
    int lastDrawnCount() const { return last_drawn_; }

    // The selected block is outlined thick (-1: none).
    void setSelectedBlock(int block) { selected_ = block; }
    int selectedBlock() const { return selected_; }
    // The selected block's dependencies, outlined: what it waits on and what waits on it.
    void setDependencyBlocks(std::vector<int> waits_on, std::vector<int> waited_by);
    const std::vector<int>& waitsOnBlocks() const { return waits_on_; }
    const std::vector<int>& waitedByBlocks() const { return waited_by_; }
    static QColor waitsOnColor();
    static QColor waitedByColor();
    // Blocks narrower than a pixel the last paint drew in the neutral colour.
    int lastSubPixelCount() const { return last_sub_pixel_; }
    static QColor subPixelColor();

    // The block under plot coordinates (time, row units), or -1.
    int blockAt(double t_s, double y) const;

    double selectTest(const QPointF& pos, bool only_selectable, QVariant* details = nullptr) const override;
    QCPRange getKeyRange(bool& found, QCP::SignDomain domain = QCP::sdBoth) const override;
    QCPRange getValueRange(bool& found, QCP::SignDomain domain = QCP::sdBoth,
                           const QCPRange& key_range = QCPRange()) const override;

protected:
    void draw(QCPPainter* painter) override;
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

private:
    void drawLabels(QCPPainter* painter, const std::vector<std::pair<QRectF, int>>& labelled) const;

    std::vector<GanttBlock> blocks_;
    double reveal_s_ = std::numeric_limits<double>::infinity();
    int last_drawn_ = 0;
    int last_sub_pixel_ = 0;
    int selected_ = -1;
    std::vector<int> waits_on_, waited_by_;
};

}  // namespace hippie::widgets
