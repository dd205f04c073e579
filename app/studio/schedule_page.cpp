#include "app/studio/schedule_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/studio/message_label.h"
#include "widgets/common/units.h"
#include "widgets/gantt/schedule_view.h"

namespace hippie::studio {

namespace {
constexpr int kMaxMicroBatches = 1024;
constexpr int kDetailsWidth = 230;
QString kNoSelection() {
    return QObject::tr("<i>Click a block for its details and its dependencies.</i><br><br>W/S zoom at the cursor, A/D pan, Home or 0 fits; "
                       "Shift+W/S zooms memory. Drag along the time axis to measure a span. Click a device in the memory legend "
                       "to highlight its curve and row. Double-click a row label (or use Collapse nodes or Collapse stages) to fold its node or stage into one row.");
}
}  // namespace

SchedulePage::SchedulePage(QWidget* parent)
    : QWidget(parent),
      schedule_(new QComboBox(this)),
      micro_batches_(new QSpinBox(this)),
      summary_(new MessageLabel(this)),
      view_(new widgets::ScheduleView(this)),
      details_(new QLabel(this)) {
    for (ScheduleKind k : allScheduleKinds()) schedule_->addItem(QString::fromLatin1(toString(k)), static_cast<int>(k));
    micro_batches_->setRange(1, kMaxMicroBatches);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Schedule"), this));
    bar->addWidget(schedule_);
    bar->addWidget(new QLabel(tr("Micro-batches"), this));
    bar->addWidget(micro_batches_);
    bar->addWidget(summary_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(bar);
    auto* body = new QHBoxLayout;
    body->addWidget(view_, 1);
    details_->setTextFormat(Qt::RichText);
    details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    details_->setWordWrap(true);
    details_->setFixedWidth(kDetailsWidth);
    details_->setStyleSheet(QStringLiteral("background: palette(base); border: 1px solid palette(mid); padding: 6px;"));
    details_->setText(kNoSelection());
    body->addWidget(details_);
    layout->addLayout(body, 1);
    connect(view_, &widgets::ScheduleView::blockSelected, this,
            [this](const QString& details) { details_->setText(details.isEmpty() ? kNoSelection() : details); });
    connect(schedule_, &QComboBox::currentIndexChanged, this, &SchedulePage::emitOverrides);
    connect(micro_batches_, &QSpinBox::valueChanged, this, &SchedulePage::emitOverrides);
    setEnabled(false);
}

void SchedulePage::setPlan(const Plan& plan) {
    const QSignalBlocker b1(schedule_);
    const QSignalBlocker b2(micro_batches_);
    schedule_->setCurrentIndex(schedule_->findData(static_cast<int>(plan.schedule)));
    micro_batches_->setValue(plan.micro_batches);
    const bool pipeline = !plan.isPlacement();
    schedule_->setEnabled(pipeline);
    micro_batches_->setEnabled(pipeline);
    setEnabled(true);
}

void SchedulePage::showTrace(const Plan& plan, const Trace& trace, const Cluster& cluster) {
    const TraceMetrics& m = trace.metrics;
    const QString text = tr("%1 · %2 · iteration %3 · %4 samples/s · bubble %5% · peak %6%7")
                             .arg(QString::fromStdString(plan.planner))
                             .arg(plan.isPlacement() ? tr("placement")
                                                     : QStringLiteral("pp %1 × dp %2").arg(plan.pipelineDepth()).arg(QString::fromStdString(plan.dpText())) +
                                                           (plan.tp > 1 ? QStringLiteral(" × tp %1").arg(QString::fromStdString(plan.tpText())) : QString()) +
                                                           (plan.sequence_parallel ? tr(" · sequence parallel") : QString()) +
                                                           (plan.zero_stage > 0 ? tr(" · ZeRO-%1").arg(plan.zero_stage) : QString()))
                             .arg(widgets::formatSeconds(m.iteration_time_s))
                             .arg(m.throughput_samples_per_s, 0, 'f', 1)
                             .arg(m.bubble_fraction * 100, 0, 'f', 1)
                             .arg(widgets::formatBytes(m.max_peak_memory_bytes))
                             .arg(m.fits_memory ? QString() : tr(" · does NOT fit in memory"));
    if (m.fits_memory)
        summary_->showInfo(text);
    else
        summary_->showError(text);
    view_->setTrace(trace, &cluster, &plan);
    details_->setText(kNoSelection());
}

void SchedulePage::showError(const QString& message) {
    // The chart of the previous settings would look like the answer to these: clear it.
    view_->clear();
    details_->setText(kNoSelection());
    summary_->showError(tr("%1 — nothing is drawn for these settings; change the schedule or micro-batches.").arg(message));
}

void SchedulePage::clear() {
    view_->clear();
    summary_->showInfo(tr("Select a plan in the comparison to see its schedule."));
    setEnabled(false);
}

void SchedulePage::emitOverrides() {
    emit overridesChanged(static_cast<ScheduleKind>(schedule_->currentData().toInt()), micro_batches_->value());
}

QString SchedulePage::summaryText() const { return summary_->text(); }

}  // namespace hippie::studio
