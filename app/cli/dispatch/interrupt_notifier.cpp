#include "app/cli/dispatch/interrupt_notifier.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QSocketNotifier>

#include <utility>

#include "planners/common/error.h"

namespace hippie::cli {

namespace {

int g_fds[2] = {-1, -1};  // [0] written by the handler, [1] read by the notifier

void onSignal(int signal_number) {
    const unsigned char c = static_cast<unsigned char>(signal_number);
    [[maybe_unused]] const ssize_t n = ::write(g_fds[0], &c, 1);
}

}  // namespace

InterruptNotifier::InterruptNotifier(std::function<void(int, int)> on_signal) : on_signal_(std::move(on_signal)) {
    if (g_fds[0] >= 0) throw Error("InterruptNotifier: one at a time");
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_fds) != 0) throw Error("cannot create the socket pair for SIGINT/SIGTERM");
    notifier_ = new QSocketNotifier(g_fds[1], QSocketNotifier::Read);
    QObject::connect(notifier_, &QSocketNotifier::activated, notifier_, [this] {
        unsigned char c = 0;
        if (::read(g_fds[1], &c, 1) == 1) on_signal_(++count_, c);
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &previous_int_);
    sigaction(SIGTERM, &sa, &previous_term_);
}

InterruptNotifier::~InterruptNotifier() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
    delete notifier_;
    ::close(g_fds[0]);
    ::close(g_fds[1]);
    g_fds[0] = g_fds[1] = -1;
}

}  // namespace hippie::cli
