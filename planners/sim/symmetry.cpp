#include "planners/sim/symmetry.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace hippie {

namespace {

// The segments a stream computes, in order of first appearance: streams of one class share
// them. `seen`: scratch, one flag per segment of the program, left all false.
std::vector<int> segmentsOf(const std::vector<Instr>& stream, std::vector<bool>& seen) {
    std::vector<int> segments;
    for (const Instr& in : stream)
        if (isCompute(in.kind) && in.segment >= 0 && static_cast<size_t>(in.segment) < seen.size() && !seen[static_cast<size_t>(in.segment)]) {
            seen[static_cast<size_t>(in.segment)] = true;
            segments.push_back(in.segment);
        }
    for (int seg : segments) seen[static_cast<size_t>(seg)] = false;
    return segments;
}

// Everything of an instruction but its peer, group and bucket (a tensor-parallel rank's
// buckets are its own, of the same ops and bytes as rank 0's).
bool sameButPeerGroupAndBucket(const Instr& a, const Instr& b) {
    return a.kind == b.kind && a.segment == b.segment && a.mb == b.mb && a.bytes == b.bytes && a.count == b.count && a.of == b.of &&
           a.sequence_parallel == b.sequence_parallel && (a.peer < 0) == (b.peer < 0) && (a.group < 0) == (b.group < 0) &&
           (a.bucket < 0) == (b.bucket < 0);
}

bool sameBucket(const Bucket& a, const Bucket& b) {
    return a.segment == b.segment && a.ops == b.ops && a.bytes == b.bytes && a.tied_segment == b.tied_segment;
}

// A one-to-one correspondence between indices below a size, built up pair by pair.
class Correspondence {
public:
    enum Outcome { Known, New, Contradicts };
    explicit Correspondence(size_t size) : image_(size, -1), preimage_(size, -1) {}
    Outcome pair(int a, int b) {
        int& image = image_[static_cast<size_t>(a)];
        int& preimage = preimage_[static_cast<size_t>(b)];
        if (image < 0 && preimage < 0) {
            image = b;
            preimage = a;
            return New;
        }
        return image == b && preimage == a ? Known : Contradicts;
    }

private:
    std::vector<int> image_, preimage_;
};

class Classes {
public:
    Classes(const Program& prog, const Cluster& cluster, const std::vector<int>& group_sharing)
        : prog_(prog), cluster_(cluster), group_sharing_(group_sharing) {
        for (size_t n = 0; n < cluster.nodes.size(); ++n) node_of_.insert(node_of_.end(), static_cast<size_t>(std::max(cluster.nodes[n].devices, 0)), static_cast<int>(n));
        for (size_t s = 0; s < prog.devices.size(); ++s) {
            const int d = prog.devices[s];
            if (d < 0 || d >= cluster.deviceCount()) continue;  // the validator names it
            if (stream_of_device_.size() <= static_cast<size_t>(d)) stream_of_device_.resize(static_cast<size_t>(d) + 1, kNone);
            if (stream_of_device_[static_cast<size_t>(d)] == kNone) {
                stream_of_device_[static_cast<size_t>(d)] = s;
                ++devices_;
            }
        }
    }

    std::vector<size_t> find() {
        const size_t n = prog_.streams.size();
        std::vector<size_t> identity(n);
        std::iota(identity.begin(), identity.end(), size_t{0});
        if (prog_.devices.size() != n || devices_ != n || group_sharing_.size() != prog_.groups.size()) return identity;
        // A placement's devices each run their own segments: nothing repeats.
        if (std::any_of(prog_.segments.begin(), prog_.segments.end(), [](const Segment& seg) { return seg.stage < 0; })) return identity;
        // Candidates: the first stream of the same segments.
        std::map<std::vector<int>, size_t> first;
        rep_.resize(n);
        std::vector<bool> seen(prog_.segments.size(), false);
        for (size_t s = 0; s < n; ++s) rep_[s] = first.try_emplace(segmentsOf(prog_.streams[s], seen), s).first->second;
        if (first.size() == n) return identity;  // nothing repeats
        closed_.assign(prog_.groups.size(), Unknown);
        for (size_t s = 0; s < n; ++s)
            if (!repeats(s, rep_[s])) return identity;
        return rep_;
    }

private:
    enum Closure { Unknown, Closed, Open };

