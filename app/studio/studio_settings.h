#pragma once
// What the studio remembers between sessions (QSettings): window layout, last model,
// cluster, planners and planning options.
#include <QByteArray>
#include <QString>
#include <QStringList>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

// A default-constructed StudioSettings holds the first start's defaults: what load() returns
// where nothing is stored, and what a window that keeps no settings (screenshots, tests) opens on.
struct StudioSettings {
    QByteArray geometry;
    QByteArray window_state;
    ModelSpec model = defaultModel();                   // zoo model, or model.file for a graph JSON
    QString cluster = QStringLiteral("dgx-a100-1x8");  // preset name or cluster file
    QStringList planners;     // ticked planners; empty = the defaults
    Objective objective = Objective::MemoryEfficiencyWithThroughputFloor;  // within 10% of the best throughput, then least memory
    double time_budget_s = 10;
    int global_batch = 512;

    static ModelSpec defaultModel();  // gpt2-small, a batch of 8 samples, fp16
    static StudioSettings load();     // defaults where nothing is stored
    void save() const;
};

}  // namespace hippie::studio
