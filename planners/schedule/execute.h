#pragma once
// Executor: times a Program under the semantics written in program.h, given durations for
// each instruction. The simulator runs it with the cost model; the validator with unit
// durations to prove the program finishes. Each device's instructions are issued in order;
// results do not depend on the order devices are visited.
#include <functional>
#include <string>
#include <vector>

#include "planners/schedule/program.h"

namespace hippie {

struct InstrTiming {
    double start = 0;
    double end = 0;
};

struct ExecutionDurations {
    std::function<double(int stream, const Instr&)> compute;       // compute instructions
    std::function<double(const Instr& send, int from, int to)> transfer;  // sends
    // collectives: the instruction of one member stream (the same on every member)
    std::function<double(int stream, const Instr& collective)> collective;
    // TensorParallel: its collectives over its group (0 when unset). The compute before it
    // and its collectives are one blocking unit: that compute's timing ends with them.
    std::function<double(int stream, const Instr& tensor_parallel)> tensor_parallel;
    // ZeroGather: how much longer the compute before it lasts for its per-layer gathers (0
    // when unset); the same blocking unit over its data-parallel group.
    std::function<double(int stream, const Instr& zero_gather)> zero_gather;
};

struct ExecutionResult {
    bool finished = true;
    std::vector<std::string> stuck;  // when not finished: what each blocked device waits for
    std::vector<std::vector<InstrTiming>> timing;  // [stream][instruction]
};

// `runs`: the streams to run, by stream (empty: every stream). The others are not run (their
// timings stay zero) and a collective waits only for its members that run: for a caller that
// runs one stream of each class of streams that repeat each other's timings exactly
// (symmetricRepresentatives, planners/sim/symmetry.h) and copies the rest.
ExecutionResult execute(const Program& program, const ExecutionDurations& durations, const std::vector<bool>& runs = {});

}  // namespace hippie
