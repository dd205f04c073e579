#include "widgets/gantt/schedule_view.h"

#include <algorithm>
#include <cmath>

#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "widgets/common/palette.h"
#include "widgets/common/units.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/memory/memory_plot.h"

namespace hippie::widgets {

namespace {

QString legendHtml() {
    struct Entry {
        InstrKind kind;
        const char* text;
    };
    static constexpr Entry entries[] = {{InstrKind::Forward, "forward"},         {InstrKind::Backward, "backward"},
                                        {InstrKind::BackwardInput, "input grad (B)"}, {InstrKind::BackwardWeight, "weight grad (W)"},
                                        {InstrKind::Recompute, "recompute"},     {InstrKind::SendActivation, "send/recv act."},
                                        {InstrKind::SendGrad, "send/recv grad"}, {InstrKind::AllReduce, "all-reduce"},
                                        {InstrKind::OptimizerStep, "optimizer"}};
    QString html;
    for (const Entry& e : entries)
        html += QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;&nbsp; ")
                    .arg(instrColor(e.kind).name(), QString::fromLatin1(e.text));
    return html;
}

QString eventText(const TraceEvent& e) {
    QString s = QString::fromLatin1(toString(e.kind));
    if (e.stage >= 0) s += QStringLiteral(" stage %1").arg(e.stage);
    if (e.mb >= 0) s += QStringLiteral(" mb %1").arg(e.mb);
    if (e.peer >= 0) s += QStringLiteral(" peer %1").arg(e.peer);
    if (e.bytes > 0) s += QStringLiteral(" · ") + formatBytes(e.bytes);
    return s + QStringLiteral(" · %1 → %2 (%3)").arg(formatSeconds(e.start_s), formatSeconds(e.end_s),
                                                     formatSeconds(e.end_s - e.start_s));
}

}  // namespace

ScheduleView::ScheduleView(QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), legend_(new QLabel(legendHtml(), this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(legend_);
    layout->addWidget(plot_, 1);
    legend_->setTextFormat(Qt::RichText);
    legend_->setWordWrap(true);

    gantt_rect_ = plot_->axisRect();
    memory_rect_ = new QCPAxisRect(plot_);
    plot_->plotLayout()->addElement(1, 0, memory_rect_);
    plot_->plotLayout()->setRowStretchFactor(0, 2.2);
    plot_->plotLayout()->setRowStretchFactor(1, 1.0);
    auto* margins = new QCPMarginGroup(plot_);
    gantt_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    memory_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);

    QCPAxis* rows = gantt_rect_->axis(QCPAxis::atLeft);
    rows->setRangeReversed(true);
    rows->grid()->setVisible(false);
    gantt_rect_->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("time (s)"));
    memory_rect_->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("time (s)"));
    for (QCPAxisRect* r : {gantt_rect_, memory_rect_}) {
        r->setRangeDrag(Qt::Horizontal);
        r->setRangeZoom(Qt::Horizontal);
    }
    connect(gantt_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged),
            memory_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(memory_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged),
            gantt_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::setRange));
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);

    gantt_ = new GanttPlottable(gantt_rect_->axis(QCPAxis::atBottom), rows);
    memory_ = std::make_unique<MemoryPlot>(plot_, memory_rect_);
    connect(plot_, &QCustomPlot::mouseMove, this, &ScheduleView::onMouseMove);
    plot_->setMouseTracking(true);
    setMinimumHeight(260);
}

ScheduleView::~ScheduleView() = default;

void ScheduleView::setTrace(const Trace& trace, const Cluster* cluster) {
    trace_ = trace;
    cluster_ = cluster ? std::optional<Cluster>(*cluster) : std::nullopt;
    const Cluster* c = cluster_ ? &*cluster_ : nullptr;
    layout_ = GanttRowLayout::build(trace_.devices, [c](int d) {
        return c && d >= 0 && d < c->deviceCount() ? c->nodeOf(d) : 0;
    });
    gantt_->setBlocks(placeBlocks(trace_, layout_));
    memory_->setCurves(memoryCurves(trace_, endTime()));
    updateRowAxis();
    updateSeparators();
    rescale();
}

void ScheduleView::clear() { setTrace(Trace{}, nullptr); }

double ScheduleView::endTime() const {
    double end = trace_.metrics.iteration_time_s;
    for (const TraceEvent& e : trace_.events) end = std::max(end, e.end_s);
    return end;
}

void ScheduleView::setRevealTime(double t_s) {
    gantt_->setRevealTime(t_s);
    memory_->setRevealTime(t_s);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ScheduleView::rescale() {
    const double end = endTime() > 0 ? endTime() : 1.0;
    gantt_rect_->axis(QCPAxis::atBottom)->setRange(0, end * 1.01);
    gantt_rect_->axis(QCPAxis::atLeft)->setRange(layout_.top() - 0.1, layout_.bottom() + 0.1);
    plot_->replot();
}

void ScheduleView::updateRowAxis() {
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (const GanttRow& r : layout_.rows) {
        const QString label = cluster_ ? QStringLiteral("n%1 · GPU %2").arg(r.node).arg(r.device)
                                       : QStringLiteral("GPU %1").arg(r.device);
        ticker->addTick(r.y, label);
    }
    gantt_rect_->axis(QCPAxis::atLeft)->setTicker(ticker);
}

void ScheduleView::updateSeparators() {
    for (QCPItemStraightLine* line : separators_) plot_->removeItem(line);
    separators_.clear();
    QCPAxis* x = gantt_rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = gantt_rect_->axis(QCPAxis::atLeft);
    for (double sep : layout_.node_separators) {
        auto* line = new QCPItemStraightLine(plot_);
        line->setClipAxisRect(gantt_rect_);
        line->point1->setAxes(x, y);
        line->point2->setAxes(x, y);
        line->point1->setCoords(0, sep);
        line->point2->setCoords(1, sep);
        line->setPen(QPen(QColor(0x888888), 1, Qt::DotLine));
        separators_.push_back(line);
    }
}

QString ScheduleView::describeAt(const QPointF& pos) const {
    const double t = gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
    QString text = QStringLiteral("t = %1").arg(formatSeconds(t));
    if (gantt_rect_->rect().contains(pos.toPoint())) {
        const double y = gantt_rect_->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
        const int b = gantt_->blockAt(t, y);
        if (b >= 0) {
            const GanttBlock& block = gantt_->blocks()[static_cast<size_t>(b)];
            const TraceEvent& e = trace_.events[static_cast<size_t>(block.event)];
            text += QStringLiteral("\nGPU %1: ").arg(e.device) + eventText(e);
            const auto& curve = memory_->curves()[static_cast<size_t>(block.row)];
            text += QStringLiteral("\nmemory %1 GiB of %2 GiB")
                        .arg(memoryAt(curve, t), 0, 'f', 2)
                        .arg(curve.capacity_gib, 0, 'f', 1);
        }
    } else if (memory_rect_->rect().contains(pos.toPoint())) {
        for (const MemoryCurve& c : memory_->curves())
            text += QStringLiteral("\nGPU %1: %2 GiB").arg(c.device).arg(memoryAt(c, t), 0, 'f', 2);
    } else {
        return {};
    }
    return text;
}

void ScheduleView::onMouseMove(QMouseEvent* event) {
    const QString text = describeAt(event->position());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    emit hoverTextChanged(text);
}

bool ScheduleView::savePng(const QString& path, int width, int height) { return plot_->savePng(path, width, height); }

bool ScheduleView::savePdf(const QString& path) { return plot_->savePdf(path); }

}  // namespace hippie::widgets