    // Whether stream s repeats stream r's timing (r == s: whether r's groups are closed).
    bool repeats(size_t s, size_t r) const {
        const auto& a = prog_.streams[s];
        if (s == r) return std::all_of(a.begin(), a.end(), [&](const Instr& x) { return x.group < 0 || closed(x.group); });
        const auto& b = prog_.streams[r];
        const int da = prog_.devices[s], db = prog_.devices[r];
        if (a.size() != b.size() || !(node(da) == node(db))) return false;
        const auto groups_n = static_cast<int>(prog_.groups.size()), buckets_n = static_cast<int>(prog_.buckets.size());
        Correspondence groups(prog_.groups.size()), buckets(prog_.buckets.size());  // s's to r's at the same instructions
        for (size_t i = 0; i < a.size(); ++i) {
            const Instr& x = a[i];
            const Instr& y = b[i];
            if (!sameButPeerGroupAndBucket(x, y)) return false;
            if (x.bucket >= 0) {
                if (x.bucket >= buckets_n || y.bucket >= buckets_n) return false;
                const auto o = buckets.pair(x.bucket, y.bucket);
                if (o == Correspondence::Contradicts) return false;
                if (o == Correspondence::New && x.bucket != y.bucket &&
                    !sameBucket(prog_.buckets[static_cast<size_t>(x.bucket)], prog_.buckets[static_cast<size_t>(y.bucket)]))
                    return false;
            }
            if (x.peer >= 0) {
                const size_t px = streamOf(x.peer), py = streamOf(y.peer);
                if (px == kNone || py == kNone) return false;
                if (rep_[px] != py || (nodeOf(da) == nodeOf(x.peer)) != (nodeOf(db) == nodeOf(y.peer))) return false;
            }
            if (x.group >= 0) {
                if (x.group >= groups_n || y.group >= groups_n) return false;
                const auto o = groups.pair(x.group, y.group);
                if (o == Correspondence::Contradicts || (o == Correspondence::New && !sameGroupShape(x.group, y.group))) return false;
            }
        }
        return true;
    }

    size_t streamOf(int device) const {
        return device >= 0 && static_cast<size_t>(device) < stream_of_device_.size() ? stream_of_device_[static_cast<size_t>(device)] : kNone;
    }

    // Members of the same classes, the same members per node (as multisets) and the same
    // count of groups on their ports.
    bool sameGroupShape(int ga, int gb) const {
        if (ga == gb) return true;
        const auto a = static_cast<size_t>(ga), b = static_cast<size_t>(gb);
        return prog_.groups[a].size() == prog_.groups[b].size() && group_sharing_[a] == group_sharing_[b] && classes(a) == classes(b) &&
               shape(a) == shape(b);
    }

    // The representatives of a group's members, sorted (empty for a member without a stream).
    std::vector<size_t> classes(size_t g) const {
        std::vector<size_t> reps;
        for (int d : prog_.groups[g]) {
            const size_t m = streamOf(d);
            if (m == kNone) return {};
            reps.push_back(rep_[m]);
        }
        std::sort(reps.begin(), reps.end());
        return reps;
    }

    std::vector<int> shape(size_t g) const {
        std::map<int, int> per_node;
        for (int d : prog_.groups[g]) ++per_node[nodeOf(d)];
        std::vector<int> counts;
        for (const auto& [n, count] : per_node) {
            if (!(node(cluster_.firstDeviceOf(n)) == node(prog_.groups[g].front()))) return {-1};  // mixed nodes: never equal
            counts.push_back(count);
        }
        std::sort(counts.begin(), counts.end());
        return counts;
    }

    // Every member's representative is a member too: the group's representatives wait for
    // each other alone, as every member does in the full run.
    bool closed(int group) const {
        if (group >= static_cast<int>(prog_.groups.size())) return false;
        Closure& c = closed_[static_cast<size_t>(group)];
        if (c == Unknown) {
            const auto& members = prog_.groups[static_cast<size_t>(group)];
            c = Closed;
            for (int d : members) {
                const size_t m = streamOf(d);
                if (m == kNone || std::find(members.begin(), members.end(), prog_.devices[rep_[m]]) == members.end()) {
                    c = Open;
                    break;
                }
            }
        }
        return c == Closed;
    }

    // The device's node, from a table (Cluster::nodeOf walks the nodes; this runs per instruction).
    int nodeOf(int device) const {
        return device >= 0 && static_cast<size_t>(device) < node_of_.size() ? node_of_[static_cast<size_t>(device)] : cluster_.nodeOf(device);
    }
    const Node& node(int device) const { return cluster_.nodes[static_cast<size_t>(nodeOf(device))]; }

    const Program& prog_;
    const Cluster& cluster_;
    const std::vector<int>& group_sharing_;  // by group (countedGroupSharing)
    static constexpr size_t kNone = static_cast<size_t>(-1);
    std::vector<size_t> stream_of_device_;  // by device: its stream (kNone: none)
    std::vector<int> node_of_;              // by device of the cluster: its node
    size_t devices_ = 0;                    // distinct devices with a stream
    std::vector<size_t> rep_;
    mutable std::vector<Closure> closed_;
};

}  // namespace

std::vector<size_t> symmetricRepresentatives(const Program& prog, const Cluster& cluster, const std::vector<int>& group_sharing) {
    return Classes(prog, cluster, group_sharing).find();
}

}  // namespace hippie
