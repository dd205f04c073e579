#include "widgets/gantt/schedule_view.h"

#include <algorithm>
#include <cmath>

#include <QKeyEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "widgets/common/palette.h"
#include "widgets/common/units.h"
#include "widgets/gantt/dependencies.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/time_ticker.h"
#include "widgets/memory/memory_plot.h"

namespace hippie::widgets {

namespace {

constexpr double kZoomStep = 0.8;        // W zooms to 80% of the span, S to 125%
constexpr double kPanStep = 0.2;         // A/D move by a fifth of the span
constexpr double kMinSpanFraction = 1e-5;  // deepest zoom: this fraction of the iteration
constexpr double kFitMargin = 1.01;

// The instruction kinds `kinds` holds (all of them when empty), with the marks that every chart
// may show: what the blocks and ticks of this chart mean, in as few lines as they take. Entries
// break only between each other; how to select and measure is in the tooltip.
QString legendHtml(const std::set<InstrKind>& kinds) {
    struct Entry {
        InstrKind kind;
        const char* text;
    };
    static constexpr Entry entries[] = {{InstrKind::Forward, "forward"},         {InstrKind::Backward, "backward"},
                                        {InstrKind::BackwardInput, "input grad (B)"}, {InstrKind::BackwardWeight, "weight grad (W)"},
                                        {InstrKind::Recompute, "recompute"},     {InstrKind::SendActivation, "send/recv act."},
                                        {InstrKind::SendGrad, "send/recv grad"}, {InstrKind::AllReduce, "all-reduce"},
                                        {InstrKind::ReduceScatter, "reduce-scatter"}, {InstrKind::AllGather, "all-gather"},
                                        {InstrKind::TensorParallel, "tensor parallel"}, {InstrKind::ZeroGather, "ZeRO-3 gather"},
                                        {InstrKind::OptimizerStep, "optimizer"}};
    const auto entry = [](const QColor& colour, const char* mark, const QString& text) {
        return QStringLiteral("<span style='color:%1'>%2</span>&nbsp;%3&nbsp;&nbsp; ")
            .arg(colour.name(), QString::fromLatin1(mark), text.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"))
                     .replace(QLatin1Char('-'), QChar(0x2011))  // a non-breaking hyphen: not "all-" and "reduce"
                     .replace(QLatin1Char('/'), QStringLiteral("/") + QChar(0x2060)));  // a word joiner: not "send/" and "recv"
    };
    QString html;
    for (const Entry& e : entries)
        if (kinds.empty() || kinds.contains(e.kind)) html += entry(instrColor(e.kind), "&#9632;", QString::fromLatin1(e.text));
    html += entry(GanttPlottable::subPixelColor(), "&#9632;", QStringLiteral("narrower than a pixel"));
    html += entry(GanttPlottable::waitsOnColor(), "&#9633;", QStringLiteral("waits on"));
    html += entry(GanttPlottable::waitedByColor(), "&#9633;", QStringLiteral("waited on by"));
    return html;
}

std::set<InstrKind> kindsOf(const Trace& trace) {
    std::set<InstrKind> kinds;
    for (const TraceEvent& e : trace.events) kinds.insert(e.kind);
    return kinds;
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
    : QWidget(parent), plot_(new QCustomPlot(this)), legend_(new QLabel(legendHtml({}), this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* head = new QHBoxLayout;
    head->addWidget(legend_, 1);
    collapse_button_ = new QToolButton(this);
    collapse_button_->setText(tr("Collapse nodes"));
    collapse_button_->setCheckable(true);
    collapse_button_->setToolTip(tr("One row and one memory curve (the fullest device's) per node; double-click a row label to open or close its node"));
    collapse_button_->setVisible(false);
    head->addWidget(collapse_button_, 0, Qt::AlignTop);
    layout->addLayout(head);
    layout->addWidget(plot_, 1);
    connect(collapse_button_, &QToolButton::toggled, this, [this](bool on) { setAllGroupsCollapsed(on); });
    legend_->setTextFormat(Qt::RichText);
    legend_->setWordWrap(true);
    legend_->setToolTip(tr("Grey: blocks narrower than a pixel (zoom in with W). Click a block to outline what it waits on and "
                           "what waits on it; drag along the time axis to measure a span."));

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
    gantt_ticker_ = new TimeTicker;
    memory_ticker_ = new TimeTicker;
    gantt_rect_->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTicker>(gantt_ticker_));
    memory_rect_->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTicker>(memory_ticker_));
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
    gantt_->removeFromLegend();
    memory_ = std::make_unique<MemoryPlot>(plot_, memory_rect_);
    connect(plot_, &QCustomPlot::mouseMove, this, &ScheduleView::onMouseMove);
    connect(plot_, &QCustomPlot::mousePress, this, &ScheduleView::onMousePress);
    connect(gantt_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            &ScheduleView::onTimeRangeChanged);
    connect(plot_, &QCustomPlot::legendClick, this, [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
        auto* entry = qobject_cast<QCPPlottableLegendItem*>(item);
        if (!entry) return;
        const int device = entry->plottable()->property("device").toInt();
        highlightDevice(device == highlighted_device_ ? -1 : device);
    });
    plot_->setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    plot_->setFocusPolicy(Qt::StrongFocus);
    row_highlight_ = new QCPItemRect(plot_);
    row_highlight_->setClipAxisRect(gantt_rect_);
    row_highlight_->topLeft->setAxes(gantt_rect_->axis(QCPAxis::atBottom), gantt_rect_->axis(QCPAxis::atLeft));
    row_highlight_->bottomRight->setAxes(gantt_rect_->axis(QCPAxis::atBottom), gantt_rect_->axis(QCPAxis::atLeft));
    row_highlight_->setPen(QPen(QColor(0x202020), 1.5));
    row_highlight_->setBrush(QColor(255, 230, 120, 70));
    row_highlight_->setLayer(QStringLiteral("background"));
    row_highlight_->setVisible(false);
    span_rect_ = new QCPItemRect(plot_);
    span_rect_->setClipAxisRect(gantt_rect_);
    span_rect_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    span_rect_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    span_rect_->topLeft->setAxes(gantt_rect_->axis(QCPAxis::atBottom), gantt_rect_->axis(QCPAxis::atLeft));
    span_rect_->bottomRight->setAxes(gantt_rect_->axis(QCPAxis::atBottom), gantt_rect_->axis(QCPAxis::atLeft));
    span_rect_->topLeft->setAxisRect(gantt_rect_);
    span_rect_->bottomRight->setAxisRect(gantt_rect_);
    span_rect_->setPen(QPen(QColor(0x303030), 1, Qt::DashLine));
    span_rect_->setBrush(QColor(40, 40, 40, 35));
    span_rect_->setVisible(false);
    span_label_ = new QCPItemText(plot_);
    span_label_->setClipToAxisRect(false);
    span_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    span_label_->position->setAxes(gantt_rect_->axis(QCPAxis::atBottom), gantt_rect_->axis(QCPAxis::atLeft));
    span_label_->position->setAxisRect(gantt_rect_);
    span_label_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    span_label_->setBrush(QColor(255, 255, 255, 230));
    span_label_->setPen(QPen(QColor(0x303030)));
    span_label_->setPadding(QMargins(4, 2, 4, 2));
    span_label_->setVisible(false);
    connect(plot_, &QCustomPlot::mouseRelease, this, &ScheduleView::onMouseRelease);
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, &ScheduleView::onMouseDoubleClick);
    setMinimumHeight(260);
}

ScheduleView::~ScheduleView() = default;

void ScheduleView::setTrace(const Trace& trace, const Cluster* cluster, const Plan* plan) {
    trace_ = trace;
    cluster_ = cluster ? std::optional<Cluster>(*cluster) : std::nullopt;
    roles_ = plan ? deviceRoles(*plan) : std::map<int, DeviceRole>{};
    show_replica_ = plan && plan->dp > 1;
    show_rank_ = plan && plan->tp > 1;
    collapsed_groups_.clear();
    all_curves_ = memoryCurves(trace_, endTime());
    legend_->setText(legendHtml(kindsOf(trace_)));
    legend_->setVisible(!trace_.events.empty());  // no key to an empty chart
    layOut();
    {
        const QSignalBlocker block(collapse_button_);
        collapse_button_->setChecked(false);
    }
    collapse_button_->setText(!layout_.by_stage ? tr("Collapse nodes") : tr("Collapse stages"));
    collapse_button_->setToolTip(!layout_.by_stage ? tr("One row and one memory curve (the fullest device's) per node; double-click a row label to open or close its node")
                                                : tr("One row and one memory curve (the fullest device's) per pipeline stage; double-click a row label to open or close its stage"));
    collapse_button_->setVisible(groupCount() > 1);
    rescale();
}

int ScheduleView::groupCount() const {
    std::set<int> groups;
    for (const GanttRow& r : layout_.rows) groups.insert(r.group);
    return static_cast<int>(groups.size());
}

int ScheduleView::nodeOfDevice(int d) const {
    return cluster_ && d >= 0 && d < cluster_->deviceCount() ? cluster_->nodeOf(d) : 0;
}

int ScheduleView::groupOf(int device) const {
    if (!GanttRowLayout::groupsByStage(roles_)) return nodeOfDevice(device);
    const auto it = roles_.find(device);
    if (it != roles_.end()) return it->second.stage;
    int after_last_stage = 0;  // as GanttRowLayout::build groups devices without a role
    for (const auto& [d, role] : roles_) after_last_stage = std::max(after_last_stage, role.stage + 1);
    return after_last_stage;
}

void ScheduleView::setGroupCollapsed(int group, bool collapsed) {
    if (collapsed) collapsed_groups_.insert(group);
    else collapsed_groups_.erase(group);
    layOut();
    const TimeWindow w = visibleWindow();
    rescale();
    gantt_rect_->axis(QCPAxis::atBottom)->setRange(w.lower_s, w.upper_s);  // rows change, not the time
    plot_->replot();
}

void ScheduleView::setAllGroupsCollapsed(bool collapsed) {
    collapsed_groups_.clear();
    if (collapsed)
        for (const GanttRow& r : layout_.rows) collapsed_groups_.insert(r.group);
    const QSignalBlocker block(collapse_button_);
    collapse_button_->setChecked(collapsed);
    setGroupCollapsed(-1, false);  // lays out again
}

void ScheduleView::layOut() {
    layout_ = GanttRowLayout::build(trace_.devices, [this](int d) { return nodeOfDevice(d); }, 0.6, collapsed_groups_, roles_);
    gantt_->setBlocks(placeBlocks(trace_, layout_));
    // A collapsed group keeps the curve of its fullest device only.
    std::vector<MemoryCurve> shown;
    for (const MemoryCurve& curve : all_curves_) {
        const int group = groupOf(curve.device);
        if (!collapsed_groups_.contains(group)) {
            shown.push_back(curve);
            continue;
        }
        const MemoryCurve* fullest = nullptr;
        for (const MemoryCurve& other : all_curves_)
            if (groupOf(other.device) == group && (!fullest || other.peak_gib > fullest->peak_gib)) fullest = &other;
        if (fullest == &curve) shown.push_back(curve);
    }
    // In the Gantt chart's row order, so that the legend reads as the rows do.
    std::stable_sort(shown.begin(), shown.end(), [this](const MemoryCurve& a, const MemoryCurve& b) {
        return layout_.rowOfDevice(a.device) < layout_.rowOfDevice(b.device);
    });
    auto label = [this](int device) {
        const QString name = rowLabel(device);
        if (!collapsed_groups_.contains(groupOf(device))) return name;
        return (!layout_.by_stage ? tr("n%1 fullest: %2") : tr("S%1 fullest: %2")).arg(groupOf(device)).arg(name);
    };
    gantt_->setSelectedBlock(-1);
    gantt_->setDependencyBlocks({}, {});
    measureSpan(0, 0);
    highlighted_device_ = -1;
    row_highlight_->setVisible(false);
    memory_->setCurves(std::move(shown), label);
    updateRowAxis();
    updateSeparators();
}

void ScheduleView::clear() { setTrace(Trace{}, nullptr); }

void ScheduleView::setMemoryAxisFromZero(bool from_zero) { memory_->setAxisFromZero(from_zero); }

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

void ScheduleView::setSharedEndTime(double end_s) { shared_end_s_ = std::max(0.0, end_s); }

TimeWindow ScheduleView::fullWindow() const {
    const double own = std::max(endTime(), shared_end_s_);
    const double end = own > 0 ? own : 1.0;
    return {0.0, end * kFitMargin};
}

TimeWindow ScheduleView::visibleWindow() const {
    const QCPRange r = gantt_rect_->axis(QCPAxis::atBottom)->range();
    return {r.lower, r.upper};
}

void ScheduleView::zoomAt(double anchor_s, double factor) {
    const TimeWindow full = fullWindow();
    const TimeWindow w = zoomWindow(visibleWindow(), anchor_s, factor, full, full.span() * kMinSpanFraction);
    gantt_rect_->axis(QCPAxis::atBottom)->setRange(w.lower_s, w.upper_s);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ScheduleView::pan(double fraction) {
    const TimeWindow full = fullWindow();
    const TimeWindow w = panWindow(visibleWindow(), fraction, full, full.span() * kMinSpanFraction);
    gantt_rect_->axis(QCPAxis::atBottom)->setRange(w.lower_s, w.upper_s);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ScheduleView::timeAxisLabel() const { return gantt_rect_->axis(QCPAxis::atBottom)->label(); }

void ScheduleView::onTimeRangeChanged(const QCPRange& range) {
    // Mouse-wheel zoom and drags go through here too: never beyond the iteration.
    const TimeWindow full = fullWindow();
    const TimeWindow w = clampWindow({range.lower, range.upper}, full, full.span() * kMinSpanFraction);
    if (w.lower_s != range.lower || w.upper_s != range.upper) {
        gantt_rect_->axis(QCPAxis::atBottom)->setRange(w.lower_s, w.upper_s);
        return;  // called again with the clamped range
    }
    const TimeUnit unit = timeUnitFor(w.span());
    gantt_ticker_->setUnit(unit);
    memory_ticker_->setUnit(unit);
    const QString label = widgets::timeAxisLabel(unit);
    gantt_rect_->axis(QCPAxis::atBottom)->setLabel(label);
    memory_rect_->axis(QCPAxis::atBottom)->setLabel(label);
}

void ScheduleView::keyPressEvent(QKeyEvent* event) {
    const double anchor = last_mouse_.x() >= 0 && gantt_rect_->rect().united(memory_rect_->rect()).contains(last_mouse_.toPoint())
                              ? gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(last_mouse_.x())
                              : (visibleWindow().lower_s + visibleWindow().upper_s) / 2;
    if (event->modifiers() & Qt::ShiftModifier && (event->key() == Qt::Key_W || event->key() == Qt::Key_S)) {
        memory_->scaleValueAxis(event->key() == Qt::Key_W ? kZoomStep : 1.0 / kZoomStep);  // vertical zoom of the curves
        plot_->replot(QCustomPlot::rpQueuedReplot);
        event->accept();
        return;
    }
    switch (event->key()) {
    case Qt::Key_W: zoomAt(anchor, kZoomStep); break;
    case Qt::Key_S: zoomAt(anchor, 1.0 / kZoomStep); break;
    case Qt::Key_A: pan(-kPanStep); break;
    case Qt::Key_D: pan(kPanStep); break;
    case Qt::Key_Home:
    case Qt::Key_0: rescale(); break;
    case Qt::Key_Escape:
        selectBlock(-1);
        measureSpan(0, 0);
        break;
    default: QWidget::keyPressEvent(event); return;
    }
    event->accept();
}

void ScheduleView::selectBlock(int block) {
    selected_ = block >= 0 && block < gantt_->blockCount() ? block : -1;
    gantt_->setSelectedBlock(selected_);
    std::vector<int> waits_on, waited_by;
    if (selected_ >= 0) {
        const EventDependencies deps = dependenciesOf(trace_, gantt_->blocks()[static_cast<size_t>(selected_)].event);
        for (int e : deps.waits_on)
            if (const int b = blockOfEvent(e); b >= 0) waits_on.push_back(b);
        for (int e : deps.waited_by)
            if (const int b = blockOfEvent(e); b >= 0) waited_by.push_back(b);
    }
    gantt_->setDependencyBlocks(std::move(waits_on), std::move(waited_by));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    emit blockSelected(selectedDetails());
}

QString ScheduleView::selectedDetails() const {
    if (selected_ < 0) return {};
    const GanttBlock& b = gantt_->blocks()[static_cast<size_t>(selected_)];
    const TraceEvent& e = trace_.events[static_cast<size_t>(b.event)];
    QStringList lines;
    lines << QStringLiteral("<b>%1</b> on %2").arg(QString::fromStdString(blockLabel(b)), rowLabel(e.device));
    lines << QStringLiteral("instruction: %1").arg(QString::fromLatin1(toString(e.kind)));
    if (e.stage >= 0) lines << QStringLiteral("stage: %1").arg(e.stage);
    if (e.mb >= 0) lines << QStringLiteral("micro-batch: %1").arg(e.mb);
    lines << QStringLiteral("start: %1 · end: %2 · duration: %3")
                 .arg(formatSeconds(e.start_s), formatSeconds(e.end_s), formatSeconds(e.end_s - e.start_s));
    if (e.bytes > 0) lines << QStringLiteral("bytes: %1").arg(formatBytes(e.bytes));
    if (e.peer >= 0) lines << QStringLiteral("peer: %1").arg(rowLabel(e.peer));
    if (const MemoryCurve* c = curveOfDevice(all_curves_, e.device))
        lines << QStringLiteral("memory: %1 at start, %2 at end")
                     .arg(memory_->formatGiB(memoryAt(*c, e.start_s)), memory_->formatGiB(memoryAt(*c, e.end_s)));
    auto names = [this](const std::vector<int>& blocks) {
        QStringList out;
        for (int index : blocks) {
            const GanttBlock& blk = gantt_->blocks()[static_cast<size_t>(index)];
            const TraceEvent& ev = trace_.events[static_cast<size_t>(blk.event)];
            out << QStringLiteral("%1 on %2 (ends %3)").arg(QString::fromStdString(blockLabel(blk)), rowLabel(ev.device), formatSeconds(ev.end_s));
        }
        return out.isEmpty() ? QStringLiteral("nothing") : out.join(QStringLiteral(", "));
    };
    lines << QStringLiteral("<span style='color:%1'>waits on</span>: %2")
                 .arg(GanttPlottable::waitsOnColor().name(), names(gantt_->waitsOnBlocks()));
    lines << QStringLiteral("<span style='color:%1'>waited on by</span>: %2")
                 .arg(GanttPlottable::waitedByColor().name(), names(gantt_->waitedByBlocks()));
    return lines.join(QStringLiteral("<br>"));
}

const std::vector<int>& ScheduleView::waitsOnBlocks() const { return gantt_->waitsOnBlocks(); }
const std::vector<int>& ScheduleView::waitedByBlocks() const { return gantt_->waitedByBlocks(); }

int ScheduleView::blockOfEvent(int event) const {
    const std::vector<GanttBlock>& blocks = gantt_->blocks();
    for (size_t i = 0; i < blocks.size(); ++i)
        if (blocks[i].event == event) return static_cast<int>(i);
    return -1;
}

void ScheduleView::measureSpan(double from_s, double to_s) {
    span_from_s_ = std::min(from_s, to_s);
    span_to_s_ = std::max(from_s, to_s);
    const bool shown = span_to_s_ > span_from_s_;
    span_rect_->setVisible(shown);
    span_label_->setVisible(shown);
    if (shown) {
        span_rect_->topLeft->setCoords(span_from_s_, 0);
        span_rect_->bottomRight->setCoords(span_to_s_, 1);
        span_label_->position->setCoords((span_from_s_ + span_to_s_) / 2, 0.02);
        span_label_->setText(measuredText());
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ScheduleView::measuredText() const {
    return span_to_s_ > span_from_s_ ? formatSeconds(span_to_s_ - span_from_s_) : QString();
}

bool ScheduleView::onTimeAxisStrip(const QPointF& pos) const {
    // The band under the Gantt rows that holds the time axis's ticks and label.
    const QRect inner = gantt_rect_->rect();
    const QRect outer = gantt_rect_->outerRect();
    return pos.x() >= inner.left() && pos.x() <= inner.right() && pos.y() > inner.bottom() && pos.y() <= outer.bottom();
}

void ScheduleView::onMouseDoubleClick(QMouseEvent* event) {
    // On a row's label, left of the rows: open or close its node.
    const QPointF pos = event->position();
    const QRect rows = gantt_rect_->rect();
    if (pos.x() >= rows.left() || pos.y() < rows.top() || pos.y() > rows.bottom() || groupCount() < 2) return;
    const double y = gantt_rect_->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
    for (const GanttRow& r : layout_.rows)
        if (std::abs(r.y - y) <= 0.5) {
            setGroupCollapsed(r.group, !collapsed_groups_.contains(r.group));
            return;
        }
}

void ScheduleView::onMouseRelease(QMouseEvent* event) {
    if (!span_anchor_s_) return;
    const double t = gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(event->position().x());
    measureSpan(*span_anchor_s_, t);
    span_anchor_s_.reset();
    emit hoverTextChanged(measuredText().isEmpty() ? QString() : QStringLiteral("span: %1").arg(measuredText()));
}

void ScheduleView::highlightDevice(int device) {
    highlighted_device_ = device;
    memory_->highlightDevice(device);
    const int row = layout_.rowOfDevice(device);
    row_highlight_->setVisible(row >= 0);
    if (row >= 0) {
        const double y = layout_.rows[static_cast<size_t>(row)].y;
        row_highlight_->topLeft->setCoords(-1e9, y - 0.5);
        row_highlight_->bottomRight->setCoords(1e9, y + 0.5);
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ScheduleView::rowLabel(int device) const {
    if (!device_noun_.isEmpty()) return QStringLiteral("%1 %2").arg(device_noun_).arg(device);
    const bool cpu = cluster_ && device >= 0 && device < cluster_->deviceCount() &&
                     QString::fromStdString(cluster_->nodes[static_cast<size_t>(cluster_->nodeOf(device))].device.type)
                         .startsWith(QLatin1String("cpu"), Qt::CaseInsensitive);
    return QStringLiteral("%1 %2").arg(cpu ? QStringLiteral("CPU") : QStringLiteral("GPU")).arg(device);
}

std::function<QString(int)> ScheduleView::rowLabeller() const {
    return [this](int device) { return rowLabel(device); };
}

void ScheduleView::onMousePress(QMouseEvent* event) {
    setFocus(Qt::MouseFocusReason);
    const QPointF pos = event->position();
    if (onTimeAxisStrip(pos) && event->button() == Qt::LeftButton) {
        span_anchor_s_ = gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
        measureSpan(0, 0);
        return;
    }
    if (!gantt_rect_->rect().contains(pos.toPoint())) return;
    const double t = gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
    const double y = gantt_rect_->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
    selectBlock(gantt_->blockAt(t, y));
}

void ScheduleView::rescale() {
    const TimeWindow full = fullWindow();
    gantt_rect_->axis(QCPAxis::atBottom)->setRange(full.lower_s, full.upper_s);
    onTimeRangeChanged(gantt_rect_->axis(QCPAxis::atBottom)->range());
    gantt_rect_->axis(QCPAxis::atLeft)->setRange(layout_.top() - 0.1, layout_.bottom() + 0.1);
    plot_->replot();
}

void ScheduleView::updateRowAxis() {
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (size_t i = 0; i < layout_.rows.size(); ++i) ticker->addTick(layout_.rows[i].y, rowText(static_cast<int>(i)));
    gantt_rect_->axis(QCPAxis::atLeft)->setTicker(ticker);
}

QString ScheduleView::rowText(int index) const {
    if (index < 0 || index >= static_cast<int>(layout_.rows.size())) return {};
    const GanttRow& r = layout_.rows[static_cast<size_t>(index)];
    const bool multi_node = cluster_ && cluster_->nodes.size() > 1;
    if (r.device_count > 1)
        return (layout_.by_stage ? tr("S%1 · %2 devices ▸") : tr("n%1 · %2 devices ▸")).arg(r.group).arg(r.device_count);
    if (!r.role) return cluster_ ? QStringLiteral("n%1 · %2").arg(r.node).arg(rowLabel(r.device)) : rowLabel(r.device);
    const QString device = multi_node ? QStringLiteral("n%1 %2").arg(r.node).arg(rowLabel(r.device)) : rowLabel(r.device);
    return QStringLiteral("%1 · %2").arg(QString::fromStdString(roleLabel(*r.role, show_replica_, show_rank_)), device);
}

void ScheduleView::updateSeparators() {
    for (QCPItemStraightLine* line : separators_) plot_->removeItem(line);
    separators_.clear();
    QCPAxis* x = gantt_rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = gantt_rect_->axis(QCPAxis::atLeft);
    auto add = [&](double at, const QPen& pen) {
        auto* line = new QCPItemStraightLine(plot_);
        line->setClipAxisRect(gantt_rect_);
        line->point1->setAxes(x, y);
        line->point2->setAxes(x, y);
        line->point1->setCoords(0, at);
        line->point2->setCoords(1, at);
        line->setPen(pen);
        separators_.push_back(line);
    };
    // Between stages a solid line (the grouping that matters), between nodes a dashed one.
    const QPen node_pen(QColor(0x606060), 1.2, Qt::DashLine);
    for (double sep : layout_.group_separators) add(sep, layout_.by_stage ? QPen(QColor(0x505050), 1.5) : node_pen);
    for (double sep : layout_.node_boundaries) add(sep, node_pen);
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
            const auto role = roles_.find(e.device);
            const QString where = role == roles_.end() ? rowLabel(e.device)
                                                       : QStringLiteral("%1 · %2").arg(QString::fromStdString(roleLabel(role->second, show_replica_, show_rank_)), rowLabel(e.device));
            text += QStringLiteral("\n%1: ").arg(where) + eventText(e);
            // By device, not by row: Gantt rows are grouped by node, curves follow the trace.
            if (const MemoryCurve* curve = curveOfDevice(all_curves_, e.device))
                text += QStringLiteral("\nmemory %1 of %2 GiB")
                            .arg(memory_->formatGiB(memoryAt(*curve, t)))
                            .arg(curve->capacity_gib, 0, 'f', 1);
        }
    } else if (memory_rect_->rect().contains(pos.toPoint())) {
        for (const MemoryCurve& c : memory_->curves())
            text += QStringLiteral("\n%1: %2").arg(rowLabel(c.device), memory_->formatGiB(memoryAt(c, t)));
    } else {
        return {};
    }
    return text;
}

void ScheduleView::onMouseMove(QMouseEvent* event) {
    last_mouse_ = event->position();
    if (span_anchor_s_ && (event->buttons() & Qt::LeftButton)) {
        measureSpan(*span_anchor_s_, gantt_rect_->axis(QCPAxis::atBottom)->pixelToCoord(event->position().x()));
        emit hoverTextChanged(QStringLiteral("span: %1").arg(measuredText()));
        return;
    }
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
