#include "engine/src/launch/rendezvous_env.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "planners/common/error.h"

namespace hippie::engine {

namespace {

// Ports derived from a Slurm job id: [kSlurmPortBase, kSlurmPortBase + kSlurmPortSpan), below
// Linux's default ephemeral range (32768..) so they do not collide with outgoing connections.
constexpr int kSlurmPortBase = 15000;
constexpr int kSlurmPortSpan = 15000;

// One launcher's names for the same four facts.
struct LauncherVars {
    const char* launcher;
    const char* rank;
    const char* world_size;
    const char* local_rank;
};
constexpr LauncherVars kTorchrun{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"};
constexpr LauncherVars kOpenMpi{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
constexpr LauncherVars kSlurm{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};

int parseInt(const std::string& text, const std::string& what, int min_value) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < min_value || v > std::numeric_limits<int>::max())
        throw Error(what + " is '" + text + "': expected a whole number >= " + std::to_string(min_value));
    return static_cast<int>(v);
}

std::optional<int> intVar(const EnvLookup& env, const char* name, int min_value) {
    const auto v = env(name);
    if (!v) return std::nullopt;
    return parseInt(*v, std::string("$") + name, min_value);
}

}  // namespace

EnvLookup processEnvironment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        if (!v || !*v) return std::nullopt;
        return std::string(v);
    };
}

std::string firstSlurmHost(const std::string& nodelist) {
    // The first top-level item; commas inside brackets belong to a range.
    std::string item;
    int depth = 0;
    for (char c : nodelist) {
        if (c == '[') ++depth;
        if (c == ']') --depth;
        if (depth < 0) break;
        if (c == ',' && depth == 0) break;
        item += c;
    }
    if (depth != 0) throw Error("$SLURM_NODELIST '" + nodelist + "' has an unbalanced '['; expected e.g. node[01-04],gpu7");
    // Each bracket stands for its first number, written as it is (zero padding included).
    std::string host;
    for (size_t i = 0; i < item.size(); ++i) {
        if (item[i] != '[') {
            host += item[i];
            continue;
        }
        const size_t close = item.find(']', i);
        const std::string range = item.substr(i + 1, close - i - 1);
        const std::string first = range.substr(0, range.find_first_of(",-"));
        if (first.empty()) throw Error("$SLURM_NODELIST '" + nodelist + "' has an empty range '[" + range + "]'");
        host += first;
        i = close;
    }
    if (host.empty()) throw Error("$SLURM_NODELIST is empty; run inside a Slurm allocation or give --master-addr");
    return host;
}

int slurmDefaultPort(long long job_id) { return kSlurmPortBase + static_cast<int>(job_id % kSlurmPortSpan); }

Rendezvous resolveRendezvous(const RendezvousFlags& flags, const EnvLookup& env) {
    Rendezvous r;
    const LauncherVars* vars = nullptr;
    for (const LauncherVars* candidate : {&kTorchrun, &kOpenMpi, &kSlurm})
        if (env(candidate->rank) || env(candidate->world_size)) {
            vars = candidate;
            break;
        }
    r.launcher = vars && !(flags.rank && flags.world_size) ? vars->launcher : "flags";

    const auto need = [&](const std::optional<int>& flag, const char* flag_name, const char* LauncherVars::*field,
                          int min_value) -> int {
        if (flag) return *flag;
        if (!vars)
            throw Error(std::string("no ") + flag_name + " given and no launcher's variables set: give " + flag_name +
                        ", or start the rank with torchrun (RANK, WORLD_SIZE), srun (SLURM_PROCID, SLURM_NTASKS) or mpirun "
                        "(OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)");
        const char* name = vars->*field;
        const auto v = intVar(env, name, min_value);
        if (!v)
            throw Error(std::string("$") + name + " is not set although " + vars->launcher +
                        "'s other variables are: set it or give " + flag_name);
        return *v;
    };
    r.rank = need(flags.rank, "--rank", &LauncherVars::rank, 0);
    r.world_size = need(flags.world_size, "--world-size", &LauncherVars::world_size, 1);
    if (r.rank >= r.world_size) {
        const std::string rank_src = flags.rank ? "--rank" : std::string("$") + vars->rank;
        const std::string size_src = flags.world_size ? "--world-size" : std::string("$") + vars->world_size;
        throw Error(rank_src + " " + std::to_string(r.rank) + " is not below " + size_src + " " + std::to_string(r.world_size) +
                    ": the launcher's variables contradict each other");
    }
    if (flags.local_rank) r.local_rank = *flags.local_rank;
    else if (vars && r.launcher != "flags") r.local_rank = intVar(env, vars->local_rank, 0).value_or(-1);
    if (r.local_rank > r.rank && !flags.local_rank && r.launcher != "flags")
        throw Error(std::string("$") + vars->local_rank + " " + std::to_string(r.local_rank) + " is above $" + vars->rank + " " +
                    std::to_string(r.rank) + ": a rank's index on its host cannot exceed its global rank");

    if (flags.master_addr) r.master_addr = *flags.master_addr;
    else if (const auto a = env("MASTER_ADDR")) r.master_addr = *a;
    else if (vars == &kSlurm) {
        const auto list = env("SLURM_NODELIST") ? env("SLURM_NODELIST") : env("SLURM_JOB_NODELIST");
        if (!list) throw Error("$SLURM_NODELIST is not set although $SLURM_PROCID is: set MASTER_ADDR or give --master-addr");
        r.master_addr = firstSlurmHost(*list);
    } else if (r.world_size == 1) r.master_addr = "127.0.0.1";
    else throw Error("$MASTER_ADDR is not set: set it to rank 0's host (torchrun and Kubernetes' PyTorchJob do) or give --master-addr");

    if (flags.master_port) r.master_port = *flags.master_port;
    else if (const auto p = intVar(env, "MASTER_PORT", 1)) r.master_port = *p;
    else if (vars == &kSlurm && env("SLURM_JOB_ID")) r.master_port = slurmDefaultPort(*intVar(env, "SLURM_JOB_ID", 0));
    else throw Error("$MASTER_PORT is not set: set it to a free TCP port on rank 0's host, or give --master-port");
    if (r.master_port > 65535) throw Error("the master port " + std::to_string(r.master_port) + " is above 65535");
    return r;
}

}  // namespace hippie::engine
