#include "planners/schedule/execute.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace hippie {

namespace {

// A point-to-point tensor: which segment's output (or its gradient), which micro-batch, and
// between which devices. Packs into 64 bits for a flat hash map on the hot path.
uint64_t p2pKey(bool grad, int segment, int mb, int from, int to) {
    assert(segment >= 0 && segment < (1 << 22) && mb >= 0 && mb < (1 << 16));
    assert(from >= 0 && from < (1 << 12) && to >= 0 && to < (1 << 12));
    return (static_cast<uint64_t>(grad) << 62) | (static_cast<uint64_t>(segment) << 40) |
           (static_cast<uint64_t>(mb) << 24) | (static_cast<uint64_t>(from) << 12) | static_cast<uint64_t>(to);
}

struct Transfer {
    double start = 0;
    double end = 0;
};

// A member of a collective: (stream, instruction index). 8 bytes: a program holds
// millions of members (every micro-batch's tensor-parallel and ZeRO-3 collectives).
using Member = std::pair<int, uint32_t>;

// The k-th collective of a group. Its members are kept apart, in one array per group (the
// group's size each), so that a program's many collectives allocate nothing each.
struct CollectiveInstance {
    int arrived = 0;     // members that have posted it
    double ready = 0;    // latest time a member's gradients were ready
    bool resolved = false;
    double end = 0;
};

// The in-line collectives of one compute instruction (TensorParallel over its tp group,
// ZeroGather over its data-parallel group): they start when every member has finished that
// compute.
struct InlineInstance {
    int arrived = 0;
    double ready = 0;
    bool resolved = false;
};

// The instances of one group's collectives (or in-line ones) and their members.
template <class Instance>
struct GroupInstances {
    std::vector<Instance> list;
    std::vector<Member> members;  // [instance * group size + i]

    // `count` instances made at once (a program's collectives are counted before it runs), so
    // that `at` neither moves them nor grows the lists one instance at a time.
    void reserve(size_t count, size_t group_size) {
        list.resize(count);
        members.resize(count * group_size);
    }
    // The k-th instance (made, with room for its members, if beyond the count reserved).
    Instance& at(int k, size_t group_size) {
        const auto n = static_cast<size_t>(k) + 1;
        if (list.size() < n) {
            list.resize(n);
            members.resize(n * group_size);
        }
        return list[static_cast<size_t>(k)];
    }
    void join(int k, size_t group_size, Member m) {
        Instance& inst = list[static_cast<size_t>(k)];
        // More posts than members is a malformed program (the validator names it): not stored.
        if (static_cast<size_t>(inst.arrived) < group_size) members[static_cast<size_t>(k) * group_size + static_cast<size_t>(inst.arrived)] = m;
        ++inst.arrived;
    }
    const Member* membersOf(int k, size_t group_size) const { return members.data() + static_cast<size_t>(k) * group_size; }
};

struct StreamState {
    size_t pc = 0;
    size_t last_compute_pc = 0;
    bool inline_arrived = false;   // registered at the in-line instruction at pc
    int inline_instance = 0;
    double compute_free = 0;       // when the compute stream is idle again
    double last_compute_end = 0;   // end of the latest compute instruction issued
    double last_compute_start = 0;
    bool last_compute_was_step = false;
    std::vector<size_t> pending_recvs;
    std::vector<std::pair<int, int>> pending_gathers;  // all-gathers (group, instance) the next compute waits for
    double collective_free = 0;
    std::deque<std::pair<int, int>> collective_queue;  // posted, unresolved: (group, instance)
    int collectives_unresolved = 0;
};

class Executor {
public:
    Executor(const Program& p, const ExecutionDurations& d, const std::vector<bool>& runs) : program_(p), durations_(d) {
        const size_t n = p.streams.size();
        runs_ = runs.empty() ? std::vector<bool>(n, true) : runs;
        runs_.resize(n, false);
        // Each group's members that run: those its collectives wait for (a member without a
        // stream counts: the validator names it).
        group_size_.resize(p.groups.size());
        for (size_t g = 0; g < p.groups.size(); ++g) group_size_[g] = p.groups[g].size();
        if (!runs.empty()) {
            std::unordered_map<int, size_t> stream_of_device;
            for (size_t s = 0; s < n; ++s) stream_of_device.emplace(p.devices[s], s);
            for (size_t g = 0; g < p.groups.size(); ++g)
                for (int dev : p.groups[g]) {
                    const auto it = stream_of_device.find(dev);
                    if (it != stream_of_device.end() && !runs_[it->second]) --group_size_[g];
                }
        }
        state_.resize(n);
        result_.timing.resize(n);
        for (size_t s = 0; s < n; ++s)
            if (runs_[s]) result_.timing[s].resize(p.streams[s].size());  // the others: the caller's to fill
        posted_per_group_.assign(p.groups.size(), std::vector<int>(n, 0));
        instances_.resize(p.groups.size());
        inline_posted_.assign(p.groups.size(), std::vector<int>(n, 0));
        inline_instances_.resize(p.groups.size());
        // Each group's instances: as many as the stream posting the most of them.
        std::vector<std::vector<size_t>> collectives(p.groups.size(), std::vector<size_t>(n, 0)), inlines = collectives;
        size_t sends = 0;
        for (size_t s = 0; s < n; ++s)
            for (const Instr& in : p.streams[s]) {
                sends += isSend(in.kind) ? 1 : 0;
                if (in.group < 0 || static_cast<size_t>(in.group) >= p.groups.size()) continue;  // the validator names it
                if (isCollective(in.kind)) ++collectives[static_cast<size_t>(in.group)][s];
                else if (isInline(in.kind)) ++inlines[static_cast<size_t>(in.group)][s];
            }
        for (size_t g = 0; g < p.groups.size() && n > 0; ++g) {
            instances_[g].reserve(*std::max_element(collectives[g].begin(), collectives[g].end()), group_size_[g]);
            inline_instances_[g].reserve(*std::max_element(inlines[g].begin(), inlines[g].end()), group_size_[g]);
        }
        sends_.reserve(sends);
    }

