#pragma once
// What "Run on workers" will do with a plan, checked before anything starts: the workers
// have the devices the plan's ranks need (or how ranks would share them), the engine found
// trains the plan's model, and in plain words what will happen. Plain logic, tested
// without a window; the dispatch dialog shows it and refuses to start what cannot run.
#include <optional>
#include <vector>

#include <QString>
#include <QStringList>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie::studio {

struct DispatchWorker {
    QString label;     // "This machine", "gpu1:7070"
    bool local = false;
    int devices = 0;   // from its probe; 0 = not probed yet
};

// The engine this machine would start. `models`: what `hippie-engine models` listed;
// nullopt when it could not be asked (`error` says why).
struct EngineInfo {
    QString path;  // empty: none found
    std::optional<QStringList> models;
    QString error;
};

struct DispatchCheck {
    QStringList blockers;  // each one sentence: what is wrong and what to do
    QStringList warnings;
    QStringList steps;     // what will happen, in order
    bool shares_devices = false;  // more ranks than devices on some worker

    // Run is allowed: nothing blocks, and ranks share devices only when the user agreed.
    bool canRun(bool accept_sharing) const { return blockers.isEmpty() && (!shares_devices || accept_sharing); }
};

// `graph`: the plan's model when known (a file model's graph names the model it is).
// `data_file`: what every rank trains on (empty: synthetic data); this machine's ranks need it
// here.
DispatchCheck checkDispatch(const Plan& plan, const std::optional<Graph>& graph, const std::vector<DispatchWorker>& workers,
                            const EngineInfo& engine, int steps, const QString& data_file = {});

// Asks `engine` (a hippie-engine binary) which models it trains (`hippie-engine models`,
// one JSON object per line with "name"), waiting at most `timeout_ms`.
EngineInfo askEngine(const QString& engine, int timeout_ms = 5000);

}  // namespace hippie::studio
