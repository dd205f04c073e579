#include "app/studio/dispatch/slurm_cluster_dialog.h"

#include <QDialogButtonBox>
#include <QFont>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace hippie::studio {

SlurmClusterDialog::SlurmClusterDialog(QWidget* parent, const dispatch::SlurmTarget& initial)
    : QDialog(parent), login_(new QLineEdit(initial.login_host)), partition_(new QLineEdit(initial.partition)),
      account_(new QLineEdit(initial.account)), time_(new QLineEdit(initial.time_limit)),
      extra_(new QLineEdit(initial.extra_sbatch.join(QLatin1Char(' ')))), dir_(new QLineEdit(initial.job_dir_root)),
      engine_(new QLineEdit(initial.engine)) {
    setWindowTitle(tr("Add Slurm cluster"));
    login_->setPlaceholderText(tr("empty: sbatch runs on this machine"));
    login_->setToolTip(tr("A login host of the cluster, as you reach it with ssh (your ~/.ssh/config and keys; no password is asked)"));
    partition_->setPlaceholderText(tr("the cluster's default"));
    account_->setPlaceholderText(tr("the cluster's default"));
    time_->setPlaceholderText(tr("HH:MM:SS, empty: the partition's default"));
    extra_->setPlaceholderText(tr("e.g. --qos=high --constraint=a100"));
    dir_->setPlaceholderText(tr("empty: the studio's work directory here, ~/hippie-runs on a login host"));
    dir_->setToolTip(tr("A directory the login host and the compute nodes share: each run gets a sub-directory with its "
                        "plan, its batch script and each rank's output"));
    engine_->setToolTip(tr("hippie-engine as the compute nodes find it: a shared path, or the name on their PATH"));
    auto* form = new QFormLayout;
    form->addRow(tr("Login host (ssh):"), login_);
    form->addRow(tr("Partition:"), partition_);
    form->addRow(tr("Account:"), account_);
    form->addRow(tr("Time limit:"), time_);
    form->addRow(tr("More sbatch options:"), extra_);
    form->addRow(tr("Shared job directory:"), dir_);
    form->addRow(tr("hippie-engine on the nodes:"), engine_);
    auto* note = new QLabel(tr("Runs are submitted with sbatch and followed with squeue and sacct; each batch script is "
                               "shown before it is submitted. Nothing is installed on the cluster."));
    note->setWordWrap(true);
    auto* problem = new QLabel;
    problem->setStyleSheet(QStringLiteral("color: #b02020"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Add"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(problem);
    layout->addWidget(buttons);
    const auto check = [this, problem, buttons] {
        problem->setText(this->problem());
        buttons->button(QDialogButtonBox::Ok)->setEnabled(this->problem().isEmpty());
    };
    for (QLineEdit* e : {login_, partition_, account_, time_, extra_, dir_, engine_}) connect(e, &QLineEdit::textChanged, this, check);
    check();
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

dispatch::SlurmTarget SlurmClusterDialog::target() const {
    dispatch::SlurmTarget t;
    t.login_host = login_->text().trimmed();
    t.partition = partition_->text().trimmed();
    t.account = account_->text().trimmed();
    t.time_limit = time_->text().trimmed();
    t.extra_sbatch = extra_->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    t.job_dir_root = dir_->text().trimmed();
    if (!engine_->text().trimmed().isEmpty()) t.engine = engine_->text().trimmed();
    return t;
}

QString SlurmClusterDialog::problem() const {
    static const QRegularExpression time_re(QStringLiteral("^(\\d+-)?\\d{1,2}(:\\d{2}){0,2}$"));
    if (login_->text().trimmed().contains(QLatin1Char(' '))) return tr("The login host is one name, without spaces.");
    if (!time_->text().trimmed().isEmpty() && !time_re.match(time_->text().trimmed()).hasMatch())
        return tr("The time limit is written as Slurm takes it: MM, HH:MM:SS or D-HH:MM:SS.");
    for (const QString& o : extra_->text().split(QLatin1Char(' '), Qt::SkipEmptyParts))
        if (!o.startsWith(QLatin1Char('-'))) return tr("'%1' is not an sbatch option (they start with -).").arg(o);
    const QString engine = engine_->text().trimmed();
    if (engine.isEmpty()) return tr("Say where the nodes find hippie-engine.");
    if (!login_->text().trimmed().isEmpty() && engine.contains(QLatin1Char('/')) && !engine.startsWith(QLatin1Char('/')))
        return tr("hippie-engine on the nodes: an absolute path, or a name on their PATH (tasks start in the job's directory).");
    return {};
}

bool confirmSlurmScript(QWidget* parent, const QString& target_label, const QString& job_dir, const QString& script) {
    QDialog d(parent);
    d.setWindowTitle(QObject::tr("Submit to %1").arg(target_label));
    auto* text = new QPlainTextEdit(script);
    text->setReadOnly(true);
    text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    text->setObjectName(QStringLiteral("slurm-script"));
    text->setMinimumSize(620, 320);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(QObject::tr("Submit"));
    auto* layout = new QVBoxLayout(&d);
    layout->addWidget(new QLabel(QObject::tr("This batch script goes to %1/job.sbatch and is submitted with sbatch; it is kept "
                                             "with the run.").arg(job_dir)));
    layout->addWidget(text, 1);
    layout->addWidget(buttons);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
    return d.exec() == QDialog::Accepted;
}

}  // namespace hippie::studio
