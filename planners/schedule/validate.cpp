#include "planners/schedule/validate.h"

#include <algorithm>
#include <map>
#include <iterator>
#include <limits>
#include <set>
#include <tuple>

#include "planners/cost/cost_model.h"
#include "planners/schedule/execute.h"
#include "planners/schedule/zero_gathers.h"

namespace hippie {

namespace {

using P2PKey = std::tuple<bool, int, int, int, int>;  // grad?, segment, mb, from, to

// The (bucket, micro-batch) pairs whose gradients a stream has computed. A backward of a whole
// segment readies every bucket of it (but those of tied weights) and is kept as (segment, mb):
// as (bucket, mb) pairs the set grew with micro-batches x buckets, and validating 65,536
// micro-batches of gpt3-1.3b's 200 buckets took minutes.
struct MicroBatchGrads {
    std::set<std::pair<int, int>> buckets;   // (bucket, mb): a backward of that bucket alone
    std::set<std::pair<int, int>> segments;  // (segment, mb): a backward of the whole segment
    bool has(int bucket, const Bucket& b, int mb) const {
        return buckets.count({bucket, mb}) > 0 || (b.tied_segment < 0 && segments.count({b.segment, mb}) > 0);
    }
};

class Validator {
public:
    Validator(const Program& p, const Graph& g) : p_(p), g_(g) {
        op_segment_.assign(g.ops.size(), -1);
        for (size_t s = 0; s < p.segments.size(); ++s)
            for (int op : p.segments[s].ops) op_segment_[static_cast<size_t>(op)] = static_cast<int>(s);
        producers_.resize(p.segments.size());
        consumers_.resize(p.segments.size());
        for (const Edge& e : g.edges) {
            const int a = op_segment_[static_cast<size_t>(e.src)];
            const int b = op_segment_[static_cast<size_t>(e.dst)];
            if (a < 0 || b < 0 || a == b) continue;
            consumers_[static_cast<size_t>(a)].insert(b);
            producers_[static_cast<size_t>(b)].insert(a);
        }
    }

    ValidationResult run() {
        checkShape();
        if (!r_.ok) return r_;
        checkSegmentsCoverOps();
        checkP2PMatching();
        for (size_t s = 0; s < p_.streams.size(); ++s) checkStream(static_cast<int>(s));
        checkCollectives();
        checkInlineGroups();
        if (r_.ok) checkFinishes();
        return r_;
    }

private:
    void problem(const std::string& what) {
        r_.ok = false;
        r_.problems.push_back(what);
    }

    std::string at(int s, size_t i) const {
        return "device " + std::to_string(p_.devices[static_cast<size_t>(s)]) + " instruction " + std::to_string(i) + " (" +
               p_.streams[static_cast<size_t>(s)][i].str() + ")";
    }

    void checkShape() {
        if (p_.streams.size() != p_.devices.size()) problem("streams and devices differ in number");
        if (std::set<int>(p_.devices.begin(), p_.devices.end()).size() != p_.devices.size()) problem("a device has two streams");
        if (p_.segment_devices.size() != p_.segments.size()) problem("segment_devices does not match segments");
        const int lanes = p_.pipelines * std::max(p_.tp, 1);
        if (p_.round_robin) {
            if (p_.tp > 1) problem("per-stage replication (round-robin micro-batches) with tensor parallelism");
            for (const auto& devs : p_.segment_devices)
                if (devs.empty() || static_cast<int>(devs.size()) > lanes)
                    problem("a segment has " + std::to_string(devs.size()) + " replicas; per-stage replication gives each 1.." +
                            std::to_string(lanes));
            return;
        }
        if (!p_.segment_tp.empty() && p_.segment_tp.size() != p_.segments.size())
            problem("segment_tp has " + std::to_string(p_.segment_tp.size()) + " degrees for " + std::to_string(p_.segments.size()) + " segments");
        for (size_t seg = 0; seg < p_.segment_devices.size(); ++seg)
            if (static_cast<int>(p_.segment_devices[seg].size()) != p_.pipelines * p_.tpOf(static_cast<int>(seg)))
                problem("segment " + std::to_string(seg) + " is not placed once per pipeline" +
                        std::string(p_.tp > 1 ? " and tensor-parallel rank" : ""));
    }

