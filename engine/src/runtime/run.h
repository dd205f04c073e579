#pragma once
// `hippie-engine run`: one training rank executing its stream of a Plan's Program.
// Prints JSON lines on stdout: {"event":"setup"...}, {"event":"step"...} per step,
// {"event":"trace"...} for the last step, {"event":"done"...}, or {"event":"error"...}.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/src/runtime/training.h"

namespace hippie::engine {

struct RunOptions {
    std::string plan_file;
    int rank = 0;
    int world_size = 1;
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    int steps = 1;
    uint64_t seed = 0;
    TrainingOptions training;        // learning rate, weight decay, schedule, clipping
    int threads = 0;                 // CPU threads of this rank; 0: the host's cores / the ranks on it
    std::string checkpoint_dir;      // write checkpoints here (runtime/checkpoint.h)
    int checkpoint_every = 0;        // steps between checkpoints; 0: none
    bool resume = false;             // continue from the newest checkpoint every rank has
    std::string token_dtype = "uint16";  // token-id data files (.bin)
    bool log_samples = false;        // step events list this replica's sample indices
    double connect_timeout_s = 30;   // reaching the master and the other ranks
    double op_timeout_s = 60;        // one transfer or all-reduce
    std::string dump_params;         // write this rank's final parameters (JSON) here
    bool trace_every_step = false;   // print a trace for every step, not only the last
    std::string device = "auto";     // auto, cpu, cuda (cuda:<local_rank>)
    int local_rank = -1;             // GPU index on this host; -1: the rank
    std::string comm = "auto";       // auto (nccl on cuda when built with it, else gloo), gloo, nccl
    std::string data_file;           // tensor data file, or token ids (*.bin) (runtime/data.h); empty: synthetic data
    std::vector<int64_t> input_shape;  // TorchScript models with synthetic data: one sample's shape
    std::string input_dtype = "float";
};

// Returns the process exit code: 0 done, 1 failed while training (a peer died, a transfer
// timed out), 2 bad input (plan, model, flags, unreachable master).
int runRank(const RunOptions& o);

}  // namespace hippie::engine
