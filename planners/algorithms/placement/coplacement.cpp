#include "planners/algorithms/placement/coplacement.h"

#include "planners/algorithms/placement/tensor_bytes.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>

namespace hippie::placement {

namespace {

// Union-find over ops with the summed weights of each set, so caps are checked in O(1).
class Groups {
public:
    Groups(const GroupingWeights& w) : parent_(w.seconds.size()), seconds_(w.seconds), bytes_(w.bytes) {
        std::iota(parent_.begin(), parent_.end(), 0);
    }

    int find(int x) {
        while (parent_[static_cast<size_t>(x)] != x) x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
        return x;
    }

    // Merges b's set into a's if the result stays within the caps; returns whether it did.
    bool merge(int a, int b, double cap_seconds, int64_t cap_bytes) {
        a = find(a);
        b = find(b);
        if (a == b) return true;
        const auto sa = static_cast<size_t>(a), sb = static_cast<size_t>(b);
        if (seconds_[sa] + seconds_[sb] > cap_seconds || bytes_[sa] + bytes_[sb] > cap_bytes) return false;
        parent_[sb] = a;
        seconds_[sa] += seconds_[sb];
        bytes_[sa] += bytes_[sb];
        return true;
    }

private:
    std::vector<int> parent_;
    std::vector<double> seconds_;
    std::vector<int64_t> bytes_;
};

std::vector<std::set<int>> distinctConsumers(const Graph& g) {
    std::vector<std::set<int>> out(g.ops.size());
    for (const Edge& e : g.edges) out[static_cast<size_t>(e.src)].insert(e.dst);
    return out;
}

// Rule 1: an op whose only consumer is v joins v. Every group stays an in-tree whose
// non-root members have their one consumer inside it, so a cycle between groups would be a
// cycle of the graph itself.
void mergeSingleConsumers(const Graph& g, const std::vector<int>& topo, Groups& groups, double cap_s, int64_t cap_b) {
    const auto consumers = distinctConsumers(g);
    for (int u : topo) {
        const auto& c = consumers[static_cast<size_t>(u)];
        if (c.size() == 1) groups.merge(*c.begin(), u, cap_s, cap_b);
    }
}

// Rule 2: a group whose only producer group is A joins A. Every path into it comes straight
// from A, so no other path from A to it exists and merging cannot close a cycle.
void fuseChains(const Graph& g, const std::vector<int>& topo, Groups& groups, double cap_s, int64_t cap_b) {
    const size_t n = g.ops.size();
    std::vector<std::set<int>> in(n), out(n);
    for (const Edge& e : g.edges) {
        const int a = groups.find(e.src), b = groups.find(e.dst);
        if (a == b) continue;
        out[static_cast<size_t>(a)].insert(b);
        in[static_cast<size_t>(b)].insert(a);
    }
    for (int op : topo) {
        const int b = groups.find(op);
        if (in[static_cast<size_t>(b)].size() != 1) continue;
        const int a = *in[static_cast<size_t>(b)].begin();
        if (!groups.merge(a, b, cap_s, cap_b)) continue;
        in[static_cast<size_t>(b)].clear();
        out[static_cast<size_t>(a)].erase(b);
        for (int c : out[static_cast<size_t>(b)]) {
            in[static_cast<size_t>(c)].erase(b);
            in[static_cast<size_t>(c)].insert(a);
            out[static_cast<size_t>(a)].insert(c);
        }
        out[static_cast<size_t>(b)].clear();
    }
}

// Group ids in the order of their first member in `topo`; edges summed over distinct tensors.
Grouping buildGrouping(const Graph& g, const std::vector<int>& topo, const std::vector<int>& rep) {
    Grouping out;
    out.group_of.assign(g.ops.size(), -1);
    std::unordered_map<int, int> id_of_rep;
    id_of_rep.reserve(topo.size());
    for (int op : topo) {
        const auto [it, fresh] = id_of_rep.emplace(rep[static_cast<size_t>(op)], static_cast<int>(out.members.size()));
        if (fresh) out.members.emplace_back();
        out.members[static_cast<size_t>(it->second)].push_back(op);
        out.group_of[static_cast<size_t>(op)] = it->second;
    }
    std::vector<TensorEdge> between;  // into each (producer group, consumer group)
    for (const Edge& e : g.edges) {
        const int src = out.group_of[static_cast<size_t>(e.src)], dst = out.group_of[static_cast<size_t>(e.dst)];
        if (src != dst) between.push_back({pairKey(src, dst), e.src, e.bytes});
    }
    for (const auto& [key, bytes] : tensorBytesByPart(between)) {
        const auto [src, dst] = splitPairKey(key);
        out.edges.push_back({src, dst, bytes});
    }
    return out;
}

}  // namespace

std::vector<int> Grouping::expandPlacement(const std::vector<int>& group_device) const {
    std::vector<int> out(group_of.size());
    for (size_t op = 0; op < group_of.size(); ++op) out[op] = group_device[static_cast<size_t>(group_of[op])];
    return out;
}

std::vector<int> Grouping::expandOrder(const std::vector<int>& group_order) const {
    std::vector<int> out;
    out.reserve(group_of.size());
    for (int g : group_order) out.insert(out.end(), members[static_cast<size_t>(g)].begin(), members[static_cast<size_t>(g)].end());
    return out;
}

Grouping identityGrouping(const Graph& graph) {
    std::vector<int> rep(graph.ops.size());
    std::iota(rep.begin(), rep.end(), 0);
    return buildGrouping(graph, graph.topologicalOrder(), rep);
}

Grouping groupByLabel(const Graph& graph, const std::vector<int>& label) {
    return buildGrouping(graph, graph.topologicalOrder(), label);
}

Grouping coplace(const Graph& graph, const GroupingWeights& weights, int devices, const CoplacementOptions& options) {
    if (!options.enabled || static_cast<int>(graph.ops.size()) < options.min_ops) return identityGrouping(graph);
    const std::vector<int> topo = graph.topologicalOrder();
    const double share = options.max_group_share / std::max(devices, 1);
    const double cap_s = share * std::accumulate(weights.seconds.begin(), weights.seconds.end(), 0.0);
    const auto cap_b = static_cast<int64_t>(share * static_cast<double>(std::accumulate(weights.bytes.begin(), weights.bytes.end(), int64_t{0})));
    Groups groups(weights);
    if (options.merge_single_consumer) mergeSingleConsumers(graph, topo, groups, cap_s, cap_b);
    if (options.fuse_chains) fuseChains(graph, topo, groups, cap_s, cap_b);
    std::vector<int> rep(graph.ops.size());
    for (size_t op = 0; op < rep.size(); ++op) rep[op] = groups.find(static_cast<int>(op));
    return buildGrouping(graph, topo, rep);
}

}  // namespace hippie::placement
