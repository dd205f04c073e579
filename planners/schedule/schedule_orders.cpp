#include "planners/schedule/schedule_orders.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <stdexcept>

namespace hippie {

namespace {

Instr compute(InstrKind kind, int segment, int mb) {
    Instr in;
    in.kind = kind;
    in.segment = segment;
    in.mb = mb;
    return in;
}

// PipeDream-flush: position i runs min(pp - i - 1, m) warm-up forwards, then alternates one
// forward and one backward, then drains the remaining backwards. It keeps at most
// min(pp - i, m) micro-batches' activations.
std::vector<Instr> oneFOneB(int i, int pp, int m) {
    std::vector<Instr> out;
    const int warm = std::min(pp - i - 1, m);
    for (int k = 0; k < warm; ++k) out.push_back(compute(InstrKind::Forward, i, k));
    for (int k = 0; k < m - warm; ++k) {
        out.push_back(compute(InstrKind::Forward, i, warm + k));
        out.push_back(compute(InstrKind::Backward, i, k));
    }
    for (int k = m - warm; k < m; ++k) out.push_back(compute(InstrKind::Backward, i, k));
    return out;
}

// Megatron-LM's interleaved 1F1B: v model chunks per device, micro-batches taken in groups
// of pp per chunk. Requires m % pp == 0.
std::vector<Instr> interleaved(int i, int pp, int v, int m) {
    const int total = m * v;
    const int group = pp * v;
    auto mbOf = [&](int k) { return (k / group) * pp + k % pp; };
    auto chunkOf = [&](int k, bool forward) {
        const int c = (k % group) / pp;
        return forward ? c : v - 1 - c;
    };
    auto fwd = [&](int k) { return compute(InstrKind::Forward, chunkOf(k, true) * pp + i, mbOf(k)); };
    auto bwd = [&](int k) { return compute(InstrKind::Backward, chunkOf(k, false) * pp + i, mbOf(k)); };
    std::vector<Instr> out;
    const int warm = std::min((pp - i - 1) * 2 + (v - 1) * pp, total);
    for (int k = 0; k < warm; ++k) out.push_back(fwd(k));
    for (int k = 0; k < total - warm; ++k) {
        out.push_back(fwd(warm + k));
        out.push_back(bwd(k));
    }
    for (int k = total - warm; k < total; ++k) out.push_back(bwd(k));
    return out;
}

// Zero-bubble ZB-H1 (Qi et al., 2023): backward split into input (B) and weight (W)
// gradients. Built by a greedy list schedule in unit time steps: a position prefers B (the
// previous stage waits for it), then F while at most pp - i micro-batches are between F and
// B (1F1B's activation bound), then a pending W. Weight gradients may lag by up to pp - 1
// micro-batches, holding only the inputs W needs; they fill the drain, which brings the
// bubble from (pp-1)(F+B+W) down to (pp-1)(F+B-W).
std::vector<std::vector<Instr>> zeroBubbleH1(int pp, int m) {
    struct Position {
        int next_f = 0, next_b = 0;
        std::deque<int> pending_w;
        int between_f_and_b = 0;
        int between_f_and_w = 0;
        std::vector<int> f_done_at, b_done_at;  // per micro-batch: time step when finished
        std::vector<Instr> order;
    };
    constexpr int kNotYet = -1;
    std::vector<Position> pos(static_cast<size_t>(pp));
    for (auto& p : pos) {
        p.f_done_at.assign(static_cast<size_t>(m), kNotYet);
        p.b_done_at.assign(static_cast<size_t>(m), kNotYet);
    }
    auto finished = [](int done_at, int t) { return done_at != kNotYet && done_at <= t; };
    int remaining = pp * m * 3;
    int last_move = 0;
    for (int t = 0; remaining > 0; ++t) {
        bool any = false;
        for (int i = 0; i < pp; ++i) {
            Position& p = pos[static_cast<size_t>(i)];
            const bool last = i == pp - 1;
            const int k_b = p.next_b;
            const bool b_ready = k_b < p.next_f &&
                                 (last ? finished(p.f_done_at[static_cast<size_t>(k_b)], t)
                                       : finished(pos[static_cast<size_t>(i + 1)].b_done_at[static_cast<size_t>(k_b)], t));
            const int k_f = p.next_f;
            const bool f_ready = k_f < m && p.between_f_and_b < pp - i && p.between_f_and_w < pp - i + pp - 1 &&
                                 (i == 0 || finished(pos[static_cast<size_t>(i - 1)].f_done_at[static_cast<size_t>(k_f)], t));
            if (b_ready) {
                p.order.push_back(compute(InstrKind::BackwardInput, i, k_b));
                p.b_done_at[static_cast<size_t>(k_b)] = t + 1;
                p.pending_w.push_back(k_b);
                ++p.next_b;
                --p.between_f_and_b;
            } else if (f_ready) {
                p.order.push_back(compute(InstrKind::Forward, i, k_f));
                p.f_done_at[static_cast<size_t>(k_f)] = t + 1;
                ++p.between_f_and_b;
                ++p.between_f_and_w;
                ++p.next_f;
            } else if (!p.pending_w.empty()) {
                p.order.push_back(compute(InstrKind::BackwardWeight, i, p.pending_w.front()));
                p.pending_w.pop_front();
                --p.between_f_and_w;
            } else {
                continue;
            }
            --remaining;
            any = true;
        }
        // Work started at t finishes at t + 1, so a step with no move after one with none
        // means nothing will ever move: a bug in the rules above, not a user error.
        if (any) last_move = t;
        else if (t - last_move > 1) throw std::logic_error("zb-h1 order generation stalled");
    }
    std::vector<std::vector<Instr>> out;
    for (auto& p : pos) out.push_back(std::move(p.order));
    return out;
}

}  // namespace

std::vector<Instr> fillDrainOrder(const std::vector<int>& segments, int micro_batches) {
    std::vector<Instr> out;
    for (int mb = 0; mb < micro_batches; ++mb)
        for (int s : segments) out.push_back(compute(InstrKind::Forward, s, mb));
    for (int mb = micro_batches - 1; mb >= 0; --mb)
        for (auto it = segments.rbegin(); it != segments.rend(); ++it) out.push_back(compute(InstrKind::Backward, *it, mb));
    return out;
}

std::vector<std::vector<Instr>> pipelineOrders(ScheduleKind kind, int pp, int virtual_stages, int micro_batches) {
    if (kind == ScheduleKind::ZeroBubbleH1) return zeroBubbleH1(pp, micro_batches);
    std::vector<std::vector<Instr>> out;
    for (int i = 0; i < pp; ++i) {
        switch (kind) {
        case ScheduleKind::GPipe: out.push_back(fillDrainOrder({i}, micro_batches)); break;
        case ScheduleKind::OneFOneB:
        case ScheduleKind::Hippie: out.push_back(oneFOneB(i, pp, micro_batches)); break;
        case ScheduleKind::Interleaved: out.push_back(interleaved(i, pp, virtual_stages, micro_batches)); break;
        case ScheduleKind::ZeroBubbleH1: break;
        }
    }
    return out;
}

std::vector<std::vector<std::vector<Instr>>> roundRobinOrders(ScheduleKind kind, const std::vector<int>& replicas, int total) {
    if (kind != ScheduleKind::GPipe && kind != ScheduleKind::OneFOneB && kind != ScheduleKind::Hippie)
        throw std::invalid_argument(std::string("per-stage replication runs gpipe, 1f1b or hippie, not ") + toString(kind));
    const size_t pp = replicas.size();
    std::vector<int64_t> ahead(pp, 0);  // G_s
    for (size_t s = pp - 1; s-- > 0;) ahead[s] = ahead[s + 1] + std::max(replicas[s], replicas[s + 1]);
    std::vector<std::vector<std::vector<Instr>>> out(pp);
    for (size_t s = 0; s < pp; ++s) {
        const int r = replicas[s];
        const int segment = static_cast<int>(s);
        for (int j = 0; j < r; ++j) {
            std::vector<Instr> order;
            if (kind == ScheduleKind::GPipe) {
                for (int m = j; m < total; m += r) order.push_back(compute(InstrKind::Forward, segment, m));
                for (int m = j + (total - 1 - j) / r * r; m >= j; m -= r) order.push_back(compute(InstrKind::Backward, segment, m));
            } else {
                int next_backward = j;
                for (int m = j; m < total; m += r) {
                    order.push_back(compute(InstrKind::Forward, segment, m));
                    // Backwards whose forward horizon m + G_s the next forward would pass.
                    const int64_t next_forward = m + r < total ? int64_t{m} + r : std::numeric_limits<int64_t>::max();
                    while (next_backward <= m && next_forward > next_backward + ahead[s]) {
                        order.push_back(compute(InstrKind::Backward, segment, next_backward));
                        next_backward += r;
                    }
                }
            }
            out[s].push_back(std::move(order));
        }
    }
    return out;
}

}  // namespace hippie
