// probe and profile: measurements of this host and of the zoo's models on it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <numeric>
#include <optional>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/engine.h>

#include "engine/src/comm/comm.h"
#include "engine/src/device/device.h"
#include "engine/src/inspect/kernel_probe.h"
#include "engine/src/inspect/timing.h"
#include "engine/src/inspect/tools.h"
#include "engine/src/launch/ports.h"
#include "engine/src/models/trainable.h"
#include "engine/src/runtime/cpu_threads.h"
#include "engine/src/runtime/data.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/overrides.h"
#include "planners/model/presets.h"
#include "planners/model/zoo.h"

namespace hippie::engine {

using nlohmann::json;
using torch::Tensor;

namespace {

using timing::Clock;
using timing::median;
using timing::secondsSince;

int fail(const std::string& message) {
    std::cout << json{{"event", "error"}, {"message", message}, {"exit_code", 2}}.dump() << std::endl;
    return 2;
}

// Seconds one square fp32 matmul of side n takes, the median over runs for `seconds`.
double matmulSeconds(const torch::Device& device, int64_t n, double seconds) {
    const auto opts = torch::TensorOptions().device(device);
    const Tensor a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
    Tensor c = torch::matmul(a, b);  // warm-up
    std::vector<double> times;
    const auto start = Clock::now();
    while (secondsSince(start) < seconds) {
        const auto t0 = Clock::now();
        c = torch::matmul(a, b);
        if (device.is_cuda()) torch::cuda::synchronize();
        times.push_back(secondsSince(t0));
    }
    return median(times);
}

// Seconds of the smallest kernel (a one-element add): what every kernel costs at least.
double launchSeconds(const torch::Device& device, double seconds) {
    const Tensor a = torch::ones({1}, torch::TensorOptions().device(device));
    Tensor c = a + a;
    std::vector<double> times;
    const auto start = Clock::now();
    while (secondsSince(start) < seconds) {
        const auto t0 = Clock::now();
        c = a + a;
        if (device.is_cuda()) torch::cuda::synchronize();
        times.push_back(secondsSince(t0));
    }
    return median(times);
}

// Device memory bandwidth: a 64 MiB copy reads and writes every byte.
double copyBytesPerSecond(const torch::Device& device, double seconds) {
    constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of fp32
    const auto opts = torch::TensorOptions().device(device);
    const Tensor src = torch::ones({kElements}, opts);
    Tensor dst = torch::empty({kElements}, opts);
    dst.copy_(src);
    std::vector<double> times;
    const auto start = Clock::now();
    while (secondsSince(start) < seconds) {
        const auto t0 = Clock::now();
        dst.copy_(src);
        if (device.is_cuda()) torch::cuda::synchronize();
        times.push_back(secondsSince(t0));
    }
    const double t = median(times);
    return t > 0 ? 2.0 * static_cast<double>(kElements) * 4.0 / t : 0.0;
}

// Matmul sides the probe times: small kernels that do not fill the device, up to one that
// does. Their times fit t(f) = (f + half_rate) / rate + launch (DeviceSpec's curve).
constexpr int64_t kProbeSides[] = {64, 128, 256, 512, 1024};

struct ComputeProbe {
    double rate_flops = 0;       // FLOP/s on large kernels
    double half_rate_flops = 0;  // kernel size at half that rate, launch excluded
    double launch_s = 0;
    std::vector<std::pair<double, double>> samples;  // (FLOPs, seconds) per side
};

// The line t = a + f / rate through the samples, least squares in relative error (each
// sample weighted by 1/t^2); half_rate = (a - launch) x rate. Fitted in absolute seconds, the
// largest kernel's noise (a millisecond of its 35 ms here) moved the intercept by as much,
// i.e. tens of MFLOP of half-rate size, and every small op's prediction with it.
ComputeProbe probeCompute(const torch::Device& device, double seconds) {
    ComputeProbe p;
    const double share = seconds / (std::size(kProbeSides) + 1);
    p.launch_s = launchSeconds(device, share);
    for (int64_t n : kProbeSides) p.samples.emplace_back(2.0 * static_cast<double>(n * n * n), matmulSeconds(device, n, share));
    double sw = 0, sf = 0, st = 0, sff = 0, sft = 0;
    for (const auto& [f, t] : p.samples) {
        const double w = t > 0 ? 1.0 / (t * t) : 0.0;
        sw += w;
        sf += w * f;
        st += w * t;
        sff += w * f * f;
        sft += w * f * t;
    }
    const double slope = (sw * sft - sf * st) / (sw * sff - sf * sf);
    const double intercept = (st - slope * sf) / sw;
    const auto& [largest_f, largest_t] = p.samples.back();
    p.rate_flops = slope > 0 ? 1.0 / slope : largest_f / largest_t;
    p.half_rate_flops = std::max(0.0, (intercept - p.launch_s) * p.rate_flops);
    return p;
}

// The aggregate rate of `threads` threads each running `work` (one single-threaded kernel
// of `amount` FLOPs or bytes) at once for `seconds`: what the host's cores deliver together.
// Cores that share execution units (hyperthreads, or a virtual machine's vCPUs on one
// physical core) deliver less than `threads` times one thread's rate.
double concurrentRate(int threads, double amount, double seconds, const std::function<std::function<void()>()>& make_work) {
    std::vector<std::function<void()>> works;
    for (int i = 0; i < threads; ++i) works.push_back(make_work());
    std::vector<double> done(static_cast<size_t>(threads), 0.0);
    std::vector<std::thread> pool;
    const auto start = Clock::now();
    for (int i = 0; i < threads; ++i)
        pool.emplace_back([&, i] {
            while (secondsSince(start) < seconds) {
                works[static_cast<size_t>(i)]();
                done[static_cast<size_t>(i)] += amount;
            }
        });
    for (std::thread& t : pool) t.join();
    const double elapsed = secondsSince(start);
    double total = 0;
    for (double d : done) total += d;
    return elapsed > 0 ? total / elapsed : 0.0;
}

constexpr double kMinSlots = 0.01;  // the cluster reader's floor is 1e-3

struct AllCores {
    double matmul_flops = 0;  // all cores at once, each one thread
    double slots = 0;         // all cores' matmul rate over one thread's, the median of rounds
};

// All of the host's cores at once, each one thread, running fp32 matmuls of side 512, against
// one thread alone at the same size: the compute slots. Measured back to back in a few rounds
// (a shared VM's rate drifts by tens of percent between seconds).
AllCores allCoresRates(int cores, double seconds) {
    constexpr int64_t kSide = 512;
    constexpr int kRounds = 3;
    constexpr double kFlops = 2.0 * kSide * kSide * kSide;
    AllCores out;
    std::vector<double> together, ratios;
    for (int r = 0; r < kRounds; ++r) {
        const double one = matmulSeconds(torch::Device(torch::kCPU), kSide, seconds / 2 / kRounds);
        const double all = concurrentRate(cores, kFlops, seconds / 2 / kRounds, [] {
            const Tensor a = torch::randn({kSide, kSide}), b = torch::randn({kSide, kSide});
            return [a, b] { (void)torch::matmul(a, b); };
        });
        together.push_back(all);
        if (one > 0) ratios.push_back(all * one / kFlops);
    }
    out.matmul_flops = median(together);
    out.slots = median(ratios);
    return out;
}

// One TCP connection on 127.0.0.1 between two threads: `bytes` one way, then `pings` one-byte
// round trips. Returns (bytes/s of the payload, one-way latency in s); zeros where a socket
// call fails.
std::pair<double, double> loopbackConnection(size_t bytes, int pings) {
    const int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (srv < 0 || bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(srv, 1) != 0 ||
        getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        if (srv >= 0) close(srv);
        return {0, 0};
    }
    std::thread peer([&] {
        const int s = accept(srv, nullptr, nullptr);
        if (s < 0) return;
        std::vector<char> buf(1 << 20);
        size_t got = 0;
        while (got < bytes) {
            const ssize_t n = read(s, buf.data(), std::min(buf.size(), bytes - got));  // exactly the payload
            if (n <= 0) break;
            got += static_cast<size_t>(n);
        }
        char one = 0;
        for (int i = 0; i < pings + 1; ++i) {
            if (read(s, &one, 1) != 1 || write(s, &one, 1) != 1) break;
        }
        close(s);
    });
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    double bw = 0, lat = 0;
    if (c >= 0 && connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        std::vector<char> data(bytes, 1);
        const auto t0 = Clock::now();
        size_t sent = 0;
        while (sent < bytes) {
            const ssize_t n = write(c, data.data() + sent, bytes - sent);
            if (n <= 0) break;
            sent += static_cast<size_t>(n);
        }
        // The peer answers a byte once it has read the whole payload.
        char one = 0;
        if (write(c, &one, 1) == 1 && read(c, &one, 1) == 1) bw = static_cast<double>(bytes) / secondsSince(t0);
        const auto t1 = Clock::now();
        int done = 0;
        for (; done < pings; ++done)
            if (write(c, &one, 1) != 1 || read(c, &one, 1) != 1) break;
        if (done > 0) lat = secondsSince(t1) / done / 2;
    } else {
        // Unblock the peer's accept.
        shutdown(srv, SHUT_RDWR);
    }
    if (c >= 0) close(c);
    peer.join();
    close(srv);
    return {bw, lat};
}

// Bandwidth and latency of one TCP connection on 127.0.0.1.
std::pair<double, double> loopback() { return loopbackConnection(std::size_t{16} << 20, 200); }

// Bytes/s that `connections` loopback connections move together, all at once: on a host whose
// ranks talk over loopback, the kernel copies every byte on the cores, so concurrent transfers
// (a ring all-reduce's, one per rank) share what the cores deliver together.
double concurrentLoopback(int connections) {
    constexpr size_t kBytes = std::size_t{32} << 20;
    std::vector<std::thread> pool;
    std::vector<double> rates(static_cast<size_t>(connections), 0.0);
    const auto start = Clock::now();
    for (int i = 0; i < connections; ++i)
        pool.emplace_back([&rates, i] { rates[static_cast<size_t>(i)] = loopbackConnection(kBytes, 0).first; });
    for (std::thread& t : pool) t.join();
    const double elapsed = secondsSince(start);
    for (double r : rates)
        if (r <= 0) return 0.0;
    return elapsed > 0 ? static_cast<double>(connections) * static_cast<double>(kBytes) / elapsed : 0.0;
}

// The engine's own transport between two ranks on this host: two processes, each a rank of the
// Comm the engine trains with over 127.0.0.1, time all-reduces of 4 B to 16 MiB. The cost model
// prices a two-rank all-reduce as a ring's: two messages of latency and, per rank, half the
// buffer sent and half received twice, time = 2 latency + bytes / bandwidth. That line is
// fitted to the sizes' mean times weighted by relative error, so that no one size (the tiny one
// for latency, the largest for bandwidth) sets a figure alone; the tensor-parallel activations
// and gradient buckets of CPU runs lie between them. What Gloo adds to raw TCP (thread
// hand-offs, the sums) is in the times.
//
// Measured as ranks run: the peer is a second process (this binary, `probe --transport-peer
// PORT`), and each size's time is the mean, since a step pays every all-reduce it makes, slow
// ones too. What the probe measured before (two threads of one process, the medians of 4 B and
// of 16 MiB: 0.1 ms latency and 720 MB/s on this project's 2-core VM) predicted 0.85 ms for a
// 512 KB all-reduce that took 1.7-2.5 ms on average there: the sizes between pay more than a
// line through the two ends (tests/bench/README.md). Zeros when the group cannot be set up.
struct TransportSample {
    int64_t bytes = 0;
    double mean_s = 0;
    double median_s = 0;
};
struct Transport {
    double latency_s = 0;
    double bandwidth_bytes_per_s = 0;
    std::vector<TransportSample> samples;
};

constexpr int64_t kTransportFloats[] = {1, int64_t{16} << 10, int64_t{256} << 10, int64_t{4} << 20};  // 4 B .. 16 MiB
// The compute before each timed all-reduce: 8 matmuls of 256 x 256 (2.7 ms at 100 GFLOP/s).
constexpr int64_t kBurstSide = 256;
constexpr int kBurstMatmuls = 8;

// One rank of the transport measurement; rank 0 returns each size's times (rank 1 its own).
// Throws where the group cannot be set up or an all-reduce fails.
std::vector<TransportSample> transportRank(int r, int port, double seconds) {
    Rendezvous rv;
    rv.master_port = port;
    rv.rank = r;
    rv.world_size = 2;
    rv.connect_timeout = std::chrono::milliseconds(20000);  // the peer process loads LibTorch first
    rv.op_timeout = std::chrono::milliseconds(20000);
    Comm comm(rv);
    comm.addGroup(0, {0, 1});
    // A training step's collective follows compute on both ranks: each timed all-reduce comes
    // after the same burst of matmuls on both (about 3 ms here), the transport's threads idle
    // meanwhile, as a bucket's all-reduce after a backward or a stage's send after its
    // forward meets them. Back to back they ran faster (512 KB: a mean 2.5 ms against 3.5 ms
    // after 5 ms of matmuls, stop 33), and the ranks' pipelines and all-reduces paid the
    // slower figure.
    const Tensor a = torch::randn({kBurstSide, kBurstSide}), b = torch::randn({kBurstSide, kBurstSide});
    const auto burst = [&] {
        for (int i = 0; i < kBurstMatmuls; ++i) (void)torch::matmul(a, b);
    };
    std::vector<TransportSample> out;
    for (int64_t floats : kTransportFloats) {
        // Zeros: repeated sums of ones would overflow to inf within the big tensor's reps.
        const Tensor t = torch::zeros({floats});
        comm.allReduceSum(t, 0).wait();  // warm-up
        // Both ranks run the same count: rank 0 decides it and tells rank 1.
        const auto t0 = Clock::now();
        burst();
        comm.allReduceSum(t, 0).wait();
        const double once = std::max(secondsSince(t0), 1e-7);
        Tensor n = torch::full({1}, std::clamp(seconds / std::size(kTransportFloats) / once, 5.0, 2000.0));
        if (r == 1) n.zero_();
        comm.allReduceSum(n, 0).wait();
        const int reps = static_cast<int>(n.item<float>());
        std::vector<double> times;
        for (int i = 0; i < reps; ++i) {
            burst();
            const auto t1 = Clock::now();
            comm.allReduceSum(t, 0).wait();
            times.push_back(secondsSince(t1));
        }
        const double mean = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
        out.push_back({floats * 4, mean, median(times)});
    }
    comm.barrier();
    return out;
}

// time = a + bytes * b by least squares on the relative error (weights 1 / time^2); latency
// a / 2, bandwidth 1 / b. Zeros where the fit is not physical.
Transport fitTransport(std::vector<TransportSample> samples) {
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const TransportSample& m : samples) {
        if (m.mean_s <= 0) return {};
        const double w = 1.0 / (m.mean_s * m.mean_s), x = static_cast<double>(m.bytes);
        sw += w, sx += w * x, sy += w * m.mean_s, sxx += w * x * x, sxy += w * x * m.mean_s;
    }
    const double det = sw * sxx - sx * sx;
    if (samples.size() < 2 || det <= 0) return {};
    const double slope = (sw * sxy - sx * sy) / det, intercept = (sy - slope * sx) / sw;
    Transport t;
    t.samples = std::move(samples);
    if (slope <= 0) return t;
    t.bandwidth_bytes_per_s = 1.0 / slope;
    // A line through noisy times can cross zero; the smallest all-reduce is then all latency.
    t.latency_s = intercept > 0 ? intercept / 2 : t.samples.front().mean_s / 2;
    return t;
}

Transport glooTransport(double seconds) {
    const int port = freeLoopbackPort();
    if (port <= 0) return {};
    const std::string port_arg = std::to_string(port);
    std::vector<char*> args{const_cast<char*>("hippie-engine-torch"), const_cast<char*>("probe"), const_cast<char*>("--transport-peer"),
                            const_cast<char*>(port_arg.c_str()), nullptr};
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t peer = -1;
    const int spawned = posix_spawn(&peer, "/proc/self/exe", &files, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (spawned != 0) return {};
    std::vector<TransportSample> samples;
    try {
        samples = transportRank(0, port, seconds);
    } catch (const std::exception&) {
        kill(peer, SIGKILL);
    }
    waitpid(peer, nullptr, 0);
    return fitTransport(std::move(samples));
}

// `probe --transport-peer PORT`: rank 1 of glooTransport's measurement, in its own process.
int transportPeer(int port) {
    try {
        configureCpu(1);
        transportRank(1, port, 0);
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("probe's transport peer: ") + e.what());
    }
}

// 3x3 convolutions (and one 1x1) of the sizes CNN training runs, forward and backward (input
// and weight gradients), against square matmuls of the same FLOPs timed in turn with them:
// the device's convolution kernels (im2col or implicit GEMM, layout reorders) reach this
// fraction of its matmul rate (on this project's AVX-512 VMs oneDNN's convolutions outrun
// OpenBLAS's AVX2 sgemm by half again). Timed in turn, not against the FLOP curve measured
// seconds earlier: this VM's speed drifts by a third within minutes, and a ratio of two
// moments' rates gave 1.2 to 2.5 from one probe to the next.
// Returns the median ratio over the shapes and each shape's (FLOPs, seconds).
struct ConvProbe {
    double efficiency = 1.0;
    std::vector<std::pair<double, double>> samples;
};

ConvProbe probeConvolutions(const torch::Device& device, double seconds) {
    struct Shape {
        int64_t batch, in, out, side, kernel;
    };
    constexpr Shape kShapes[] = {{8, 32, 32, 56, 3}, {8, 64, 64, 28, 3}, {8, 128, 128, 14, 3}, {8, 256, 256, 7, 3}, {8, 256, 64, 14, 1}};
    ConvProbe p;
    std::vector<double> ratios;
    const double share = seconds / static_cast<double>(std::size(kShapes));
    const auto opts = torch::TensorOptions().device(device);
    const auto timed = [&](const std::function<void()>& f) {
        const auto t0 = Clock::now();
        f();
        synchronizeDevice(device);
        return secondsSince(t0);
    };
    for (const Shape& s : kShapes) {
        const Tensor x = torch::randn({s.batch, s.in, s.side, s.side}, opts).requires_grad_(true);
        const Tensor w = torch::randn({s.out, s.in, s.kernel, s.kernel}, opts).requires_grad_(true);
        const auto conv = [&] {
            const Tensor y = torch::conv2d(x, w, {}, 1, s.kernel / 2);
            y.backward(torch::ones_like(y));
        };
        // Forward, input gradient and weight gradient: three kernels of the forward's FLOPs;
        // the matmul does them as one (at these sizes the FLOP curve is flat).
        const double f = 2.0 * static_cast<double>(s.batch * s.out * s.in * s.kernel * s.kernel * s.side * s.side);
        const auto n = static_cast<int64_t>(std::llround(std::cbrt(3.0 * f / 2.0)));
        const Tensor a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
        const auto matmul = [&] { (void)torch::matmul(a, b); };
        timed(conv);  // warm-up: the library picks its algorithm
        timed(matmul);
        std::vector<double> conv_times, matmul_times;
        const auto start = Clock::now();
        while (secondsSince(start) < share || conv_times.size() < 3) {
            conv_times.push_back(timed(conv));
            matmul_times.push_back(timed(matmul));
        }
        const double t = median(conv_times);
        p.samples.emplace_back(3.0 * f, t);
        if (t > 0) ratios.push_back(median(matmul_times) * 3.0 * f / (2.0 * static_cast<double>(n * n * n)) / t);
    }
    if (!ratios.empty()) p.efficiency = median(ratios);
    return p;
}

}  // namespace

