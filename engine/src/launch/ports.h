#pragma once
// The TCP ports of a rendezvous on 127.0.0.1 or a master host. Plain C++ (no LibTorch).
#include <string>

namespace hippie::engine {

int freeLoopbackPort();  // a TCP port on 127.0.0.1 nobody listens on right now

// Waits until something accepts TCP connections on host:port, trying every 20 ms, at most
// `timeout_ms`; false when nothing did. Ranks other than 0 call it before they connect to rank
// 0's store: LibTorch's TCPStore client sleeps a whole second after a refused connection, which
// ranks started together (rank 0 still loading LibTorch) would otherwise pay at every launch.
bool waitForListener(const std::string& host, int port, long long timeout_ms);

}  // namespace hippie::engine