    void checkSegmentsCoverOps() {
        for (size_t op = 0; op < op_segment_.size(); ++op)
            if (op_segment_[op] < 0) problem("op " + std::to_string(op) + " ('" + g_.ops[op].name + "') is in no segment");
    }

    void checkP2PMatching() {
        std::map<P2PKey, std::pair<int, int64_t>> sends, recvs;  // count, bytes
        for (size_t s = 0; s < p_.streams.size(); ++s) {
            const int dev = p_.devices[s];
            for (const Instr& in : p_.streams[s]) {
                if (isSend(in.kind)) {
                    auto& e = sends[{in.kind == InstrKind::SendGrad, in.segment, in.mb, dev, in.peer}];
                    ++e.first;
                    e.second = in.bytes;
                } else if (isRecv(in.kind)) {
                    auto& e = recvs[{in.kind == InstrKind::RecvGrad, in.segment, in.mb, in.peer, dev}];
                    ++e.first;
                    e.second = in.bytes;
                }
            }
        }
        auto name = [](const P2PKey& k) {
            return std::string(std::get<0>(k) ? "gradient" : "activation") + " of segment " + std::to_string(std::get<1>(k)) +
                   " micro-batch " + std::to_string(std::get<2>(k)) + " from device " + std::to_string(std::get<3>(k)) +
                   " to device " + std::to_string(std::get<4>(k));
        };
        for (const auto& [k, v] : sends) {
            if (v.first > 1) problem(name(k) + " is sent " + std::to_string(v.first) + " times");
            const auto it = recvs.find(k);
            if (it == recvs.end()) problem(name(k) + " is sent but never received");
            else if (it->second.second != v.second) problem(name(k) + " is sent and received with different sizes");
        }
        for (const auto& [k, v] : recvs) {
            if (v.first > 1) problem(name(k) + " is received " + std::to_string(v.first) + " times");
            if (!sends.count(k)) problem(name(k) + " is received but never sent");
        }
    }

    int replicaOf(int segment, int device) const {
        const auto& devs = p_.segment_devices[static_cast<size_t>(segment)];
        const auto it = std::find(devs.begin(), devs.end(), device);
        return it == devs.end() ? -1 : static_cast<int>(it - devs.begin());
    }

    // How many micro-batches lane `lane` of `segment` runs, and the last of them.
    std::pair<int, int> countAndLast(int segment, int lane) const {
        if (!p_.round_robin) return {p_.micro_batches, p_.micro_batches - 1};
        const int64_t r = p_.replicasOf(segment), total = int64_t{p_.pipelines} * p_.micro_batches;
        const int64_t count = lane < total ? (total - lane + r - 1) / r : 0;
        return {static_cast<int>(count), static_cast<int>(lane + (count - 1) * r)};
    }

    int bucketsOf(int segment) const {
        return static_cast<int>(std::count_if(p_.buckets.begin(), p_.buckets.end(),
                                              [&](const Bucket& b) { return b.segment == segment && b.tied_segment < 0; }));
    }

