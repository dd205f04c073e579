#include "engine/src/runtime/boundaries.h"

#include "engine/src/models/layer_keys.h"
#include "planners/common/error.h"

namespace hippie::engine {

namespace {

std::vector<SegmentIO> chainedBoundaries(const std::vector<StageRange>& stages) {
    std::vector<SegmentIO> io(stages.size());
    for (size_t s = 0; s < stages.size(); ++s) {
        io[s].first_layer = stages[s].first_layer;
        io[s].last_layer = stages[s].last_layer;
        io[s].inputs = {{kChainKey, static_cast<int>(s) - 1}};
        if (s + 1 < stages.size()) {
            io[s].outputs = {kChainKey};
            io[s].consumers[kChainKey] = {static_cast<int>(s) + 1};
        }
        io[s].keep.assign(static_cast<size_t>(stages[s].last_layer - stages[s].first_layer + 1), {kChainKey});
        if (s + 1 == stages.size()) io[s].keep.back().clear();
    }
    return io;
}

}  // namespace

std::vector<SegmentIO> segmentBoundaries(const Graph& graph, const std::vector<StageRange>& stages, bool chained) {
    if (chained) return chainedBoundaries(stages);
    const int layers = graph.layerCount();
    std::vector<int> segment_of_layer(static_cast<size_t>(layers), -1);
    for (size_t s = 0; s < stages.size(); ++s)
        for (int l = stages[s].first_layer; l <= stages[s].last_layer; ++l) segment_of_layer.at(static_cast<size_t>(l)) = static_cast<int>(s);
    auto layerOf = [&](int op) { return graph.ops[static_cast<size_t>(op)].layer; };
    auto segmentOf = [&](int op) { return segment_of_layer.at(static_cast<size_t>(layerOf(op))); };

    std::vector<SegmentIO> io(stages.size());
    // Per producer op: the layers that read it from another layer.
    std::map<int, std::set<int>> read_by_layers;
    std::set<int> read_in_own_segment;
    for (const Edge& e : graph.edges) {
        if (layerOf(e.src) != layerOf(e.dst)) read_by_layers[e.src].insert(layerOf(e.dst));
        if (segmentOf(e.src) == segmentOf(e.dst)) read_in_own_segment.insert(e.src);
    }
    for (size_t s = 0; s < stages.size(); ++s) {
        SegmentIO& x = io[s];
        x.first_layer = stages[s].first_layer;
        x.last_layer = stages[s].last_layer;
        if (x.first_layer == 0) x.inputs.emplace_back(kDataKey, -1);
    }
    // Inputs and outputs, in producer op order (the order both ends of a transfer agree on).
    for (const auto& [op, readers] : read_by_layers) {
        const int from = segmentOf(op);
        const std::string& key = graph.ops[static_cast<size_t>(op)].name;
        std::set<int> reader_segments;
        for (int l : readers) reader_segments.insert(segment_of_layer.at(static_cast<size_t>(l)));
        reader_segments.erase(from);
        for (int s : reader_segments) io[static_cast<size_t>(s)].inputs.emplace_back(key, from);
        if (!reader_segments.empty()) {
            io[static_cast<size_t>(from)].outputs.push_back(key);
            io[static_cast<size_t>(from)].consumers[key] = reader_segments;
            if (read_in_own_segment.count(op)) io[static_cast<size_t>(from)].read_here.insert(key);
        }
    }
    // Live keys after each layer: produced at or before it (here, or read from outside) and
    // read by a later layer (a later one of this segment, for what came from outside).
    for (size_t s = 0; s < stages.size(); ++s) {
        SegmentIO& x = io[s];
        const bool loss_segment = s + 1 == stages.size();
        for (int l = x.first_layer; l <= x.last_layer; ++l) {
            std::set<std::string> keep;
            if (!(loss_segment && l == x.last_layer))
                for (const auto& [op, readers] : read_by_layers) {
                    const int lp = layerOf(op);
                    if (lp > l) continue;
                    const bool here = lp >= x.first_layer;
                    for (int r : readers)
                        if (r > l && (here || r <= x.last_layer)) keep.insert(graph.ops[static_cast<size_t>(op)].name);
                }
            x.keep.push_back(std::move(keep));
        }
    }
    return io;
}

std::vector<std::string> keysFor(const SegmentIO& producer, const std::set<int>& readers) {
    std::vector<std::string> out;
    for (const std::string& key : producer.outputs) {
        const std::set<int>& c = producer.consumers.at(key);
        for (int r : readers)
            if (c.count(r)) {
                out.push_back(key);
                break;
            }
    }
    return out;
}

}  // namespace hippie::engine
