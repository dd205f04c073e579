#pragma once
// Re-simulates the selected plan with events, in the background, whenever the plan or its
// schedule or micro-batch count changes. Only the latest request's trace is delivered.
#include <QObject>
#include <QThreadPool>

#include "planners/algorithms/planner.h"
#include "planners/sim/trace.h"

namespace hippie::studio {

class SimulationController : public QObject {
    Q_OBJECT
public:
    explicit SimulationController(QObject* parent = nullptr);
    ~SimulationController() override;

    void simulate(const Problem& problem, const Plan& plan);
    bool isBusy() const { return busy_; }

signals:
    void traceReady(const hippie::Plan& plan, const hippie::Trace& trace);
    void failed(const QString& message);

private:
    quint64 generation_ = 0;
    bool busy_ = false;
    QThreadPool pool_;
};

}  // namespace hippie::studio

Q_DECLARE_METATYPE(hippie::Trace)
Q_DECLARE_METATYPE(hippie::Plan)