    // Forward before backward, every micro-batch of every hosted segment, inputs present
    // before use, sends after their producers.
    void checkStream(int s) {
        const int dev = p_.devices[static_cast<size_t>(s)];
        const auto& stream = p_.streams[static_cast<size_t>(s)];
        std::set<std::pair<int, int>> forwarded, input_grad_done, weight_grad_done;
        std::map<std::pair<int, int>, int> parts;
        std::set<P2PKey> received;
        std::set<int> grads_ready_buckets;
        MicroBatchGrads bucket_mb_ready;  // that micro-batch's gradients of a bucket computed
        bool stepped = false;
        for (size_t i = 0; i < stream.size(); ++i) {
            const Instr& in = stream[i];
            if (isRecv(in.kind)) {
                received.insert({in.kind == InstrKind::RecvGrad, in.segment, in.mb, in.peer, dev});
                continue;
            }
            if (isSend(in.kind)) continue;  // checked with the compute instruction it follows
            if (isTensorParallel(in.kind)) {
                checkTensorParallel(s, i);
                continue;
            }
            if (isZeroGather(in.kind)) {
                checkZeroGather(s, i);
                continue;
            }
            if (isCollective(in.kind) || in.kind == InstrKind::OptimizerStep) {
                checkCollective(s, i, grads_ready_buckets, bucket_mb_ready, stepped);
                if (in.kind == InstrKind::OptimizerStep) stepped = true;
                continue;
            }
            const int r = replicaOf(in.segment, dev);
            if (r < 0) {
                problem(at(s, i) + ": segment " + std::to_string(in.segment) + " is not placed on this device");
                continue;
            }
            const auto key = std::make_pair(in.segment, in.mb);
            switch (in.kind) {
            case InstrKind::Forward:
                if (!forwarded.insert(key).second) problem(at(s, i) + ": forward runs twice");
                for (int prod : producers_[static_cast<size_t>(in.segment)]) {
                    const int from = p_.deviceFor(prod, in.segment, r, in.mb);
                    const bool have = from == dev ? forwarded.count({prod, in.mb}) > 0 : received.count({false, prod, in.mb, from, dev}) > 0;
                    if (!have) problem(at(s, i) + ": input from segment " + std::to_string(prod) + " is not there yet");
                }
                break;
            case InstrKind::Recompute:
                if (!forwarded.count(key)) problem(at(s, i) + ": recompute before forward");
                break;
            case InstrKind::Backward:
            case InstrKind::BackwardInput: {
                if (!forwarded.count(key)) problem(at(s, i) + ": backward before forward");
                if (!parts.count(key)) {
                    for (int cons : consumers_[static_cast<size_t>(in.segment)]) {
                        const int from = p_.deviceFor(cons, in.segment, r, in.mb);
                        const bool have = from == dev ? input_grad_done.count({cons, in.mb}) > 0
                                                      : received.count({true, in.segment, in.mb, from, dev}) > 0;
                        if (!have) problem(at(s, i) + ": output gradient from segment " + std::to_string(cons) + " is not there yet");
                    }
                }
                const int n = ++parts[key];
                const bool whole = in.kind == InstrKind::BackwardInput || in.bucket < 0 || n == bucketsOf(in.segment);
                if (in.kind == InstrKind::Backward && in.bucket >= 0) grads_ready_buckets.insert(in.bucket);
                if (in.kind == InstrKind::Backward && in.bucket >= 0) bucket_mb_ready.buckets.insert({in.bucket, in.mb});
                if (in.kind == InstrKind::Backward && in.bucket < 0) markBucketsOfMicroBatch(in.segment, in.mb, bucket_mb_ready);
                if (whole && !input_grad_done.insert(key).second) problem(at(s, i) + ": backward runs twice");
                if (in.kind == InstrKind::Backward && whole) markWeightGrads(in.segment, r, grads_ready_buckets, weight_grad_done, key);
                break;
            }
            case InstrKind::BackwardWeight:
                if (!input_grad_done.count(key)) problem(at(s, i) + ": weight gradient before input gradient");
                markBucketsOfMicroBatch(in.segment, in.mb, bucket_mb_ready);
                markWeightGrads(in.segment, r, grads_ready_buckets, weight_grad_done, key);
                break;
            default: break;
            }
            checkHasItsTensorParallel(s, i);
            checkHasItsZeroGather(s, i);
            // Sends that follow this compute instruction (and its tensor-parallel collectives and
            // ZeRO-3 gathers) must carry what it produced.
            size_t after = i + 1;
            while (after < stream.size() && isInline(stream[after].kind)) ++after;
            for (size_t j = after; j < stream.size() && isSend(stream[j].kind); ++j) {
                const Instr& snd = stream[j];
                const bool ok = snd.kind == InstrKind::SendActivation ? forwarded.count({snd.segment, snd.mb}) > 0
                                                                      : input_grad_done.count(key) > 0 && snd.mb == in.mb;
                if (!ok) problem(at(s, j) + ": sends a tensor that is not computed yet");
            }
        }
        for (size_t seg = 0; seg < p_.segments.size(); ++seg) {
            const int lane = replicaOf(static_cast<int>(seg), dev);
            if (lane < 0) continue;
            for (int mb : p_.microBatchesOf(static_cast<int>(seg), lane)) {
                const auto key = std::make_pair(static_cast<int>(seg), mb);
                if (!forwarded.count(key) || !input_grad_done.count(key) || !weight_grad_done.count(key))
                    problem("device " + std::to_string(dev) + ": segment " + std::to_string(seg) + " micro-batch " +
                            std::to_string(mb) + " does not run forward and a complete backward");
            }
        }
    }

