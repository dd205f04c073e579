#pragma once
// Colours shared by every view, so that a stage, device or instruction kind has the same
// colour in the graph, the Gantt chart and the charts.
#include <QColor>

#include "planners/schedule/program.h"

namespace hippie::widgets {

// A qualitative palette (ColorBrewer Set3/Paired mix) that stays readable with dark text.
QColor categoryColor(int index);
// Forward, backward, weight-gradient, recompute, send/recv, all-reduce, optimizer: distinct.
QColor instrColor(InstrKind kind);
// Colour for the n-th series in charts: saturated enough for thin bars and points.
QColor seriesColor(int index);
// One colour per planner, whatever its row: the registry's planners in registry order, any
// other name (a plan file) from its hash, so a planner keeps its colour between runs.
QColor plannerColor(const QString& planner);
// Memory curves: dark, saturated colours apart from the Gantt chart's instruction colours,
// `count` curves spread around the hue circle (two lightness rings beyond 12).
QColor deviceColor(int index, int count);

}  // namespace hippie::widgets
