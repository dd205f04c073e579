#include "widgets/gantt/dependencies.h"

#include <algorithm>

namespace hippie::widgets {

namespace {

// All-reduce, or ZeRO's reduce-scatter: gradients reduced once computed, before the step.
bool reducesGradients(InstrKind k) { return k == InstrKind::AllReduce || k == InstrKind::ReduceScatter; }

bool isBackwardWork(InstrKind k) {
    return k == InstrKind::Backward || k == InstrKind::BackwardInput || k == InstrKind::BackwardWeight;
}
// The transfer kind that carries a compute instruction's input, and the compute kind it feeds.
bool feeds(InstrKind send, InstrKind compute) {
    if (send == InstrKind::SendActivation) return compute == InstrKind::Forward;
    if (send == InstrKind::SendGrad) return compute == InstrKind::Backward || compute == InstrKind::BackwardInput;
    return false;
}
// The compute kind that produces what a send carries.
bool produces(InstrKind compute, InstrKind send) {
    if (send == InstrKind::SendActivation) return compute == InstrKind::Forward;
    if (send == InstrKind::SendGrad) return compute == InstrKind::Backward || compute == InstrKind::BackwardInput;
    return false;
}
bool isSendEvent(InstrKind k) { return k == InstrKind::SendActivation || k == InstrKind::SendGrad; }

// Tolerance for "ends before it starts": the simulator's times are sums of doubles.
constexpr double kTimeSlackS = 1e-12;

// The last compute event of `device` that ends by `t_s` (and is not `except`), or -1.
int previousCompute(const Trace& t, int device, double t_s, int except) {
    int best = -1;
    for (size_t i = 0; i < t.events.size(); ++i) {
        const TraceEvent& e = t.events[i];
        if (static_cast<int>(i) == except || e.device != device || !isCompute(e.kind) || e.end_s > t_s + kTimeSlackS) continue;
        if (best < 0 || e.end_s > t.events[static_cast<size_t>(best)].end_s) best = static_cast<int>(i);
    }
    return best;
}

// The first compute event of `device` that starts at or after `t_s` (not `except`), or -1.
int nextCompute(const Trace& t, int device, double t_s, int except) {
    int best = -1;
    for (size_t i = 0; i < t.events.size(); ++i) {
        const TraceEvent& e = t.events[i];
        if (static_cast<int>(i) == except || e.device != device || !isCompute(e.kind) || e.start_s < t_s - kTimeSlackS) continue;
        if (best < 0 || e.start_s < t.events[static_cast<size_t>(best)].start_s) best = static_cast<int>(i);
    }
    return best;
}

void addUnique(std::vector<int>& v, int i) {
    if (i >= 0 && std::find(v.begin(), v.end(), i) == v.end()) v.push_back(i);
}

}  // namespace

EventDependencies dependenciesOf(const Trace& t, int event) {
    EventDependencies d;
    if (event < 0 || event >= static_cast<int>(t.events.size())) return d;
    const TraceEvent& e = t.events[static_cast<size_t>(event)];
    const auto n = static_cast<int>(t.events.size());
    if (isCompute(e.kind)) {
        addUnique(d.waits_on, previousCompute(t, e.device, e.start_s, event));
        addUnique(d.waited_by, nextCompute(t, e.device, e.end_s, event));
        // Its input: the latest matching send to this device that ended before it started.
        int input = -1;
        for (int i = 0; i < n; ++i) {
            const TraceEvent& s = t.events[static_cast<size_t>(i)];
            if (!feeds(s.kind, e.kind) || s.peer != e.device || s.mb != e.mb || s.end_s > e.start_s + kTimeSlackS) continue;
            if (input < 0 || s.end_s > t.events[static_cast<size_t>(input)].end_s) input = i;
        }
        addUnique(d.waits_on, input);
        // Its output: sends of this micro-batch from this device whose producer is this event.
        for (int i = 0; i < n; ++i) {
            const TraceEvent& s = t.events[static_cast<size_t>(i)];
            if (!isSendEvent(s.kind) || s.device != e.device || s.mb != e.mb || !produces(e.kind, s.kind)) continue;
            if (dependenciesOf(t, i).waits_on == std::vector<int>{event}) addUnique(d.waited_by, i);
        }
        // Gradients ready: the all-reduces that start after it with nothing computed in between.
        if (isBackwardWork(e.kind))
            for (int i = 0; i < n; ++i) {
                const TraceEvent& a = t.events[static_cast<size_t>(i)];
                if (reducesGradients(a.kind) && a.device == e.device && previousCompute(t, e.device, a.start_s, -1) == event)
                    addUnique(d.waited_by, i);
            }
    } else if (isSendEvent(e.kind)) {
        int producer = -1;
        for (int i = 0; i < n; ++i) {
            const TraceEvent& c = t.events[static_cast<size_t>(i)];
            if (c.device != e.device || c.mb != e.mb || !produces(c.kind, e.kind) || c.end_s > e.start_s + kTimeSlackS) continue;
            if (producer < 0 || c.end_s > t.events[static_cast<size_t>(producer)].end_s) producer = i;
        }
        addUnique(d.waits_on, producer);
        // The consumer: the first matching compute on the peer that starts after it arrived.
        int consumer = -1;
        for (int i = 0; i < n; ++i) {
            const TraceEvent& c = t.events[static_cast<size_t>(i)];
            if (c.device != e.peer || c.mb != e.mb || !feeds(e.kind, c.kind) || c.start_s < e.end_s - kTimeSlackS) continue;
            if (consumer < 0 || c.start_s < t.events[static_cast<size_t>(consumer)].start_s) consumer = i;
        }
        addUnique(d.waited_by, consumer);
    } else if (reducesGradients(e.kind)) {
        addUnique(d.waits_on, previousCompute(t, e.device, e.start_s, -1));
        for (int i = 0; i < n; ++i) {
            const TraceEvent& o = t.events[static_cast<size_t>(i)];
            if (o.kind == InstrKind::OptimizerStep && o.device == e.device && o.start_s >= e.start_s) addUnique(d.waited_by, i);
        }
    } else if (e.kind == InstrKind::AllGather) {
        // ZeRO: parameters gathered after the step (its shards) or before use (the compute that
        // starts once it has ended).
        addUnique(d.waits_on, previousCompute(t, e.device, e.start_s, -1));
        if (e.mb >= 0) addUnique(d.waited_by, nextCompute(t, e.device, e.end_s, -1));
    }
    if (e.kind == InstrKind::OptimizerStep)
        for (int i = 0; i < n; ++i) {
            const TraceEvent& a = t.events[static_cast<size_t>(i)];
            if (reducesGradients(a.kind) && a.device == e.device && a.start_s <= e.start_s) addUnique(d.waits_on, i);
        }
    return d;
}

}  // namespace hippie::widgets
