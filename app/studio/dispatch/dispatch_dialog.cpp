#include "app/studio/dispatch/dispatch_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/studio/dispatch/workers_panel.h"

namespace hippie::studio {

namespace {
constexpr int kDefaultSteps = 5;
constexpr int kMaxSteps = 100000;
}  // namespace

DispatchDialog::DispatchDialog(const Plan& plan, const std::optional<Graph>& graph, const WorkersPanel* workers, QWidget* parent)
    : QDialog(parent), plan_(plan), graph_(graph), engine_(askEngine(workers->engine())),
      share_(new QCheckBox(tr("Let ranks share devices"))), run_(nullptr), workers_(workers), list_(new QListWidget),
      steps_(new QSpinBox), seed_(new QSpinBox), checkpoint_every_(new QSpinBox), data_(new QLineEdit),
      split_(new QLabel) {
    setWindowTitle(tr("Run on workers"));
    auto* what = new QLabel(tr("<b>%1</b> plan of <b>%2</b>: %3 ranks (pp %4 × dp %5), %6 schedule, %7 micro-batches")
                                .arg(QString::fromStdString(plan.planner),
                                     QString::fromStdString(plan.model.zoo.empty() ? plan.model.file : plan.model.zoo))
                                .arg(plan.deviceCount())
                                .arg(plan.pipelineDepth())
                                .arg(QString::fromStdString(plan.dpText()))
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
    checkpoint_every_->setRange(0, kMaxSteps);
    checkpoint_every_->setSpecialValueText(tr("no checkpoints"));
    checkpoint_every_->setSuffix(tr(" steps"));
    checkpoint_every_->setToolTip(tr("Every rank writes a checkpoint this often (and after the last step), so that a failed or "
                                     "cancelled run can be resumed from it (local and Slurm workers; agents cannot resume)"));
    split_->setWordWrap(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Steps"), steps_);
    form->addRow(tr("Seed"), seed_);
    form->addRow(tr("Checkpoint every"), checkpoint_every_);
    data_->setPlaceholderText(tr("synthetic (seeded)"));
    data_->setClearButtonEnabled(true);
    data_->setToolTip(tr("A file every rank trains on, as the workers see it: token ids (*.bin, uint16) for GPT and BERT "
                         "models, or a tensor file (inputs, targets) for the others; empty: seeded synthetic data"));
    auto* browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Training data"), data_->text(),
                                                       tr("Token ids (*.bin);;Tensor files (*.pt);;All files (*)"));
        if (!f.isEmpty()) data_->setText(f);
    });
    auto* data_row = new QHBoxLayout;
    data_row->addWidget(data_, 1);
    data_row->addWidget(browse);
    form->addRow(tr("Training data"), data_row);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    run_ = buttons->button(QDialogButtonBox::Ok);
    run_->setText(tr("Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(what);
    layout->addWidget(new QLabel(tr("Workers (rank 0 runs on the first ticked):")));
    layout->addWidget(list_);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("<b>What will happen</b>")));
    layout->addWidget(split_);
    layout->addWidget(share_);
    layout->addWidget(buttons);
    split_->setTextFormat(Qt::RichText);
    split_->setMinimumWidth(520);
    connect(list_, &QListWidget::itemChanged, this, &DispatchDialog::updateSplit);
    connect(share_, &QCheckBox::toggled, this, &DispatchDialog::updateSplit);
    connect(steps_, qOverload<int>(&QSpinBox::valueChanged), this, &DispatchDialog::updateSplit);
    connect(data_, &QLineEdit::textChanged, this, &DispatchDialog::updateSplit);
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
int DispatchDialog::checkpointEvery() const { return checkpoint_every_->value(); }
QString DispatchDialog::dataFile() const { return data_->text().trimmed(); }
void DispatchDialog::setDataFile(const QString& path) { data_->setText(path); }

void DispatchDialog::setChecked(int row, bool checked) { list_->item(row)->setCheckState(checked ? Qt::Checked : Qt::Unchecked); }
void DispatchDialog::setAcceptSharing(bool accept) { share_->setChecked(accept); }
bool DispatchDialog::canRun() const { return run_->isEnabled(); }

QString DispatchDialog::whatWillHappen() const {
    QStringList lines;
    for (const QString& b : check_.blockers) lines << tr("Cannot run: %1").arg(b);
    for (const QString& w : check_.warnings) lines << tr("Note: %1").arg(w);
    lines << check_.steps;
    return lines.join(QLatin1Char('\n'));
}

void DispatchDialog::updateSplit() {
    std::vector<DispatchWorker> chosen;
    for (int r : chosenWorkers()) chosen.push_back({workers_->label(r), workers_->isLocal(r), workers_->target(r).capacity});
    check_ = checkDispatch(plan_, graph_, chosen, engine_, steps(), dataFile());
    QString html;
    for (const QString& b : check_.blockers)
        html += QStringLiteral("<p style='color:#b00020'><b>%1</b> %2</p>").arg(tr("Cannot run:"), b.toHtmlEscaped());
    for (const QString& w : check_.warnings) html += QStringLiteral("<p style='color:#8a5a00'>%1</p>").arg(w.toHtmlEscaped());
    for (const QString& line : check_.steps) html += line.toHtmlEscaped() + QStringLiteral("<br>");
    split_->setText(html);
    share_->setVisible(check_.shares_devices);
    run_->setEnabled(check_.canRun(share_->isChecked()));
}

}  // namespace hippie::studio
