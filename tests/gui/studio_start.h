#pragma once
// How the GUI suites start the studio (MainWindow::start): a zoo model on a cluster preset.
#include <QString>
#include <QStringList>

#include <optional>
#include <string>

#include "app/studio/main_window.h"

namespace hippie::testing {

// `zoo` in mixed precision (fp16), `batch_size` samples a micro-batch, on `cluster` with
// `global_batch` samples an iteration; only loaded: no planner runs.
inline studio::StartOptions zooStart(const std::string& zoo, const QString& cluster = QStringLiteral("dgx-a100-1x8"),
                                     int batch_size = 8, int global_batch = 64) {
    studio::StartOptions o;
    ModelSpec spec;
    spec.zoo = zoo;
    spec.batch_size = batch_size;
    spec.precision = Precision::FP16;
    o.model = spec;
    o.cluster = cluster;
    o.global_batch = global_batch;
    o.run_planners = false;
    return o;
}

// The same start, then running `planners` (none named: those the planners panel ticks).
inline studio::StartOptions withPlanners(studio::StartOptions o, std::optional<QStringList> planners = std::nullopt) {
    o.planners = std::move(planners);
    o.run_planners = true;
    return o;
}

}  // namespace hippie::testing
