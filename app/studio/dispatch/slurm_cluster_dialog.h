#pragma once
// Workers ▸ Add Slurm cluster…: where sbatch runs (here, or a login host reached with the user's
// own ssh configuration and keys), the partition, account, time limit and any other sbatch
// options, the shared directory the jobs' files go to and hippie-engine's path on the nodes.
// Nothing is installed on the cluster: its nodes need only hippie-engine on a shared path.
#include <QDialog>

#include "app/dispatch/slurm_script.h"

class QLineEdit;

namespace hippie::studio {

class SlurmClusterDialog : public QDialog {
    Q_OBJECT
public:
    explicit SlurmClusterDialog(QWidget* parent = nullptr, const dispatch::SlurmTarget& initial = {});
    dispatch::SlurmTarget target() const;
    QString problem() const;  // what is wrong with the form, empty when it can be used

private:
    QLineEdit* login_;
    QLineEdit* partition_;
    QLineEdit* account_;
    QLineEdit* time_;
    QLineEdit* extra_;
    QLineEdit* dir_;
    QLineEdit* engine_;
};

// The script a run will submit, shown before it is: true when the user submits it.
bool confirmSlurmScript(QWidget* parent, const QString& target_label, const QString& job_dir, const QString& script);

}  // namespace hippie::studio
