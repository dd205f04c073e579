#pragma once
// Where a rank learns who it is: its flags, or else the environment that the launcher which
// started it set. torchrun (and Kubernetes' PyTorchJob) set RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT; Slurm's srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and
// SLURM_NODELIST (the first host is the master); Open MPI's mpirun sets OMPI_COMM_WORLD_RANK,
// OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_LOCAL_RANK. A flag always wins over a variable.
// Plain C++ (no LibTorch), so its rules are tested without training anything.
#include <functional>
#include <optional>
#include <string>

namespace hippie::engine {

struct RendezvousFlags {  // what the command line gave; unset = not given
    std::optional<int> rank, world_size, local_rank, master_port;
    std::optional<std::string> master_addr;
};

struct Rendezvous {
    int rank = 0;
    int world_size = 1;
    int local_rank = -1;          // -1: none known (the rank picks the GPU)
    std::string master_addr;
    int master_port = 0;
    std::string launcher;         // "flags", "torchrun", "slurm", "openmpi"
};

// Reads a variable; std::nullopt when it is unset (an empty value counts as unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup processEnvironment();

// Throws hippie::Error naming the missing or contradictory flag or variable and what to do.
// With several launchers' variables present, torchrun's are used first (torchrun run inside a
// Slurm allocation sees SLURM_* too), then Open MPI's, then Slurm's.
Rendezvous resolveRendezvous(const RendezvousFlags& flags, const EnvLookup& env);

// The first host of a Slurm host list ("gpu[07-09,12],login1" -> "gpu07"); throws hippie::Error
// for an unbalanced bracket or an empty list.
std::string firstSlurmHost(const std::string& nodelist);

// The port ranks of a Slurm job meet on when MASTER_PORT is unset: the same for every task of
// a job, different for jobs that may share a node (a window above the ephemeral range's start).
int slurmDefaultPort(long long job_id);

}  // namespace hippie::engine