int probeCommand(const ProbeOptions& o) {
    if (o.transport_peer_port > 0) return transportPeer(o.transport_peer_port);
    Cluster cluster;
    cluster.name = "probed";
    cluster.source = "hippie-engine probe: measured fp32 matmul FLOP/s at sides 64-1024 (rate, half-rate size, launch), "
                     "convolutions against that curve, the zoo's op kinds forward and backward at two sizes (kernels), "
                     "a 64 MiB copy (memory bandwidth), TCP loopback and the engine's Gloo all-reduce between two rank processes, "
                     "each after compute on both (the CPU ranks' link) on this host";
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    Node node;
    const bool cuda = builtWithCuda() && torch::cuda::is_available();
    const torch::Device device = cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    // A CPU device is one rank of one thread, set up as `run --threads 1` sets its rank up:
    // OpenBLAS keeps a pool of its own (one thread per core) that torch::set_num_threads does
    // not size, so without this the "one thread" matmuls ran on every core.
    const std::optional<CpuSetup> cpu = cuda ? std::nullopt : std::optional<CpuSetup>(configureCpu(1));
    const ComputeProbe compute = probeCompute(device, o.seconds);
    const double slot = o.seconds / (std::size(kProbeSides) + 1);  // each of the other measurements' time
    const double flops = compute.rate_flops;
    node.devices = cuda ? static_cast<int>(torch::cuda::device_count()) : 1;
    node.device.type = cuda ? "cuda" : "cpu";
    node.device.peak_flops_fp32 = flops;
    node.device.peak_flops_fp16 = flops;
    node.device.efficiency = 1.0;  // the measurement is what real kernels reach
    node.device.half_rate_flops = compute.half_rate_flops;  // fp16 peak = fp32 here, so no rescaling
    node.device.launch_overhead_s = compute.launch_s;
    const ConvProbe convs = probeConvolutions(device, slot);
    node.device.conv_efficiency = convs.efficiency;
    const auto matmul_now = [&] {
        constexpr int64_t kSide = 512;
        return 2.0 * static_cast<double>(kSide * kSide * kSide) / matmulSeconds(device, kSide, slot / 8);
    };
    const KernelProbe kernels = probeKernels(device, {compute.rate_flops, convs.efficiency, matmul_now}, 2 * slot);
    node.device.kernels = kernels.kernels;
    node.device.memory_bandwidth_bytes_per_s = copyBytesPerSecond(device, slot);
    node.device.memory_bytes = deviceMemoryBytes(device).value_or(static_cast<int64_t>(pages) * page);
    // After the probe's kernels ran, so the libraries' handles and workspaces are in it (other
    // processes' memory on the GPU too: probe an idle one). Kept below the device's memory, as
    // a cluster file must.
    node.device.reserved_bytes = std::min(runtimeReservedBytes(device).value_or(0), node.device.memory_bytes - 1);
    double bw = 0, lat = 0;
    Transport gloo;
    if (o.loopback_bandwidth) {
        std::tie(bw, lat) = loopback();
        if (!cuda) gloo = glooTransport(2 * slot);
    }
    // CPU ranks talk through the engine's Gloo groups: their link is what those achieve.
    node.intra = gloo.bandwidth_bytes_per_s > 0 ? Link{gloo.bandwidth_bytes_per_s, gloo.latency_s} : Link{bw, lat};
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    json probe = {{"cpu_cores", cores}, {"torch_threads", torch::get_num_threads()},
                  {"cuda", cuda}, {"matmul_flops_per_s", flops}, {"loopback_bytes_per_s", bw}, {"loopback_latency_s", lat}};
    if (cpu) probe["blas"] = cpu->blas;
    if (gloo.bandwidth_bytes_per_s > 0) {
        probe["gloo_bytes_per_s"] = gloo.bandwidth_bytes_per_s;
        probe["gloo_latency_s"] = gloo.latency_s;
        json sizes = json::array();
        for (const TransportSample& m : gloo.samples) sizes.push_back({{"bytes", m.bytes}, {"mean_s", m.mean_s}, {"median_s", m.median_s}});
        probe["gloo_allreduces"] = sizes;
    }
    if (cpu) {
        // What the cores give together, for ranks that share this host: the node's compute
        // slots are all cores' matmul rate over one thread's at the same size (1.0 where two
        // vCPUs share one physical core's FP units, up to the cores where they do not).
        const AllCores all = allCoresRates(cores, slot);
        probe["all_cores_matmul_flops_per_s"] = all.matmul_flops;
        if (o.loopback_bandwidth) probe["all_cores_loopback_bytes_per_s"] = concurrentLoopback(cores);
        if (all.slots > 0) node.compute_slots = std::max(kMinSlots, all.slots);
    }
    cluster.nodes.push_back(node);
    cluster.inter = node.intra;
    json out = clusterToJson(cluster);
    out["probe"] = probe;
    json matmuls = json::array();
    for (const auto& [f, t] : compute.samples) matmuls.push_back({{"flops", f}, {"seconds", t}, {"flops_per_s", f / t}});
    out["probe"]["matmuls"] = matmuls;
    json conv_samples = json::array();
    for (const auto& [f, t] : convs.samples) conv_samples.push_back({{"flops", f}, {"seconds", t}, {"flops_per_s", f / t}});
    out["probe"]["convolutions"] = conv_samples;
    out["probe"]["conv_efficiency"] = convs.efficiency;
    json kernel_samples = json::array();
    for (const KernelSample& k : kernels.samples)
        kernel_samples.push_back({{"kind", k.kind}, {"activation_bytes", k.activation_bytes}, {"param_bytes", k.param_bytes},
                                  {"forward_s", k.forward_s}, {"backward_s", k.backward_s}});
    out["probe"]["kernel_samples"] = kernel_samples;
    if (!kernels.warnings.empty()) out["probe"]["kernel_warnings"] = kernels.warnings;
    out["probe"]["launch_s"] = compute.launch_s;
    out["probe"]["memory_bytes_per_s"] = node.device.memory_bandwidth_bytes_per_s;
    std::cout << out.dump(2) << std::endl;
    return 0;
}

