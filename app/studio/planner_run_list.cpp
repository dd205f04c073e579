#include "app/studio/planner_run_list.h"

#include <algorithm>
#include <cmath>

#include <QCoreApplication>
#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QScrollArea>
#include <QTimer>
#include <QToolButton>

namespace hippie::studio {

namespace {
constexpr int kBarSteps = 1000;  // progress bars count in tenths of a percent
}  // namespace

PlannerRunList::PlannerRunList(QWidget* parent) : QWidget(parent), grid_(new QGridLayout(this)) {
    grid_->setContentsMargins(0, 0, 0, 0);
    grid_->setHorizontalSpacing(6);
    grid_->setVerticalSpacing(2);
    grid_->setColumnStretch(1, 1);
}

void PlannerRunList::clear() {
    for (auto& [name, row] : rows_) {
        delete row.name;
        delete row.bar;
        delete row.cancel;
    }
    rows_.clear();
}

void PlannerRunList::addRunning(const QString& planner) {
    if (rows_.count(planner)) {
        Row& row = rows_[planner];
        row.bar->setValue(0);
        row.bar->setFormat(QStringLiteral("%p%"));
        row.cancel->setEnabled(true);
        return;
    }
    Row row;
    row.name = new QLabel(planner, this);
    row.bar = new QProgressBar(this);
    row.bar->setRange(0, kBarSteps);
    row.bar->setValue(0);
    row.bar->setFormat(QStringLiteral("%p%"));
    row.bar->setAccessibleName(tr("%1 progress").arg(planner));
    row.cancel = new QToolButton(this);
    row.cancel->setText(tr("Cancel"));
    row.cancel->setToolTip(tr("Stop %1; the other planners go on").arg(planner));
    connect(row.cancel, &QToolButton::clicked, this, [this, planner] { emit cancelRequested(planner); });
    const int r = grid_->rowCount();
    grid_->addWidget(row.name, r, 0);
    grid_->addWidget(row.bar, r, 1);
    grid_->addWidget(row.cancel, r, 2);
    rows_[planner] = row;
    // In a scrolled setup panel, bring the rows into view once the layout has placed them.
    QTimer::singleShot(0, this, [this] {
        for (QWidget* w = parentWidget(); w; w = w->parentWidget())
            if (auto* scroll = qobject_cast<QScrollArea*>(w)) {
                QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);  // place the new rows first
                scroll->ensureWidgetVisible(this, 0, 0);
                break;
            }
    });
}

void PlannerRunList::setProgress(const QString& planner, double fraction, const QString& message) {
    const auto it = rows_.find(planner);
    if (it == rows_.end() || !it->second.cancel->isEnabled()) return;
    it->second.bar->setValue(static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * kBarSteps)));
    it->second.bar->setToolTip(message);
}

void PlannerRunList::finishRow(Row& row, const QString& text, const QString& tooltip) {
    row.bar->setValue(kBarSteps);
    row.bar->setFormat(text);
    row.bar->setToolTip(tooltip);
    row.cancel->setEnabled(false);
}

void PlannerRunList::setFinished(const QString& planner, double planning_time_s, bool feasible) {
    const auto it = rows_.find(planner);
    if (it == rows_.end()) return;
    const QString time = QString::number(planning_time_s, 'f', planning_time_s < 10 ? 2 : 1);
    finishRow(it->second, feasible ? tr("done · %1 s").arg(time) : tr("no feasible plan · %1 s").arg(time), {});
}

void PlannerRunList::setSkipped(const QString& planner, const QString& why) {
    const auto it = rows_.find(planner);
    if (it == rows_.end()) return;
    finishRow(it->second, tr("skipped"), why);
}

void PlannerRunList::setFailed(const QString& planner, const QString& message, bool cancelled) {
    const auto it = rows_.find(planner);
    if (it == rows_.end()) return;
    if (cancelled) {
        const int reached = it->second.bar->value();
        finishRow(it->second, tr("cancelled"), message);
        it->second.bar->setValue(reached);  // where it stopped
    } else {
        finishRow(it->second, tr("failed"), message);
    }
}

bool PlannerRunList::isRunning(const QString& planner) const {
    const auto it = rows_.find(planner);
    return it != rows_.end() && it->second.cancel->isEnabled();
}

QProgressBar* PlannerRunList::progressBar(const QString& planner) const {
    const auto it = rows_.find(planner);
    return it == rows_.end() ? nullptr : it->second.bar;
}

QToolButton* PlannerRunList::cancelButton(const QString& planner) const {
    const auto it = rows_.find(planner);
    return it == rows_.end() ? nullptr : it->second.cancel;
}

}  // namespace hippie::studio
