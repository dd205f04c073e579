#pragma once
// InterruptNotifier: SIGINT and SIGTERM as a call in the event loop, so that `hippie-plan
// dispatch` can cancel its run (scancel a Slurm job, stop local ranks, tell agents) and record it
// cancelled instead of dying with the job left running. The handler only writes a byte to a socket pair (async-signal
// safe); the notifier reads it in the event loop. One instance at a time; the previous handlers
// come back when it is destroyed.
#include <csignal>
#include <functional>

class QSocketNotifier;

namespace hippie::cli {

class InterruptNotifier {
public:
    // on_signal(count, signal_number): count 1 for the first signal, 2 for the next, ...;
    // signal_number SIGINT or SIGTERM. Needs a QCoreApplication.
    explicit InterruptNotifier(std::function<void(int, int)> on_signal);
    ~InterruptNotifier();
    InterruptNotifier(const InterruptNotifier&) = delete;
    InterruptNotifier& operator=(const InterruptNotifier&) = delete;

private:
    std::function<void(int, int)> on_signal_;
    QSocketNotifier* notifier_ = nullptr;
    int count_ = 0;
    struct sigaction previous_int_ = {};
    struct sigaction previous_term_ = {};
};

}  // namespace hippie::cli
