#include "app/studio/teaching_narrative.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hippie::studio {

namespace {

constexpr int kRowsDescribed = 4;  // more rows than this would make the text a wall

bool isForward(InstrKind k) { return k == InstrKind::Forward; }
bool isBackward(InstrKind k) { return k == InstrKind::Backward || k == InstrKind::BackwardInput; }

struct RowCounts {
    int forwards = 0, forwards_done = 0;
    int backwards = 0, backwards_started = 0, backwards_done = 0;
    const TraceEvent* running = nullptr;  // compute event covering t
    const TraceEvent* allreduce = nullptr;
    double first_start = -1;
};

RowCounts countRow(const Trace& trace, int row, double t) {
    RowCounts c;
    const int device = trace.devices[static_cast<size_t>(row)];
    for (const TraceEvent& e : trace.events) {
        if (e.device != device) continue;
        if (isCompute(e.kind) && (c.first_start < 0 || e.start_s < c.first_start)) c.first_start = e.start_s;
        if (isForward(e.kind)) {
            ++c.forwards;
            c.forwards_done += e.end_s <= t ? 1 : 0;
        } else if (isBackward(e.kind)) {
            ++c.backwards;
            c.backwards_started += e.start_s <= t ? 1 : 0;
            c.backwards_done += e.end_s <= t ? 1 : 0;
        }
        if (e.start_s <= t && t < e.end_s) {
            if (isCompute(e.kind)) c.running = &e;
            if (e.kind == InstrKind::AllReduce) c.allreduce = &e;
        }
    }
    return c;
}

Phase phaseOf(const RowCounts& c, double t) {
    if (c.first_start < 0 || t < c.first_start) return Phase::Waiting;
    if (c.backwards > 0 && c.backwards_done == c.backwards) return c.running || c.allreduce ? Phase::Finishing : Phase::Done;
    if (c.forwards <= 1) return Phase::Compute;  // no pipeline to warm up or drain
    if (c.backwards_started == 0) return Phase::WarmUp;
    if (c.forwards_done == c.forwards) return Phase::CoolDown;
    return Phase::Steady;
}

std::string describeEvent(const TraceEvent& e) {
    std::ostringstream s;
    switch (e.kind) {
    case InstrKind::Forward: s << "forward"; break;
    case InstrKind::Backward: s << "backward"; break;
    case InstrKind::BackwardInput: s << "input gradient (B)"; break;
    case InstrKind::BackwardWeight: s << "weight gradient (W)"; break;
    case InstrKind::Recompute: s << "recompute"; break;
    case InstrKind::OptimizerStep: s << "optimizer step"; break;
    default: s << toString(e.kind); break;
    }
    if (e.mb >= 0) s << " of micro-batch " << e.mb;
    return s.str();
}

}  // namespace

const char* toString(Phase p) {
    switch (p) {
    case Phase::Waiting: return "waiting";
    case Phase::WarmUp: return "warm-up";
    case Phase::Compute: return "computing";
    case Phase::Steady: return "steady 1F1B";
    case Phase::CoolDown: return "cool-down";
    case Phase::Finishing: return "gradient sync";
    case Phase::Done: return "done";
    }
    return "";
}

Phase phaseAt(const Trace& trace, int row, double t_s) { return phaseOf(countRow(trace, row, t_s), t_s); }

std::string explainMoment(const Trace& trace, double t_s) {
    std::ostringstream out;
    const int rows = static_cast<int>(trace.devices.size());
    std::vector<int> idle;
    int hidden = 0, exposed = 0;
    for (int r = 0; r < rows; ++r) {
        const RowCounts c = countRow(trace, r, t_s);
        const Phase p = phaseOf(c, t_s);
        if (r < kRowsDescribed) {
            out << "GPU " << trace.devices[static_cast<size_t>(r)] << " – " << toString(p);
            if (c.running) out << ": " << describeEvent(*c.running);
            else if (p != Phase::Done) out << ": idle";
            out << ".\n";
        }
        if (!c.running && p != Phase::Done && p != Phase::Finishing) idle.push_back(trace.devices[static_cast<size_t>(r)]);
        if (c.allreduce) (c.running ? hidden : exposed) += 1;
    }
    if (rows > kRowsDescribed) out << "(" << rows - kRowsDescribed << " more GPUs.)\n";
    if (!idle.empty() && static_cast<int>(idle.size()) < rows)
        out << idle.size() << " of " << rows << " GPUs " << (idle.size() == 1 ? "waits" : "wait")
            << " for data from a neighbour stage: this gap is the bubble.\n";
    if (hidden > 0) out << "An all-reduce runs while " << hidden << " GPU(s) still compute: its time is hidden.\n";
    if (exposed > 0) out << "An all-reduce runs with nothing to overlap on " << exposed << " GPU(s): its time is exposed.\n";
    return out.str();
}

double nextEventTime(const Trace& trace, double t_s) {
    double next = INFINITY;
    double end = 0;
    for (const TraceEvent& e : trace.events) {
        end = std::max(end, e.end_s);
        if (!isCompute(e.kind) && e.kind != InstrKind::AllReduce) continue;
        if (e.start_s > t_s) next = std::min(next, e.start_s);
        if (e.end_s > t_s) next = std::min(next, e.end_s);
    }
    return std::isinf(next) ? end : next;
}

double previousEventTime(const Trace& trace, double t_s) {
    double prev = 0;
    for (const TraceEvent& e : trace.events) {
        if (!isCompute(e.kind) && e.kind != InstrKind::AllReduce) continue;
        if (e.start_s < t_s) prev = std::max(prev, e.start_s);
        if (e.end_s < t_s) prev = std::max(prev, e.end_s);
    }
    return prev;
}

}  // namespace hippie::studio
