#pragma once
// What the studio remembers between sessions (QSettings): window layout, last model,
// cluster, planners and planning options.
#include <QByteArray>
#include <QString>
#include <QStringList>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

struct StudioSettings {
    QByteArray geometry;
    QByteArray window_state;
    ModelSpec model;          // zoo model, or model.file for a graph JSON
    QString cluster;          // preset name or cluster file
    QStringList planners;     // ticked planners; empty = the defaults
    Objective objective = Objective::MemoryEfficiencyWithThroughputFloor;  // within 10% of the best throughput, then least memory
    double time_budget_s = 10;
    int global_batch = 512;

    static StudioSettings load();  // defaults where nothing is stored
    void save() const;
};

}  // namespace hippie::studio
