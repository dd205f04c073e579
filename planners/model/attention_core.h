#pragma once
// The attention cores of a graph: what selective activation recomputation (Korthikanti et al.
// 2022, section 4.2) drops and recomputes. A core is the scores op Q K^T and the softmax
// (with its dropout) reading it, the zoo's `<prefix>_scores` and `<prefix>_softmax`: their
// outputs are the a·s²·b-sized tensors of a block, while their inputs (Q, K, and V for the
// context) are kept anyway for the projections' backward.
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

struct AttentionCore {
    int scores = -1;   // op id of `<prefix>_scores`
    int softmax = -1;  // op id of `<prefix>_softmax`, whose only input is `scores`
    int dropout = -1;  // op id of `<prefix>_dropout`, a dropout whose only input is `softmax`; -1: none

    // The core's ops: scores, softmax and the dropout when there is one.
    std::vector<int> ops() const;
};

// Every core of the graph in op order: a softmax op named `<layer>.<prefix>_softmax` whose
// inputs all come from the one op `<layer>.<prefix>_scores` of the same layer, with the
// dropout op `<layer>.<prefix>_dropout` reading it if there is one.
std::vector<AttentionCore> attentionCores(const Graph& g);

}  // namespace hippie
