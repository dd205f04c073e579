#pragma once
// What crosses each pipeline boundary, derived from the Graph's edges (never written by hand):
// segment s reads, from earlier segments, the outputs of every op outside s that an op in s
// consumes, and hands on every op output of s that an op of another segment consumes. The
// tensors are named by their producer op; the live map inside a segment keeps, after each
// layer, only what a later layer reads. Chained models (one tensor from each layer to the
// next) have the one key kChainKey at every boundary.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie::engine {

struct SegmentIO {
    int first_layer = 0, last_layer = 0;
    // Tensors the segment reads from outside: (key, producer segment), -1 for the step's input
    // samples (kDataKey), which the segment holding layer 0 reads.
    std::vector<std::pair<std::string, int>> inputs;
    // Tensors it produces that other segments read, with the segments that read each.
    std::vector<std::string> outputs;
    std::map<std::string, std::set<int>> consumers;
    // Outputs that ops of this segment read as well (Inception's Mixed_6e feeds Mixed_7a here
    // and the auxiliary head on a later stage): autograd saved them for this segment's
    // backward, so their storage stays after the send.
    std::set<std::string> read_here;
    // keep[i]: the keys live after the segment's i-th layer (empty for the last layer of the
    // segment that computes the loss: the loss reads what it needs from the head's outputs).
    std::vector<std::set<std::string>> keep;
};

// One entry per segment of `stages` (plan.stages: pipeline stages or interleaved chunks, each a
// contiguous layer range); the last segment computes the loss.
std::vector<SegmentIO> segmentBoundaries(const Graph& graph, const std::vector<StageRange>& stages, bool chained);

// The outputs of segment `producer` that the segments in `readers` read, in the producer's
// output order: what one transfer from the producer to the device holding `readers` carries.
std::vector<std::string> keysFor(const SegmentIO& producer, const std::set<int>& readers);

}  // namespace hippie::engine