namespace {

// Bytes the allocator hands out on one device while it is installed (this thread, and the
// autograd work it starts): the CPU allocator and the CUDA caching allocator report every
// allocation and free to the profiler hook that c10 keeps in thread-local debug info. Frees of
// blocks allocated before it was installed are not reported, so measure within one scope.
//
// The types of the hook's running totals differ between LibTorch versions (int64_t in 1.13,
// size_t in 2.x): they are read off the base class's declaration.
template <typename>
struct ReportedTotals;
template <typename Base, typename Total, typename Reserved>
struct ReportedTotals<void (Base::*)(void*, int64_t, Total, Reserved, c10::Device)> {
    using total = Total;
    using reserved = Reserved;
};
using Totals = ReportedTotals<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>;

class AllocationTracker : public c10::MemoryReportingInfoBase {
public:
    explicit AllocationTracker(c10::DeviceType type) : type_(type) {}
    void reportMemoryUsage(void*, int64_t alloc_size, Totals::total, Totals::reserved, c10::Device device) override {
        if (device.type() != type_) return;
        current_ += alloc_size;
        peak_ = std::max(peak_, current_);
    }
    bool memoryProfilingEnabled() const override { return true; }
    int64_t current() const { return current_; }
    int64_t peak() const { return peak_; }
    void resetPeak() { peak_ = current_; }

private:
    c10::DeviceType type_;
    int64_t current_ = 0;
    int64_t peak_ = 0;
};

struct LayerMemory {
    int64_t output_bytes = 0;    // the layer's output tensors
    int64_t saved_bytes = 0;     // more bytes the forward leaves allocated: tensors saved for backward
    int64_t fwd_temp_bytes = 0;  // forward's transient peak above what it leaves allocated
    int64_t bwd_temp_bytes = 0;  // backward's peak above what it started with, less the weight gradients
};

// One layer of a model being profiled: it reads `in` (the live tensors before it, the float
// ones detached and requiring grad so its backward stops at its inputs) and adds its outputs.
// The last layer's pass ends in the model's loss; every other's backward starts from a
// gradient of ones / numel on each of its float outputs.
class LayerPass {
public:
    LayerPass(LayerModule& layer, const Live& before, const Trainable& model, const Tensor& targets, bool last)
        : layer_(layer), model_(model), targets_(targets), last_(last) {
        // The step's input samples need no gradient (the engine asks none of the first layer).
        for (const auto& [key, t] : before) in_[key] = t.is_floating_point() && key != kDataKey ? t.detach().requires_grad_(true) : t;
    }
    // Runs the forward; returns the tensors backward starts from (the loss, or the outputs).
    std::vector<Tensor> forward() {
        out_ = in_;
        layer_.run(out_);
        if (last_) return {model_.loss(out_, targets_)};
        std::vector<Tensor> roots;
        for (const auto& [key, t] : out_)
            if (const auto was = in_.find(key); (was == in_.end() || !was->second.is_same(t)) && t.requires_grad()) roots.push_back(t);
        return roots;
    }
    // The gradients backward starts from: ones on the loss, ones / numel on each output.
    std::vector<Tensor> seeds(const std::vector<Tensor>& roots) const {
        std::vector<Tensor> g;
        for (const Tensor& r : roots) g.push_back(last_ ? torch::ones_like(r) : torch::ones_like(r) / r.numel());
        return g;
    }
    // What the next layer reads: every live tensor, this layer's outputs detached.
    Live next() const {
        Live n;
        for (const auto& [key, t] : out_) n[key] = t.detach();
        return n;
    }
    int64_t outputBytes() const {
        int64_t b = 0;
        for (const auto& [key, t] : out_)
            if (const auto was = in_.find(key); was == in_.end() || !was->second.is_same(t)) b += static_cast<int64_t>(t.nbytes());
        return b;
    }
    void clearGrads() {
        for (Tensor& p : layer_.parameters()) p.mutable_grad() = Tensor();
        for (auto& [key, t] : in_)
            if (t.requires_grad()) t.mutable_grad() = Tensor();
    }
    int64_t paramBytes() const {
        int64_t b = 0;
        for (const Tensor& p : layer_.parameters()) b += static_cast<int64_t>(p.nbytes());
        return b;
    }

private:
    LayerModule& layer_;
    const Trainable& model_;
    const Tensor& targets_;
    bool last_;
    Live in_, out_;
};

// One forward and backward of a layer, measured by the allocator.
LayerMemory measureLayerMemory(LayerPass& pass, const torch::Device& device) {
    pass.clearGrads();
    const int64_t param_bytes = pass.paramBytes();
    synchronizeDevice(device);
    auto tracker = std::make_shared<AllocationTracker>(device.type());
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, tracker);
    LayerMemory m;
    {
        const std::vector<Tensor> roots = pass.forward();
        synchronizeDevice(device);
        const int64_t kept = tracker->current();
        m.output_bytes = pass.outputBytes();
        m.saved_bytes = std::max<int64_t>(0, kept - m.output_bytes);
        m.fwd_temp_bytes = std::max<int64_t>(0, tracker->peak() - kept);
        const std::vector<Tensor> grads = pass.seeds(roots);
        tracker->resetPeak();
        const int64_t before = tracker->current();
        torch::autograd::backward(roots, grads);
        synchronizeDevice(device);
        m.bwd_temp_bytes = std::max<int64_t>(0, tracker->peak() - before - param_bytes);
    }
    pass.clearGrads();
    return m;
}

