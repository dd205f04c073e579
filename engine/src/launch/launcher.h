#pragma once
// `hippie-engine launch`: starts N local ranks of this binary with a rendezvous on 127.0.0.1,
// forwards their JSON lines (each already names its rank), and fails with the failing rank's
// message as soon as one rank fails; the others are stopped within seconds.
#include <string>
#include <vector>

namespace hippie::engine {

struct LaunchOptions {
    std::string self_exe;
    std::string plan_file;
    int nprocs = 1;
    int port = 0;                     // 0: a free port
    std::vector<std::string> run_args;  // passed to every rank (--steps, --seed, ...)
    double grace_s = 5;               // after a rank fails, time the others get to report
};

int launchLocal(const LaunchOptions& o);

}  // namespace hippie::engine
