#pragma once
// A QCustomPlot legend placed in a row of its own under the axes, so that it never covers data,
// with as many entries side by side as the chart's width holds: at 1280 px, four entries of
// "rank 0 .. rank 3" in one row were squeezed until their names ran into each other, and two
// rows of one entry each took the height of the chart beside it.
class QCPLayoutElement;
class QCustomPlot;

namespace hippie::widgets {

// Moves `plot`'s legend from its inset over the axis rect into a new bottom row of the plot's
// layout, inset from the widget's edges (QCustomPlot draws a legend's frame one pixel past its
// rect, which a legend flush with the widget loses), and keeps its column count fitted to the
// plot's width as the plot is resized. Call fitLegendColumns after adding or renaming entries.
void putLegendUnderAxes(QCustomPlot* plot);
void fitLegendColumns(QCustomPlot* plot);
// Puts `element` (a second legend, say) right of the legend, in the same row.
void addBesideLegend(QCustomPlot* plot, QCPLayoutElement* element);

}  // namespace hippie::widgets