// Shares a layer-wide amount among its ops in proportion to `weight` (the last op takes the
// rounding), or all to the last op when the weights are all zero.
void share(Graph& g, const Layer& l, int64_t total, const std::function<int64_t(const Op&)>& weight, int64_t Op::*field) {
    int64_t sum = 0;
    for (int op : l.ops) sum += weight(g.ops[static_cast<size_t>(op)]);
    int64_t given = 0;
    for (size_t k = 0; k < l.ops.size(); ++k) {
        Op& o = g.ops[static_cast<size_t>(l.ops[k])];
        const bool last = k + 1 == l.ops.size();
        const int64_t part = last ? total - given
                                  : sum > 0 ? static_cast<int64_t>(static_cast<double>(total) * static_cast<double>(weight(o)) / static_cast<double>(sum))
                                            : 0;
        o.*field = part;
        given += part;
    }
}

}  // namespace

int profileCommand(const ProfileOptions& o) {
    if (!findZooModel(o.model) && !findModelPreset(o.model))
        return fail("unknown model '" + o.model + "'; the engine profiles the zoo's models (hippie-plan models) and their presets (" +
                    presetNames() + ")");
    if (o.batch_size < 1 || o.repeats < 1) return fail("--batch-size and --repeats must be positive");
    try {
        ModelSpec spec;
        spec.zoo = o.model;
        spec.batch_size = o.batch_size;
        spec.seq_len = o.seq_len;
        applyOverrideText(spec, o.overrides);
        spec = expandPreset(spec);
        Graph g = buildZooModel(spec);
        const std::unique_ptr<Trainable> model = makeZooTrainable(spec);
        const torch::Device device = resolveDevice(o.device, 0);
        useDevice(device);
        // On the CPU, the times of one rank of one thread, like the probe's device (left alone,
        // OpenBLAS's own pool would run the matmuls on every core and the rest on one).
        if (!device.is_cuda()) configureCpu(1);
        const int layers = g.layerCount();
        if (model->layerCount() != layers)
            throw Error(o.model + ": the engine builds " + std::to_string(model->layerCount()) + " layers, the graph has " + std::to_string(layers));
        const std::vector<LayerPtr> modules = model->layers(0, layers - 1, 0, device);
        tieWeightsInPlace(modules);
        const Batch batch = model->synthetic(o.batch_size, 0, 0);
        const Tensor inputs = batch.inputs.to(device), targets = batch.targets.to(device);
        std::vector<double> fwd(static_cast<size_t>(layers)), bwd(static_cast<size_t>(layers));
        std::vector<LayerMemory> mem(static_cast<size_t>(layers));
        Live live{{kDataKey, inputs}};
        for (int i = 0; i < layers; ++i) {
            LayerPass pass(*modules[static_cast<size_t>(i)], live, *model, targets, i + 1 == layers);
            std::vector<double> tf, tb;
            for (int r = 0; r < o.repeats + 1; ++r) {  // the first pass warms up
                pass.clearGrads();
                synchronizeDevice(device);
                auto t0 = Clock::now();
                const std::vector<Tensor> roots = pass.forward();
                synchronizeDevice(device);
                if (r > 0) tf.push_back(secondsSince(t0));
                const std::vector<Tensor> grads = pass.seeds(roots);
                t0 = Clock::now();
                torch::autograd::backward(roots, grads);
                synchronizeDevice(device);
                if (r > 0) tb.push_back(secondsSince(t0));
            }
            fwd[static_cast<size_t>(i)] = median(tf);
            bwd[static_cast<size_t>(i)] = median(tb);
            mem[static_cast<size_t>(i)] = measureLayerMemory(pass, device);
            live = pass.next();
        }
        // The whole model's pass, layer after layer in one autograd graph as a one-stage step
        // runs it: what the layers cost together, their weights no longer warm in the cache
        // and each op's dispatch no longer hot (a small MLP's pass here: 1.3-1.5 times its
        // layers' sum; a small ResNet's 1.2 times).
        std::vector<double> whole_fwd, whole_bwd;
        for (int r = 0; r < o.repeats + 1; ++r) {
            for (const LayerPtr& l : modules)
                for (Tensor& p : l->parameters()) p.mutable_grad() = Tensor();
            synchronizeDevice(device);
            auto t0 = Clock::now();
            Live x{{kDataKey, inputs}};
            for (const LayerPtr& l : modules) l->run(x);
            const Tensor loss = model->loss(x, targets);
            synchronizeDevice(device);
            if (r > 0) whole_fwd.push_back(secondsSince(t0));
            t0 = Clock::now();
            loss.backward();
            synchronizeDevice(device);
            if (r > 0) whole_bwd.push_back(secondsSince(t0));
        }
        // The layers' times, each measured on its own (its weights warm in the cache), scaled to
        // add up to the whole model's pass: what a step of the model costs, shared among its
        // layers as they measured alone.
        const auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
        const double fwd_scale = sum(fwd) > 0 ? median(whole_fwd) / sum(fwd) : 1.0;
        const double bwd_scale = sum(bwd) > 0 ? median(whole_bwd) / sum(bwd) : 1.0;
        // A layer's time is shared among its ops in proportion to their FLOPs; its measured
        // activation (output + saved for backward) in proportion to the ops' modelled outputs,
        // and every op's workspace is the layer's measured transient peak.
        const auto view = g.layers();
        for (const Layer& l : view) {
            const double fl = std::max(l.fwd_flops, 1.0), bl = std::max(l.bwd_flops, 1.0);
            for (int op : l.ops) {
                Op& graph_op = g.ops[static_cast<size_t>(op)];
                const double fshare = l.fwd_flops > 0 ? graph_op.fwd_flops / fl : 1.0 / static_cast<double>(l.ops.size());
                const double bshare = l.bwd_flops > 0 ? graph_op.bwd_flops / bl : 1.0 / static_cast<double>(l.ops.size());
                graph_op.fwd_time_s = fwd[static_cast<size_t>(l.index)] * fwd_scale * fshare;
                graph_op.bwd_time_s = bwd[static_cast<size_t>(l.index)] * bwd_scale * bshare;
            }
            const LayerMemory& m = mem[static_cast<size_t>(l.index)];
            share(g, l, m.output_bytes + m.saved_bytes, [](const Op& x) { return x.output_bytes; }, &Op::output_bytes);
            for (int op : l.ops) g.ops[static_cast<size_t>(op)].temp_bytes = std::max(m.fwd_temp_bytes, m.bwd_temp_bytes);
        }
        if (o.out_file.empty()) std::cout << graphToJson(g).dump(2) << std::endl;
        else saveGraphFile(g, o.out_file);
        json memory = json::array();
        for (const LayerMemory& m : mem)
            memory.push_back({{"output_bytes", m.output_bytes}, {"saved_bytes", m.saved_bytes}, {"fwd_temp_bytes", m.fwd_temp_bytes},
                              {"bwd_temp_bytes", m.bwd_temp_bytes}});
        json names = json::array();
        for (const Layer& l : view) names.push_back(l.name);
        json summary = {{"event", "profile"}, {"model", o.model}, {"batch_size", o.batch_size}, {"layers", layers}, {"layer_names", names},
                        {"device", describeDevice(device)}, {"fwd_time_s", fwd}, {"bwd_time_s", bwd}, {"memory", memory},
                        {"model_fwd_time_s", median(whole_fwd)}, {"model_bwd_time_s", median(whole_bwd)}};
        if (!o.out_file.empty()) std::cout << summary.dump() << std::endl;
    } catch (const std::exception& e) {
        return fail(firstLine(e.what()));
    }
    return 0;
}

int makeDataCommand(const std::string& model, const std::string& overrides, int samples, int seq_len, unsigned long long seed,
                    const std::string& out_file) {
    if (!findZooModel(model) && !findModelPreset(model))
        return fail("unknown model '" + model + "'; the engine makes data for the zoo's models (hippie-plan models) and their presets (" +
                    presetNames() + ")");
    if (samples < 1) return fail("--samples must be positive");
    try {
        ModelSpec spec;
        spec.zoo = model;
        spec.seq_len = seq_len;
        applyOverrideText(spec, overrides);
        const Batch b = makeZooTrainable(expandPreset(spec))->synthetic(samples, seed, 0);
        saveTensorFile(out_file, b.inputs, b.targets);
        std::cout << json{{"event", "data"}, {"model", model}, {"file", out_file}, {"samples", samples}, {"inputs", b.inputs.sizes().vec()},
                          {"targets", b.targets.sizes().vec()}}
                         .dump()
                  << std::endl;
    } catch (const Error& e) {
        return fail(e.what());
    }
    return 0;
}

}  // namespace hippie::engine
