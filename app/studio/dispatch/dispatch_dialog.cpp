#include "app/studio/dispatch/dispatch_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/dispatch/rank_split.h"
#include "app/studio/dispatch/workers_panel.h"
#include "planners/common/error.h"

namespace hippie::studio {

namespace {
constexpr int kDefaultSteps = 5;
constexpr int kMaxSteps = 100000;
}  // namespace

DispatchDialog::DispatchDialog(const Plan& plan, const WorkersPanel* workers, QWidget* parent)
    : QDialog(parent), plan_(plan), workers_(workers), list_(new QListWidget), steps_(new QSpinBox), seed_(new QSpinBox),
      split_(new QLabel) {
    setWindowTitle(tr("Run on workers"));
    auto* what = new QLabel(tr("<b>%1</b> plan of <b>%2</b>: %3 ranks (pp %4 × dp %5), %6 schedule, %7 micro-batches")
                                .arg(QString::fromStdString(plan.planner),
                                     QString::fromStdString(plan.model.zoo.empty() ? plan.model.file : plan.model.zoo))
                                .arg(plan.deviceCount())
                                .arg(plan.pipelineDepth())
                                .arg(plan.dp)
                                .arg(QString::fromLatin1(toString(plan.schedule)))
                                .arg(plan.micro_batches));
    what->setWordWrap(true);
    for (int i = 0; i < workers->count(); ++i) {
        auto* it = new QListWidgetItem(QStringLiteral("%1 — %2").arg(workers->label(i), workers->stateText(i)));
        it->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
        it->setCheckState(i == 0 ? Qt::Checked : Qt::Unchecked);
        it->setData(Qt::UserRole, i);
        list_->addItem(it);
    }
    steps_->setRange(1, kMaxSteps);
    steps_->setValue(kDefaultSteps);
    seed_->setRange(0, std::numeric_limits<int>::max());
    split_->setWordWrap(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Steps"), steps_);
    form->addRow(tr("Seed"), seed_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(what);
    layout->addWidget(new QLabel(tr("Workers (rank 0 runs on the first ticked):")));
    layout->addWidget(list_);
    layout->addLayout(form);
    layout->addWidget(split_);
    layout->addWidget(buttons);
    connect(list_, &QListWidget::itemChanged, this, [this, buttons] {
        updateSplit();
        buttons->button(QDialogButtonBox::Ok)->setEnabled(!chosenWorkers().empty());
    });
    updateSplit();
}

std::vector<int> DispatchDialog::chosenWorkers() const {
    std::vector<int> rows;
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->checkState() == Qt::Checked) rows.push_back(list_->item(i)->data(Qt::UserRole).toInt());
    return rows;
}

int DispatchDialog::steps() const { return steps_->value(); }
unsigned long long DispatchDialog::seed() const { return static_cast<unsigned long long>(seed_->value()); }

void DispatchDialog::updateSplit() {
    const std::vector<int> rows = chosenWorkers();
    std::vector<int> capacities;
    for (int r : rows) capacities.push_back(workers_->target(r).capacity);
    try {
        const std::vector<dispatch::RankShare> shares = dispatch::splitRanks(plan_.deviceCount(), capacities);
        QStringList parts;
        for (size_t i = 0; i < rows.size(); ++i)
            parts << tr("%1: ranks %2–%3").arg(workers_->label(rows[i])).arg(shares[i].first_rank).arg(shares[i].first_rank + shares[i].rank_count - 1);
        split_->setText(parts.join(QStringLiteral("; ")));
    } catch (const Error& e) {
        split_->setText(QString::fromUtf8(e.what()));
    }
}

}  // namespace hippie::studio
