#pragma once
// Which planners to run and how: every planner the registry lists, ticked or not; the
// objective, the time budget and the global batch; Run and Cancel all; under them one row per
// running planner with its progress bar and its own Cancel button.
#include <QGroupBox>
#include <QStringList>

#include "planners/algorithms/planner.h"

class QComboBox;
class QDoubleSpinBox;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace hippie::studio {

class PlannerRunList;

class PlannersPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit PlannersPanel(QWidget* parent = nullptr);

    QStringList checkedPlanners() const;
    void setCheckedPlanners(const QStringList& names);  // unknown names are ignored
    static QStringList defaultPlanners();               // the registry's hybrid planners

    Objective objective() const;
    void setObjective(Objective objective);
    double timeBudgetSeconds() const;
    void setTimeBudgetSeconds(double seconds);
    int globalBatch() const;
    void setGlobalBatch(int samples);
    void setRunning(bool running);
    // Planners that do not take a problem this size (exhaustive beyond its limits) are unticked
    // and greyed, with the reason as tooltip; ticked again (if they were) once it fits.
    void setProblemSize(int layers, int devices);
    bool isApplicable(const QString& planner) const;
    PlannerRunList* runs() const { return runs_; }

signals:
    void runRequested();
    void cancelRequested();

private:
    QListWidget* list_;
    QComboBox* objective_;
    QDoubleSpinBox* budget_;
    QSpinBox* global_batch_;
    QPushButton* run_;
    QPushButton* cancel_;
    PlannerRunList* runs_;
};

}  // namespace hippie::studio
