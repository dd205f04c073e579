#pragma once
// Search in the operator graph as in Netron: every op whose name contains the text (any
// case), also ops hidden inside collapsed layers; a cursor that moves to the next or
// previous match and says which layer must be expanded to show it. Plain logic, tested
// without a window.
#include <set>
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie::widgets {

class OpSearch {
public:
    // Matches in op order; resets the cursor to the first.
    void search(const Graph& graph, const std::string& text);
    const std::vector<int>& matches() const { return matches_; }
    int count() const { return static_cast<int>(matches_.size()); }
    int current() const { return current_; }     // index into matches(), -1 when none
    int currentOp() const;                        // op id, -1 when none
    void next();                                  // wraps around
    void previous();
    // The layer to expand so that the current match is drawn (-1: already drawn).
    int layerToExpand(const Graph& graph, bool collapsed, const std::set<int>& expanded) const;

private:
    std::vector<int> matches_;
    int current_ = -1;
};

}  // namespace hippie::widgets