    // The tensor-parallel collectives a compute instruction runs, from the graph: (count, bytes).
    std::pair<int, int64_t> expectedTensorParallel(const Instr& in) {
        if (p_.tp <= 1 || in.segment < 0 || in.segment >= static_cast<int>(p_.segments.size())) return {0, 0};
        const int degree = p_.tpOf(in.segment);
        if (degree <= 1) return {0, 0};
        const std::vector<OpTensorParallelTraffic>& by_op = tp_traffic_.of(degree);
        const std::vector<int>* ops = &p_.segments[static_cast<size_t>(in.segment)].ops;
        if (in.kind == InstrKind::Backward && in.bucket >= 0 && in.bucket < static_cast<int>(p_.buckets.size()))
            ops = &p_.buckets[static_cast<size_t>(in.bucket)].ops;
        const bool backward = in.kind == InstrKind::Backward || in.kind == InstrKind::BackwardInput;
        if (!backward && in.kind != InstrKind::Forward && in.kind != InstrKind::Recompute) return {0, 0};
        std::pair<int, int64_t> t{0, 0};
        for (int op : *ops) {
            if (op < 0 || static_cast<size_t>(op) >= by_op.size()) continue;
            if (in.kind == InstrKind::Recompute && !p_.recomputed(op))
                continue;
            const OpTensorParallelTraffic& o = by_op[static_cast<size_t>(op)];
            t.first += backward ? o.backward : o.forward;
            t.second += backward ? o.backward_bytes : o.forward_bytes;
        }
        return t;
    }

    // A compute instruction whose ops have tensor-parallel collectives is followed by them.
    void checkHasItsTensorParallel(int s, size_t i) {
        if (p_.tp <= 1) return;
        const auto& stream = p_.streams[static_cast<size_t>(s)];
        const auto [count, bytes] = expectedTensorParallel(stream[i]);
        if (count == 0) return;
        const bool follows = i + 1 < stream.size() && isTensorParallel(stream[i + 1].kind);
        if (!follows)
            problem(at(s, i) + ": its ops have " + std::to_string(count) + " tensor-parallel collective(s) of " + std::to_string(bytes) +
                    " bytes, but no TensorParallel instruction follows it");
        else if (stream[i + 1].count != count || stream[i + 1].bytes != bytes)
            problem(at(s, i + 1) + ": lists " + std::to_string(stream[i + 1].count) + " collective(s) of " +
                    std::to_string(stream[i + 1].bytes) + " bytes; the ops of " + stream[i].str() + " have " + std::to_string(count) +
                    " of " + std::to_string(bytes) + " bytes");
    }