    ExecutionResult run() {
        bool progress = true;
        while (progress) {
            progress = false;
            for (size_t s = 0; s < state_.size(); ++s)
                if (runs_[s]) progress |= advance(static_cast<int>(s));
            progress |= resolveCollectives();
        }
        for (size_t s = 0; s < state_.size(); ++s) {
            if (runs_[s] && state_[s].pc < program_.streams[s].size()) {
                result_.finished = false;
                result_.stuck.push_back(describeBlocked(static_cast<int>(s)));
            }
        }
        return std::move(result_);
    }

private:
    // Issues as many instructions of stream s as possible; true if any was issued.
    bool advance(int s) {
        StreamState& st = state_[static_cast<size_t>(s)];
        const auto& stream = program_.streams[static_cast<size_t>(s)];
        const int device = program_.devices[static_cast<size_t>(s)];
        bool issued = false;
        while (st.pc < stream.size()) {
            const Instr& in = stream[st.pc];
            InstrTiming& t = result_.timing[static_cast<size_t>(s)][st.pc];
            if (isRecv(in.kind)) {
                st.pending_recvs.push_back(st.pc);
            } else if (isSend(in.kind)) {
                const uint64_t key = p2pKey(in.kind == InstrKind::SendGrad, in.segment, in.mb, device, in.peer);
                const uint64_t link = (static_cast<uint64_t>(device) << 32) | static_cast<uint32_t>(in.peer);
                double& link_free = link_free_[link];
                t.start = std::max(st.last_compute_end, link_free);
                t.end = t.start + durations_.transfer(in, device, in.peer);
                link_free = t.end;
                sends_[key] = {t.start, t.end};
            } else if (isCollective(in.kind)) {
                post(s, in);
            } else if (isInline(in.kind)) {
                if (!inlineCollectives(s, in)) break;
            } else {
                if (!tryCompute(s, in, t)) break;
            }
            ++st.pc;
            issued = true;
        }
        return issued;
    }

