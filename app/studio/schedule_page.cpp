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
}

SchedulePage::SchedulePage(QWidget* parent)
    : QWidget(parent),
      schedule_(new QComboBox(this)),
      micro_batches_(new QSpinBox(this)),
      summary_(new MessageLabel(this)),
      view_(new widgets::ScheduleView(this)) {
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
    layout->addWidget(view_, 1);
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
                                                     : QStringLiteral("pp %1 × dp %2").arg(plan.pipelineDepth()).arg(plan.dp))
                             .arg(widgets::formatSeconds(m.iteration_time_s))
                             .arg(m.throughput_samples_per_s, 0, 'f', 1)
                             .arg(m.bubble_fraction * 100, 0, 'f', 1)
                             .arg(widgets::formatBytes(m.max_peak_memory_bytes))
                             .arg(m.fits_memory ? QString() : tr(" · does NOT fit in memory"));
    if (m.fits_memory)
        summary_->showInfo(text);
    else
        summary_->showError(text);
    view_->setTrace(trace, &cluster);
}

void SchedulePage::showError(const QString& message) { summary_->showError(message); }

void SchedulePage::clear() {
    view_->clear();
    summary_->showInfo(tr("Select a plan in the comparison to see its schedule."));
    setEnabled(false);
}

void SchedulePage::emitOverrides() {
    emit overridesChanged(static_cast<ScheduleKind>(schedule_->currentData().toInt()), micro_batches_->value());
}

}  // namespace hippie::studio