    // A TensorParallel instruction: right after the compute it belongs to, in a tp group of
    // this device, of the program's kind of collectives.
    void checkTensorParallel(int s, size_t i) {
        const auto& stream = p_.streams[static_cast<size_t>(s)];
        const Instr& in = stream[i];
        const int dev = p_.devices[static_cast<size_t>(s)];
        if (p_.tp <= 1) {
            problem(at(s, i) + ": tensor-parallel collectives in a program without tensor parallelism (tp 1)");
            return;
        }
        const bool of_ok = in.of == InstrKind::Forward || in.of == InstrKind::Recompute || in.of == InstrKind::Backward ||
                           in.of == InstrKind::BackwardInput;
        if (!of_ok) problem(at(s, i) + ": belongs to a " + toString(in.of) + ", which runs no tensor-parallel collectives");
        const Instr* prev = i > 0 ? &stream[i - 1] : nullptr;
        if (!prev || prev->kind != in.of || prev->segment != in.segment || prev->mb != in.mb)
            problem(at(s, i) + ": does not follow its compute instruction (" + std::string(toString(in.of)) + " of segment " +
                    std::to_string(in.segment) + " micro-batch " + std::to_string(in.mb) + ")" +
                    (prev ? "; it follows " + prev->str() : std::string()));
        if (in.count < 1 || in.bytes < 0) problem(at(s, i) + ": lists " + std::to_string(in.count) + " collectives of " + std::to_string(in.bytes) + " bytes");
        if (in.sequence_parallel != p_.sequence_parallel)
            problem(at(s, i) + std::string(in.sequence_parallel ? ": reduce-scatter + all-gather pairs in a program without sequence parallelism"
                                                                : ": all-reduces in a sequence-parallel program (reduce-scatter + all-gather pairs)"));
        if (in.group < 0 || in.group >= static_cast<int>(p_.groups.size())) {
            problem(at(s, i) + ": names no group of the program");
            return;
        }
        const auto& group = p_.groups[static_cast<size_t>(in.group)];
        const int t = in.segment >= 0 && in.segment < static_cast<int>(p_.segments.size()) ? p_.tpOf(in.segment) : p_.tp;
        if (static_cast<int>(group.size()) != t || std::find(group.begin(), group.end(), dev) == group.end())
            problem(at(s, i) + ": group " + std::to_string(in.group) + " is not a tensor-parallel group of this device (" +
                    std::to_string(t) + " devices including " + std::to_string(dev) + ")");
    }

    // ZeRO-3: a compute instruction that uses parameters is followed (after its tensor-parallel
    // collectives, if any) by the ZeroGather listing its per-layer gathers.
    void checkHasItsZeroGather(int s, size_t i) {
        const auto& stream = p_.streams[static_cast<size_t>(s)];
        const std::vector<int> buckets = zeroGatheredBuckets(p_, g_, stream[i]);
        if (buckets.empty()) return;
        int64_t bytes = 0;
        for (int b : buckets) bytes += p_.buckets[static_cast<size_t>(b)].bytes;
        size_t j = i + 1;
        if (j < stream.size() && isTensorParallel(stream[j].kind)) ++j;
        if (j >= stream.size() || !isZeroGather(stream[j].kind)) {
            problem(at(s, i) + ": ZeRO-3 parameters of segment " + std::to_string(stream[i].segment) + " (" + std::to_string(buckets.size()) +
                    " layer bucket(s), " + std::to_string(bytes) + " bytes) are not all-gathered for it: no ZeroGather follows it");
            return;
        }
        const Instr& z = stream[j];
        if (z.count != static_cast<int>(buckets.size()) || z.bytes != bytes)
            problem(at(s, j) + ": lists " + std::to_string(z.count) + " gather(s) of " + std::to_string(z.bytes) + " bytes; " + stream[i].str() +
                    " uses " + std::to_string(buckets.size()) + " bucket(s) of " + std::to_string(bytes) + " bytes");
    }

    // A ZeroGather instruction: under ZeRO-3, right after its compute instruction (or that
    // compute's TensorParallel), over the data-parallel group of its segment on this device.
    void checkZeroGather(int s, size_t i) {
        const auto& stream = p_.streams[static_cast<size_t>(s)];
        const Instr& in = stream[i];
        const int dev = p_.devices[static_cast<size_t>(s)];
        if (p_.zero_stage < 3) {
            problem(at(s, i) + ": per-layer parameter gathers under ZeRO stage " + std::to_string(p_.zero_stage) +
                    ", which keeps whole parameters");
            return;
        }
        size_t c = i;
        if (c > 0 && isTensorParallel(stream[c - 1].kind)) --c;  // its compute's tp collectives come first
        const Instr* prev = c > 0 ? &stream[c - 1] : nullptr;
        if (!prev || prev->kind != in.of || prev->segment != in.segment || prev->mb != in.mb || prev->bucket != in.bucket)
            problem(at(s, i) + ": does not follow its compute instruction (" + std::string(toString(in.of)) + " of segment " +
                    std::to_string(in.segment) + " micro-batch " + std::to_string(in.mb) + ")" + (prev ? "; it follows " + prev->str() : std::string()));
        if (in.count < 1 || in.bytes <= 0) problem(at(s, i) + ": lists " + std::to_string(in.count) + " gathers of " + std::to_string(in.bytes) + " bytes");
        if (in.group < 0 || in.group >= static_cast<int>(p_.groups.size())) {
            problem(at(s, i) + ": names no group of the program");
            return;
        }
        const auto& group = p_.groups[static_cast<size_t>(in.group)];
        if (static_cast<int>(group.size()) != p_.pipelines || std::find(group.begin(), group.end(), dev) == group.end())
            problem(at(s, i) + ": group " + std::to_string(in.group) + " is not a data-parallel group of this device (" +
                    std::to_string(p_.pipelines) + " devices including " + std::to_string(dev) + ")");
    }

