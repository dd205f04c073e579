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
};

// Every core of the graph in op order: a softmax op named `<layer>.<prefix>_softmax` whose
// inputs all come from the one op `<layer>.<prefix>_scores` of the same layer.
std::vector<AttentionCore> attentionCores(const Graph& g);

}  // namespace hippie
