#pragma once
// The schedule page: the selected plan's Gantt chart and memory curves, with a schedule
// switch and a micro-batch count that re-simulate the plan at once.
#include <QWidget>

#include "planners/cluster/cluster.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

class QComboBox;
class QLabel;
class QSpinBox;

namespace hippie::widgets {
class ScheduleView;
}

namespace hippie::studio {

class MessageLabel;

class SchedulePage : public QWidget {
    Q_OBJECT
public:
    explicit SchedulePage(QWidget* parent = nullptr);

    void setPlan(const Plan& plan);  // shows its schedule and micro-batches without re-simulating
    void showTrace(const Plan& plan, const Trace& trace, const Cluster& cluster);
    void showError(const QString& message);
    void clear();
    widgets::ScheduleView* view() const { return view_; }
    QString summaryText() const;

signals:
    void overridesChanged(hippie::ScheduleKind schedule, int micro_batches);

private:
    void emitOverrides();

    QComboBox* schedule_;
    QSpinBox* micro_batches_;
    MessageLabel* summary_;
    widgets::ScheduleView* view_;
    QLabel* details_;  // the clicked block
};

}  // namespace hippie::studio