    // Every member of a tp group runs the same TensorParallel instructions in the same order,
    // and every member of a data-parallel group the same ZeroGather instructions.
    void checkInlineGroups() {
        using Key = std::tuple<InstrKind, int, int, InstrKind, int64_t, int, bool>;
        std::set<int> named;  // groups some TensorParallel or ZeroGather instruction names
        for (const auto& stream : p_.streams)
            for (const Instr& in : stream)
                if (isInline(in.kind) && in.group >= 0 && in.group < static_cast<int>(p_.groups.size())) named.insert(in.group);
        for (int g : named) {
            std::vector<Key> reference;
            int reference_device = -1;
            for (int dev : p_.groups[static_cast<size_t>(g)]) {
                const int s = p_.streamOf(dev);
                std::vector<Key> seq;
                if (s >= 0)
                    for (const Instr& in : p_.streams[static_cast<size_t>(s)])
                        if (isInline(in.kind) && in.group == g)
                            seq.emplace_back(in.kind, in.segment, in.mb, in.of, in.bytes, in.count, in.sequence_parallel);
                if (reference_device < 0) {
                    reference = seq;
                    reference_device = dev;
                } else if (seq != reference) {
                    problem("group " + std::to_string(g) + ": device " + std::to_string(dev) +
                            " runs a different sequence of tensor-parallel collectives or ZeRO-3 gathers (" + std::to_string(seq.size()) + ") than device " +
                            std::to_string(reference_device) + " (" + std::to_string(reference.size()) + ")");
                }
            }
        }
    }

    // Every bucket of the segment (but those of tied weights) has the micro-batch's gradients.
    static void markBucketsOfMicroBatch(int segment, int mb, MicroBatchGrads& ready) { ready.segments.insert({segment, mb}); }

    // A collective (or the optimizer step) at stream s, position i: the kind fits the plan's
    // ZeRO stage and what it moves exists by then.
    void checkCollective(int s, size_t i, const std::set<int>& grads_ready, const MicroBatchGrads& bucket_mb_ready, bool stepped) {
        const Instr& in = p_.streams[static_cast<size_t>(s)][i];
        if (in.kind == InstrKind::OptimizerStep) return;
        if (in.bucket < 0 || in.bucket >= static_cast<int>(p_.buckets.size()) || in.group < 0 ||
            in.group >= static_cast<int>(p_.groups.size())) {
            problem(at(s, i) + ": names no bucket or group of the program");
            return;
        }
        const std::string b = std::to_string(in.bucket);
        const Bucket& bk = p_.buckets[static_cast<size_t>(in.bucket)];
        switch (in.kind) {
        case InstrKind::AllReduce:
            if (p_.zero_stage >= 2 && bk.tied_segment < 0)
                problem(at(s, i) + ": all-reduce of bucket " + b + " under ZeRO stage " + std::to_string(p_.zero_stage) +
                        ", which reduce-scatters gradients");
            if (!grads_ready.count(in.bucket)) problem(at(s, i) + ": all-reduce of bucket " + b + " before its gradients are computed");
            break;
        case InstrKind::ReduceScatter:
            if (p_.zero_stage < 2) problem(at(s, i) + ": reduce-scatter of bucket " + b + " under ZeRO stage " + std::to_string(p_.zero_stage));
            if (in.mb < 0 ? !grads_ready.count(in.bucket) : !bucket_mb_ready.has(in.bucket, bk, in.mb))
                problem(at(s, i) + ": reduce-scatter of bucket " + b + " before its gradients are computed");
            break;
        case InstrKind::AllGather:
            if (p_.zero_stage < 1) problem(at(s, i) + ": all-gather of bucket " + b + " without ZeRO");
            if (in.mb < 0) {
                if (p_.zero_stage >= 3) problem(at(s, i) + ": ZeRO-3 gathers parameters before use, not after the step");
                if (!stepped) problem(at(s, i) + ": all-gather of bucket " + b + " after the step, but before the optimizer step");
            } else {
                problem(at(s, i) + ": all-gather before use of bucket " + b +
                        (p_.zero_stage >= 3 ? ": ZeRO-3 gathers parameters layer by layer inside each compute (ZeroGather)"
                                            : " under ZeRO stage " + std::to_string(p_.zero_stage) + ", which keeps whole parameters"));
            }
            break;
        default: break;
        }
    }

