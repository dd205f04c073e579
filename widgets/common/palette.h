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
// Colour for the n-th planner in charts: saturated enough for thin bars and points.
QColor seriesColor(int index);

}  // namespace hippie::widgets
