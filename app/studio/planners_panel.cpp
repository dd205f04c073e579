#include "app/studio/planners_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>

#include "app/studio/planner_run_list.h"
#include "planners/algorithms/exhaustive_planner.h"
#include "planners/algorithms/registry.h"

namespace hippie::studio {

namespace {
constexpr int kMaxGlobalBatch = 1 << 20;
constexpr double kMaxBudgetSeconds = 3600;
constexpr const char* kDefaultFamily = "hybrid";
constexpr int kWasCheckedRole = Qt::UserRole + 1;  // ticked before the planner stopped applying
constexpr Objective kObjectives[] = {Objective::MemoryEfficiency, Objective::Throughput,
                                     Objective::MemoryEfficiencyWithThroughputFloor};
}  // namespace

PlannersPanel::PlannersPanel(QWidget* parent)
    : QGroupBox(tr("Planners"), parent),
      list_(new QListWidget(this)),
      objective_(new QComboBox(this)),
      budget_(new QDoubleSpinBox(this)),
      global_batch_(new QSpinBox(this)),
      run_(new QPushButton(tr("Run"), this)),
      cancel_(new QPushButton(tr("Cancel all"), this)),
      runs_(new PlannerRunList(this)) {
    for (const PlannerInfo& p : plannerRegistry()) {
        auto* item = new QListWidgetItem(QStringLiteral("%1  (%2)").arg(QString::fromStdString(p.name), QString::fromStdString(p.family)),
                                         list_);
        item->setData(Qt::UserRole, QString::fromStdString(p.name));
        item->setToolTip(QString::fromStdString(p.description));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(p.family == kDefaultFamily ? Qt::Checked : Qt::Unchecked);
    }
    if (list_->count() == 0) {
        auto* item = new QListWidgetItem(tr("(no planners registered in this build)"), list_);
        item->setFlags(Qt::NoItemFlags);
    }
    list_->setMinimumHeight(120);
    objective_->addItem(tr("Memory efficiency"));
    objective_->addItem(tr("Throughput"));
    objective_->addItem(tr("ME with throughput floor"));
    budget_->setRange(0.1, kMaxBudgetSeconds);
    budget_->setValue(10);
    budget_->setSuffix(tr(" s"));
    global_batch_->setRange(1, kMaxGlobalBatch);
    global_batch_->setValue(512);
    cancel_->setEnabled(false);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
    buttons->addWidget(cancel_);
    auto* form = new QFormLayout(this);
    form->addRow(list_);
    form->addRow(tr("Objective"), objective_);
    form->addRow(tr("Time budget"), budget_);
    form->addRow(tr("Global batch"), global_batch_);
    form->addRow(buttons);
    form->addRow(runs_);
    connect(run_, &QPushButton::clicked, this, &PlannersPanel::runRequested);
    connect(cancel_, &QPushButton::clicked, this, &PlannersPanel::cancelRequested);
}

QStringList PlannersPanel::checkedPlanners() const {
    QStringList names;
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->checkState() == Qt::Checked) names << list_->item(i)->data(Qt::UserRole).toString();
    return names;
}

void PlannersPanel::setCheckedPlanners(const QStringList& names) {
    for (int i = 0; i < list_->count(); ++i) {
        QListWidgetItem* item = list_->item(i);
        if (!(item->flags() & Qt::ItemIsUserCheckable)) continue;
        const bool wanted = names.contains(item->data(Qt::UserRole).toString());
        if (item->flags() & Qt::ItemIsEnabled)
            item->setCheckState(wanted ? Qt::Checked : Qt::Unchecked);
        else
            item->setData(kWasCheckedRole, wanted);  // ticked again once the planner applies
    }
}

QStringList PlannersPanel::defaultPlanners() {
    QStringList names;
    for (const PlannerInfo& p : plannerRegistry())
        if (p.family == kDefaultFamily) names << QString::fromStdString(p.name);
    return names;
}

Objective PlannersPanel::objective() const { return kObjectives[std::max(0, objective_->currentIndex())]; }

void PlannersPanel::setObjective(Objective objective) {
    for (int i = 0; i < 3; ++i)
        if (kObjectives[i] == objective) objective_->setCurrentIndex(i);
}

double PlannersPanel::timeBudgetSeconds() const { return budget_->value(); }
void PlannersPanel::setTimeBudgetSeconds(double seconds) { budget_->setValue(seconds); }
int PlannersPanel::globalBatch() const { return global_batch_->value(); }
void PlannersPanel::setGlobalBatch(int samples) { global_batch_->setValue(samples); }

void PlannersPanel::setRunning(bool running) {
    run_->setEnabled(!running);
    cancel_->setEnabled(running);
}

void PlannersPanel::setProblemSize(int layers, int devices) {
    for (int i = 0; i < list_->count(); ++i) {
        QListWidgetItem* item = list_->item(i);
        if (item->data(Qt::UserRole).toString() != QLatin1String(ExhaustivePlanner::kName)) continue;
        const bool fits = layers <= ExhaustivePlanner::kMaxLayers && devices <= ExhaustivePlanner::kMaxDevices;
        const bool applicable = item->flags() & Qt::ItemIsEnabled;
        if (!fits && applicable) {
            item->setData(kWasCheckedRole, item->checkState() == Qt::Checked);
            item->setCheckState(Qt::Unchecked);
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
            item->setToolTip(tr("Exhaustive search takes at most %1 layers and %2 devices; this problem has %3 layers and %4 "
                                "devices.")
                                 .arg(ExhaustivePlanner::kMaxLayers)
                                 .arg(ExhaustivePlanner::kMaxDevices)
                                 .arg(layers)
                                 .arg(devices));
        } else if (fits && !applicable) {
            item->setFlags(item->flags() | Qt::ItemIsEnabled);
            if (item->data(kWasCheckedRole).toBool()) item->setCheckState(Qt::Checked);
            item->setToolTip(QString::fromLatin1(ExhaustivePlanner::kDescription));
        }
    }
}

bool PlannersPanel::isApplicable(const QString& planner) const {
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->data(Qt::UserRole).toString() == planner) return list_->item(i)->flags() & Qt::ItemIsEnabled;
    return false;
}

}  // namespace hippie::studio
