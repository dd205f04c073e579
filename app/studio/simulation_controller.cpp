#include "app/studio/simulation_controller.h"

#include <exception>

#include <QtConcurrent/QtConcurrentRun>

#include "planners/algorithms/evaluate.h"

namespace hippie::studio {

SimulationController::SimulationController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<Trace>();
    qRegisterMetaType<Plan>();
    pool_.setMaxThreadCount(1);  // a newer request waits; stale ones are dropped on arrival
}

SimulationController::~SimulationController() { pool_.waitForDone(); }

void SimulationController::simulate(const Problem& problem, const Plan& plan) {
    const quint64 generation = ++generation_;
    busy_ = true;
    (void)QtConcurrent::run(&pool_, [this, generation, problem, plan] {
        Trace trace;
        QString error;
        try {
            trace = simulateWithEvents(problem, plan);
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, generation, plan, trace = std::move(trace), error] {
                if (generation != generation_) return;
                busy_ = false;
                if (error.isEmpty())
                    emit traceReady(plan, trace);
                else
                    emit failed(error);
            },
            Qt::QueuedConnection);
    });
}

}  // namespace hippie::studio
