#include "engine/src/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/src/launch/ports.h"

namespace hippie::engine {

using nlohmann::json;

namespace {

struct Child {
    int rank = 0;
    pid_t pid = -1;
    int out = -1;         // read end of its stdout
    std::string partial;  // an unfinished line
    bool running = true;
    int status = 0;
    std::optional<std::string> error;  // its error event's message
    bool killed_by_us = false;          // the launcher's SIGKILL after the grace period
};

void handleLine(Child& c, const std::string& line) {
    std::cout << line << "\n";
    std::cout.flush();
    try {
        const json j = json::parse(line);
        if (j.value("event", "") == "error" && !c.error) c.error = j.value("message", "unknown error");
    } catch (const std::exception&) {
        // not a JSON line: forwarded as is
    }
}

void drain(Child& c) {
    char buf[65536];
    for (;;) {
        const ssize_t n = read(c.out, buf, sizeof(buf));
        if (n <= 0) break;
        c.partial.append(buf, static_cast<size_t>(n));
        for (size_t nl; (nl = c.partial.find('\n')) != std::string::npos;) {
            handleLine(c, c.partial.substr(0, nl));
            c.partial.erase(0, nl + 1);
        }
    }
}

std::string exitDescription(int status) {
    if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

int launchLocal(const LaunchOptions& o) {
    if (o.nprocs < 1) {
        std::cout << json{{"event", "error"}, {"message", "--nprocs must be at least 1"}}.dump() << std::endl;
        return 2;
    }
    const int port = o.port > 0 ? o.port : freeLoopbackPort();
    std::vector<Child> children(static_cast<size_t>(o.nprocs));
    for (int r = 0; r < o.nprocs; ++r) {
        int fds[2];
        if (pipe(fds) != 0) return 2;
        const pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
            std::vector<std::string> args = {o.self_exe, "run", "--plan", o.plan_file, "--rank", std::to_string(r), "--world-size",
                                             std::to_string(o.nprocs), "--master-addr", "127.0.0.1", "--master-port",
                                             std::to_string(port)};
            args.insert(args.end(), o.run_args.begin(), o.run_args.end());
            std::vector<char*> argv;
            for (std::string& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(o.self_exe.c_str(), argv.data());
            _exit(127);
        }
        close(fds[1]);
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        children[static_cast<size_t>(r)] = Child{r, pid, fds[0], {}, true, 0, std::nullopt, false};
    }

    using Clock = std::chrono::steady_clock;
    bool kill_pending = false;  // a rank failed: the others get grace_s to report, then are killed
    Clock::time_point kill_at{};
    std::optional<int> first_failed;
    int running = o.nprocs;
    while (running > 0) {
        std::vector<pollfd> pfds;
        for (const Child& c : children)
            if (c.out >= 0) pfds.push_back({c.out, POLLIN, 0});
        poll(pfds.data(), pfds.size(), 100);
        for (Child& c : children) {
            if (c.out >= 0) drain(c);
            if (!c.running) continue;
            int status = 0;
            if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
            c.running = false;
            c.status = status;
            --running;
            drain(c);
            close(c.out);
            c.out = -1;
            const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (!ok && !first_failed) {
                first_failed = c.rank;
                kill_pending = true;
                kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.grace_s * 1000));
            }
        }
        if (kill_pending && Clock::now() >= kill_at) {
            for (Child& c : children)
                if (c.running) {
                    kill(c.pid, SIGKILL);
                    c.killed_by_us = true;
                }
            kill_pending = false;
        }
    }
    if (first_failed) {
        // The cause first: a rank killed by a signal the launcher did not send took the others
        // down, and they may exit with an error (their peer's socket closed) before it is reaped.
        int cause = *first_failed;
        for (const Child& other : children)
            if (!other.killed_by_us && WIFSIGNALED(other.status)) {
                cause = other.rank;
                break;
            }
        const Child& c = children[static_cast<size_t>(cause)];
        const std::string message = "rank " + std::to_string(c.rank) + " " + exitDescription(c.status) +
                                    (c.error ? ": " + *c.error : std::string(" without reporting an error"));
        std::cout << json{{"event", "error"}, {"rank", c.rank}, {"message", message}}.dump() << std::endl;
        return 1;
    }
    std::cout << json{{"event", "launch-done"}, {"nprocs", o.nprocs}, {"port", port}}.dump() << std::endl;
    return 0;
}

}  // namespace hippie::engine
