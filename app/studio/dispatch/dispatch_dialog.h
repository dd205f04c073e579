#pragma once
// "Run on workers…": which workers take part (rank 0 on the first ticked), steps and seed, and
// how the plan's ranks will be split among them.
#include <QDialog>

#include <vector>

#include "planners/schedule/plan.h"

class QLabel;
class QListWidget;
class QSpinBox;

namespace hippie::studio {

class WorkersPanel;

class DispatchDialog : public QDialog {
    Q_OBJECT
public:
    DispatchDialog(const Plan& plan, const WorkersPanel* workers, QWidget* parent = nullptr);

    std::vector<int> chosenWorkers() const;  // rows of the workers panel, in order
    int steps() const;
    unsigned long long seed() const;

private:
    void updateSplit();

    Plan plan_;
    const WorkersPanel* workers_;
    QListWidget* list_;
    QSpinBox* steps_;
    QSpinBox* seed_;
    QLabel* split_;
};

}  // namespace hippie::studio