    void markWeightGrads(int segment, int lane, std::set<int>& buckets_ready, std::set<std::pair<int, int>>& done, std::pair<int, int> key) {
        done.insert(key);
        // Buckets are ready once every micro-batch's weight gradients are in; checked per
        // micro-batch count at the end, so here mark buckets when the last one lands. `done` is
        // ordered by (segment, micro-batch): this segment's entries are one range, counted without
        // walking the others, and only when this micro-batch is the segment's last (mb order).
        const auto first = done.lower_bound({segment, std::numeric_limits<int>::min()});
        const auto last = done.lower_bound({segment + 1, std::numeric_limits<int>::min()});
        const auto [count, last_mb] = countAndLast(segment, lane);
        if (first == last || std::prev(last)->second != last_mb) return;
        if (std::distance(first, last) == count)
            for (size_t b = 0; b < p_.buckets.size(); ++b)
                if (p_.buckets[b].segment == segment || p_.buckets[b].tied_segment == segment) buckets_ready.insert(static_cast<int>(b));
    }

    void checkCollectives() {
        for (size_t g = 0; g < p_.groups.size(); ++g) {
            std::vector<std::tuple<InstrKind, int, int>> reference;
            bool first = true;
            for (int dev : p_.groups[g]) {
                const int s = p_.streamOf(dev);
                std::vector<std::tuple<InstrKind, int, int>> seq;
                if (s >= 0)
                    for (const Instr& in : p_.streams[static_cast<size_t>(s)])
                        if (isCollective(in.kind) && in.group == static_cast<int>(g)) seq.emplace_back(in.kind, in.bucket, in.mb);
                if (first) reference = seq;
                else if (seq != reference)
                    problem("all-reduce group " + std::to_string(g) + ": device " + std::to_string(dev) +
                            " posts a different sequence of collectives than device " + std::to_string(p_.groups[g][0]));
                first = false;
            }
        }
    }

    void checkFinishes() {
        ExecutionDurations unit;
        unit.compute = [](int, const Instr&) { return 1.0; };
        unit.transfer = [](const Instr&, int, int) { return 1.0; };
        unit.collective = [](int, const Instr&) { return 1.0; };
        unit.tensor_parallel = [](int, const Instr&) { return 1.0; };
        unit.zero_gather = [](int, const Instr&) { return 1.0; };
        const ExecutionResult res = execute(p_, unit);
        if (!res.finished) {
            problem("the program deadlocks");
            for (const std::string& s : res.stuck) problem(s);
        }
    }

    const Program& p_;
    const Graph& g_;
    ValidationResult r_;
    std::vector<int> op_segment_;
    std::vector<std::set<int>> producers_, consumers_;
    TensorParallelTrafficByDegree tp_traffic_{g_, p_.sequence_parallel, p_.micro_batch_size};  // computed on first use (tp > 1)
};

}  // namespace

ValidationResult validate(const Program& program, const Graph& graph) { return Validator(program, graph).run(); }

}  // namespace hippie
