#pragma once
// Checkpoints of one rank: its stages' parameters and buffers, the optimizer state, the loss
// scale, the step, the data position and the CPU random generator's state, in
// DIR/rank-<r>/step-<s>.pt. Each is written atomically (a temporary file, fsync, rename,
// fsync of the directory), so a rank killed while writing leaves the previous checkpoint
// intact; the two newest are kept, because a rank may die after some ranks have written step s
// and before the others have: resuming takes the newest step every rank has.
#include <optional>
#include <string>
#include <vector>

#include "engine/src/runtime/executor.h"

namespace hippie::engine {

struct CheckpointInfo {
    int step = -1;              // the last step trained (resume at step + 1)
    int64_t samples_seen = 0;   // data position: global batches consumed
};

std::string checkpointPath(const std::string& dir, int rank, int step);

// Throws Error naming the path when the directory or file cannot be written.
void writeCheckpoint(const std::string& dir, int rank, int step, int64_t global_batch, const Executor& ex);
// Steps of this rank's checkpoints in `dir`, ascending.
std::vector<int> checkpointSteps(const std::string& dir, int rank);
// Restores the executor and the random generator; throws Error naming the file.
CheckpointInfo readCheckpoint(const std::string& dir, int rank, int step, Executor& ex);
// Deletes all but the newest `keep` checkpoints of this rank.
void pruneCheckpoints(const std::string& dir, int rank, size_t keep);

}  // namespace hippie::engine
