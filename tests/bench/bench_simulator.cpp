// Simulator throughput: lower, validate and simulate a 64-stage x 256-micro-batch 1F1B
// Program (and the other schedules), reporting simulated events per second.
//   build/bin/bench_simulator [repetitions]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "../core/synthetic.h"
#include "planners/common/allocator.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"

using namespace hippie;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void bench(ScheduleKind kind, int pp, int v, int m, int reps) {
    const int layers = pp * v;
    const Graph g = test::chainGraph(layers, 1e-3, 2e-3, 64 << 20, 8 << 20);
    const Cluster c = test::exactCluster(pp / 8, 8, int64_t(80) << 30, 300e9, 3e-6, 25e9);
    const Plan plan = test::pipelinePlan(layers, pp, 1, m, kind, v);

    const auto t0 = Clock::now();
    const Program prog = lower(plan, g);
    const auto t1 = Clock::now();
    const bool ok = validate(prog, g).ok;
    const auto t2 = Clock::now();
    const CostModel cost(g, c);
    size_t events = 0;
    Trace trace;
    for (int r = 0; r < reps; ++r) {
        trace = simulate(prog, plan, cost);
        events = trace.events.size();
    }
    const auto t3 = Clock::now();
    const double sim_s = seconds(t2, t3) / reps;
    std::printf("%-12s pp %3d v %d m %4d | instructions %8zu | lower %7.1f ms | validate %7.1f ms (%s) | simulate %7.1f ms | %6.2f M events/s | bubble %.4f\n",
                toString(kind), pp, v, m, events, seconds(t0, t1) * 1e3, seconds(t1, t2) * 1e3, ok ? "ok" : "INVALID",
                sim_s * 1e3, static_cast<double>(events) / sim_s / 1e6, trace.metrics.bubble_fraction);
}

}  // namespace

int main(int argc, char** argv) {
    hippie::keepFreedMemoryForReuse();  // as hippie-plan and hippie-studio run
    const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
    bench(ScheduleKind::OneFOneB, 64, 1, 256, reps);
    bench(ScheduleKind::GPipe, 64, 1, 256, reps);
    bench(ScheduleKind::Hippie, 64, 1, 256, reps);
    bench(ScheduleKind::ZeroBubbleH1, 64, 1, 256, reps);
    bench(ScheduleKind::Interleaved, 64, 2, 256, reps);
    return 0;
}
