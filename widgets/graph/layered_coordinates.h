#pragma once
// Coordinates for a layered drawing whose ranks and in-rank order are already decided (by
// dot's ranking and crossing minimisation): y by rank, x by a few sweeps that pull every box
// towards its neighbours in the next rank while keeping the order and the separation. Linear
// in boxes and edges per sweep; used for graphs too large for dot's own x positioning, whose
// network simplex grows quadratically (a 5,000-op graph took a minute). Qt- and Graphviz-free.
#include <vector>

namespace hippie::widgets {

struct LayeredInput {
    std::vector<std::vector<int>> ranks;  // box ids per rank, top to bottom, in order left to right
    std::vector<double> width;            // per box, points; 0 for an edge's bend point
    std::vector<double> height;
    std::vector<bool> is_bend;            // an edge passing through a rank, not an op
    std::vector<std::pair<int, int>> links;  // between boxes of adjacent ranks (upper, lower)
    double node_sep = 18;   // between neighbouring boxes of a rank, points
    double rank_sep = 25;   // between ranks, points
    int sweeps = 8;         // down-and-up pairs
};

struct LayeredCoordinates {
    std::vector<double> x;  // centres, points, >= 0; y grows downwards
    std::vector<double> y;
    double width = 0;
    double height = 0;
};

LayeredCoordinates assignLayeredCoordinates(const LayeredInput& in);

}  // namespace hippie::widgets
