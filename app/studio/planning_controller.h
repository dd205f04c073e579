#pragma once
// Runs planners in the background, all at once, each with its own PlanContext so that it
// reports progress and can be cancelled. Results come back on the GUI thread as signals.
#include <map>
#include <memory>

#include <QMetaType>
#include <QObject>
#include <QStringList>
#include <QThreadPool>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

class PlanningController : public QObject {
    Q_OBJECT
public:
    explicit PlanningController(QObject* parent = nullptr);
    ~PlanningController() override;  // cancels what runs and waits for it

    // Starts every named planner on `problem`; a run still going is cancelled first and its
    // late results are dropped.
    void run(const Problem& problem, const QStringList& planners);
    void cancel(const QString& planner);
    void cancelAll();
    // Cancels what runs and drops its late results (no "cancelled" rows): the inputs changed.
    void abandon();
    void waitForThreads() { pool_.waitForDone(); }  // tests: every planner thread has returned
    bool isRunning() const { return !running_.empty(); }
    int runningCount() const { return static_cast<int>(running_.size()); }

signals:
    void started(const QString& planner);
    void progress(const QString& planner, double fraction, const QString& message);
    void finished(const hippie::PlannerResult& result);
    void failed(const QString& planner, const QString& message, bool cancelled);
    void allFinished();

private:
    void onDone(quint64 generation, const QString& planner);

    QThreadPool pool_;
    std::map<QString, std::shared_ptr<PlanContext>> running_;
    quint64 generation_ = 0;
};

}  // namespace hippie::studio

Q_DECLARE_METATYPE(hippie::PlannerResult)