    bool tryCompute(int s, const Instr& in, InstrTiming& t) {
        StreamState& st = state_[static_cast<size_t>(s)];
        const int device = program_.devices[static_cast<size_t>(s)];
        double ready = st.compute_free;
        for (size_t idx : st.pending_recvs) {
            const Instr& r = program_.streams[static_cast<size_t>(s)][idx];
            const auto it = sends_.find(p2pKey(r.kind == InstrKind::RecvGrad, r.segment, r.mb, r.peer, device));
            if (it == sends_.end()) return false;
            ready = std::max(ready, it->second.end);
        }
        if (in.kind == InstrKind::OptimizerStep) {
            if (st.collectives_unresolved > 0) return false;
            ready = std::max(ready, st.collective_free);
        }
        for (const auto& [g, k] : st.pending_gathers) {
            const CollectiveInstance& inst = instances_[static_cast<size_t>(g)].list[static_cast<size_t>(k)];
            if (!inst.resolved) return false;
            ready = std::max(ready, inst.end);
        }
        st.pending_gathers.clear();
        for (size_t idx : st.pending_recvs) {
            const Instr& r = program_.streams[static_cast<size_t>(s)][idx];
            const Transfer& x = sends_[p2pKey(r.kind == InstrKind::RecvGrad, r.segment, r.mb, r.peer, device)];
            result_.timing[static_cast<size_t>(s)][idx] = {x.start, x.end};
        }
        st.pending_recvs.clear();
        t.start = ready;
        t.end = ready + durations_.compute(s, in);
        st.last_compute_pc = st.pc;
        st.compute_free = t.end;
        st.last_compute_end = t.end;
        st.last_compute_start = t.start;
        st.last_compute_was_step = in.kind == InstrKind::OptimizerStep;
        return true;
    }

    // A TensorParallel or ZeroGather instruction: the members of its group wait for each
    // other after the compute before it, run its collectives together, and only then go on.
    // True once done.
    bool inlineCollectives(int s, const Instr& in) {
        StreamState& st = state_[static_cast<size_t>(s)];
        const auto g = static_cast<size_t>(in.group);
        if (in.group < 0 || g >= program_.groups.size()) return false;  // the validator names it
        const size_t size = group_size_[g];
        auto& group = inline_instances_[g];
        if (!st.inline_arrived) {
            const int k = inline_posted_[g][static_cast<size_t>(s)]++;
            InlineInstance& inst = group.at(k, size);
            group.join(k, size, {s, static_cast<uint32_t>(st.pc)});
            inst.ready = std::max(inst.ready, st.compute_free);
            st.inline_arrived = true;
            st.inline_instance = k;
        }
        InlineInstance& inst = group.list[static_cast<size_t>(st.inline_instance)];
        if (!inst.resolved) {
            if (static_cast<size_t>(inst.arrived) < size) return false;
            double duration = 0;
            if (isZeroGather(in.kind)) duration = durations_.zero_gather ? durations_.zero_gather(s, in) : 0.0;
            else duration = durations_.tensor_parallel ? durations_.tensor_parallel(s, in) : 0.0;
            const double end = inst.ready + duration;
            const Member* members = group.membersOf(st.inline_instance, size);
            for (size_t i = 0; i < size; ++i) {
                const auto [m, idx] = members[i];
                StreamState& ms = state_[static_cast<size_t>(m)];
                result_.timing[static_cast<size_t>(m)][idx] = {inst.ready, end};
                result_.timing[static_cast<size_t>(m)][ms.last_compute_pc].end = end;  // the unit ends with its collectives
                ms.compute_free = ms.last_compute_end = end;
            }
            inst.resolved = true;
        }
        st.inline_arrived = false;
        return true;
    }

    void post(int s, const Instr& in) {
        StreamState& st = state_[static_cast<size_t>(s)];
        const int k = posted_per_group_[static_cast<size_t>(in.group)][static_cast<size_t>(s)]++;
        const size_t size = group_size_[static_cast<size_t>(in.group)];
        auto& group = instances_[static_cast<size_t>(in.group)];
        CollectiveInstance& inst = group.at(k, size);
        group.join(k, size, {s, static_cast<uint32_t>(st.pc)});
        // An all-gather prefetches parameters while the compute before it runs; after the
        // optimizer step it gathers the updated shards.
        const bool prefetch = in.kind == InstrKind::AllGather && !st.last_compute_was_step;
        inst.ready = std::max(inst.ready, prefetch ? st.last_compute_start : st.last_compute_end);
        if (in.kind == InstrKind::AllGather) st.pending_gathers.emplace_back(in.group, k);
        st.collective_queue.emplace_back(in.group, k);
        ++st.collectives_unresolved;
    }

