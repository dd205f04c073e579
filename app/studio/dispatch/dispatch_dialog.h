#pragma once
// "Run on workers…": which workers take part (rank 0 on the first ticked), steps, seed, checkpoints
// and the training data (synthetic, or a file every rank reads), and
// what will happen: how the plan's ranks are split among them, checked against their devices
// and the engine (see dispatch_check.h). Run stays disabled while something blocks.
#include <QDialog>

#include <optional>
#include <vector>

#include "app/studio/dispatch/dispatch_check.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QListWidget;
class QSpinBox;

namespace hippie::studio {

class WorkersPanel;

class DispatchDialog : public QDialog {
    Q_OBJECT
public:
    // `graph`: the plan's model when known. The local engine is asked which models it trains.
    DispatchDialog(const Plan& plan, const std::optional<Graph>& graph, const WorkersPanel* workers, QWidget* parent = nullptr);

    std::vector<int> chosenWorkers() const;  // rows of the workers panel, in order
    int steps() const;
    unsigned long long seed() const;
    int checkpointEvery() const;  // 0: no checkpoints
    QString dataFile() const;     // empty: synthetic data
    void setDataFile(const QString& path);
    const DispatchCheck& check() const { return check_; }
    QString whatWillHappen() const;  // the text shown: problems first, then the steps
    bool canRun() const;             // what the Run button says
    void setChecked(int row, bool checked);  // tick or untick a worker (tests)
    void setAcceptSharing(bool accept);

private:
    void updateSplit();

    Plan plan_;
    std::optional<Graph> graph_;
    EngineInfo engine_;
    DispatchCheck check_;
    QCheckBox* share_;
    QPushButton* run_;
    const WorkersPanel* workers_;
    QListWidget* list_;
    QSpinBox* steps_;
    QSpinBox* seed_;
    QSpinBox* checkpoint_every_;
    QLineEdit* data_;
    QLabel* split_;
};

}  // namespace hippie::studio
