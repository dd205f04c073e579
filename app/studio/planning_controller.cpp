#include "app/studio/planning_controller.h"

#include <chrono>
#include <exception>

#include <QtConcurrent/QtConcurrentRun>

#include "planners/algorithms/registry.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/common/allocator.h"

namespace hippie::studio {

namespace {
constexpr auto kProgressInterval = std::chrono::milliseconds(100);  // at most ten updates a second
}  // namespace

PlanningController::PlanningController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<PlannerResult>();
}

PlanningController::~PlanningController() {
    cancelAll();
    pool_.waitForDone();
}

void PlanningController::run(const Problem& problem, const QStringList& planners) {
    cancelAll();
    running_.clear();
    const quint64 generation = ++generation_;
    const auto shared_problem = std::make_shared<const Problem>(problem);
    for (const QString& name : planners) {
        // Progress arrives from the planner's thread: hand it to the GUI thread, throttled.
        auto last = std::make_shared<PlanContext::Clock::time_point>();
        auto report = [this, generation, name, last](double fraction, const std::string& message) {
            const auto now = PlanContext::Clock::now();
            if (now - *last < kProgressInterval && fraction < 1.0) return;
            *last = now;
            QMetaObject::invokeMethod(
                this,
                [this, generation, name, fraction, text = QString::fromStdString(message)] {
                    if (generation == generation_) emit progress(name, fraction, text);
                },
                Qt::QueuedConnection);
        };
        auto context = std::make_shared<PlanContext>(problem.time_budget_s, report);
        running_[name] = context;
        emit started(name);
        (void)QtConcurrent::run(&pool_, [this, generation, name, context, shared_problem] {
            PlannerResult result;
            QString error;
            try {
                // Planners share the cores: charge each its own CPU time, as `compare` does.
                const double start = threadCpuSeconds();
                result = makePlanner(name.toStdString())->plan(*shared_problem, *context);
                result.planning_time_s = planningSeconds(threadCpuSeconds() - start, result);
            } catch (const std::exception& e) {
                error = QString::fromUtf8(e.what());
            }
            const bool cancelled = context->cancelled();
            QMetaObject::invokeMethod(
                this,
                [this, generation, name, result = std::move(result), error, cancelled] {
                    if (generation != generation_) return;
                    if (cancelled)
                        emit failed(name, tr("cancelled"), true);
                    else if (!error.isEmpty())
                        emit failed(name, error, false);
                    else
                        emit finished(result);
                    onDone(generation, name);
                },
                Qt::QueuedConnection);
        });
    }
    if (planners.isEmpty()) emit allFinished();
}

void PlanningController::onDone(quint64 generation, const QString& planner) {
    if (generation != generation_) return;
    running_.erase(planner);
    if (!running_.empty()) return;
    releaseFreedMemory();  // what the planners kept for reuse (main.cpp) goes back once all are done
    emit allFinished();
}

void PlanningController::cancel(const QString& planner) {
    const auto it = running_.find(planner);
    if (it != running_.end()) it->second->cancel();
}

void PlanningController::abandon() {
    cancelAll();
    ++generation_;  // queued results of the old generation are ignored
    running_.clear();
}

void PlanningController::cancelAll() {
    for (auto& [name, context] : running_) context->cancel();
}

}  // namespace hippie::studio