    // Starts every collective whose members have all posted it and have no earlier
    // collective outstanding (each device's collectives run in program order).
    bool resolveCollectives() {
        bool any = false;
        bool changed = true;
        while (changed) {
            changed = false;
            for (size_t s = 0; s < state_.size(); ++s) {
                if (state_[s].collective_queue.empty()) continue;
                const auto [g, k] = state_[s].collective_queue.front();
                const size_t size = group_size_[static_cast<size_t>(g)];
                const auto& group = instances_[static_cast<size_t>(g)];
                CollectiveInstance& inst = instances_[static_cast<size_t>(g)].list[static_cast<size_t>(k)];
                if (static_cast<size_t>(inst.arrived) < size) continue;
                const Member* const first = group.membersOf(k, size);
                const Member* const last = first + size;
                // Compared as a pair: clang 14 cannot capture structured bindings in a lambda.
                const auto head = state_[s].collective_queue.front();
                const bool heads = std::all_of(first, last, [&](const Member& m) {
                    const auto& q = state_[static_cast<size_t>(m.first)].collective_queue;
                    return !q.empty() && q.front() == head;
                });
                if (!heads) continue;
                double start = inst.ready;
                for (const Member* m = first; m != last; ++m) start = std::max(start, state_[static_cast<size_t>(m->first)].collective_free);
                const Instr& in = program_.streams[static_cast<size_t>(first->first)][first->second];
                const double end = start + durations_.collective(first->first, in);
                for (const Member* mp = first; mp != last; ++mp) {
                    const Member& m = *mp;
                    StreamState& ms = state_[static_cast<size_t>(m.first)];
                    result_.timing[static_cast<size_t>(m.first)][m.second] = {start, end};
                    ms.collective_free = end;
                    ms.collective_queue.pop_front();
                    --ms.collectives_unresolved;
                }
                inst.resolved = true;
                inst.end = end;
                changed = any = true;
            }
        }
        return any;
    }

    std::string describeBlocked(int s) const {
        const StreamState& st = state_[static_cast<size_t>(s)];
        const int device = program_.devices[static_cast<size_t>(s)];
        const Instr& in = program_.streams[static_cast<size_t>(s)][st.pc];
        std::string why = "device " + std::to_string(device) + " blocked at instruction " + std::to_string(st.pc) +
                          " (" + in.str() + ")";
        for (size_t idx : st.pending_recvs) {
            const Instr& r = program_.streams[static_cast<size_t>(s)][idx];
            if (!sends_.count(p2pKey(r.kind == InstrKind::RecvGrad, r.segment, r.mb, r.peer, device)))
                why += ", waiting for " + r.str() + " from device " + std::to_string(r.peer);
        }
        if (in.kind == InstrKind::OptimizerStep && st.collectives_unresolved > 0)
            why += ", waiting for " + std::to_string(st.collectives_unresolved) + " collective(s)";
        if (!st.pending_gathers.empty()) why += ", waiting for its parameters' all-gathers";
        if (st.inline_arrived)
            why += ", waiting for the other members of " + std::string(isZeroGather(in.kind) ? "data-parallel" : "tensor-parallel") + " group " +
                   std::to_string(in.group);
        return why;
    }

    const Program& program_;
    const ExecutionDurations& durations_;
    std::vector<bool> runs_;          // by stream: run (the others are left untimed)
    std::vector<size_t> group_size_;  // by group: members that run
    std::vector<StreamState> state_;
    ExecutionResult result_;
    std::unordered_map<uint64_t, Transfer> sends_;
    std::unordered_map<uint64_t, double> link_free_;
    std::vector<std::vector<int>> posted_per_group_;  // [group][stream] collectives posted
    std::vector<GroupInstances<CollectiveInstance>> instances_;
    std::vector<std::vector<int>> inline_posted_;  // [group][stream] TensorParallel and ZeroGather instructions reached
    std::vector<GroupInstances<InlineInstance>> inline_instances_;
};

}  // namespace

ExecutionResult execute(const Program& program, const ExecutionDurations& durations, const std::vector<bool>& runs) {
    return Executor(program, durations, runs).run();
}

}  // namespace hippie
