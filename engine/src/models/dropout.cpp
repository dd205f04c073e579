#include "engine/src/models/dropout.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hippie::engine {

using torch::Tensor;

namespace {

thread_local DropoutStream current_stream;

// An element's counter (its index in the sample's tensor) must stay below 2^32: the hash below
// works on 32-bit values held in int64 lanes, where no product overflows.
constexpr int64_t kCounterLimit = int64_t{1} << 32;
constexpr int64_t kLow32 = kCounterLimit - 1;
constexpr int64_t kCounterMultiplier = 0x2545F491;  // odd, below 2^30: counter x it < 2^62
constexpr int64_t kMixMultiplier = 0x45D9F3B;       // odd, below 2^27 (a 32-bit integer hash's)
constexpr int kMixShift = 16;
// Elements hashed at once: on a CPU 512 KiB of int64, so that the passes stay in cache (a 6.3M-
// element mask took 460 ms at 2^24, 133 ms at 2^16, against 157 ms for torch::dropout); on a GPU
// 128 MiB, so that a mask is a few kernels, not thousands.
constexpr int64_t kCpuChunk = int64_t{1} << 16;
constexpr int64_t kGpuChunk = int64_t{1} << 24;

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (const unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
    return h;
}

// One sample's key: 32 bits of a hash of (seed, step, op, sample).
int64_t sampleKey(const DropoutStream& s, uint64_t op, int64_t sample) {
    uint64_t h = splitmix64(s.seed);
    h = splitmix64(h ^ static_cast<uint64_t>(s.step));
    h = splitmix64(h ^ op);
    h = splitmix64(h ^ static_cast<uint64_t>(sample));
    return static_cast<int64_t>(h & static_cast<uint64_t>(kLow32));
}

}  // namespace

DropoutScope::DropoutScope(const DropoutStream& stream) : saved_(current_stream) { current_stream = stream; }
DropoutScope::~DropoutScope() { current_stream = saved_; }

DropoutStream currentDropoutStream() { return current_stream; }

Tensor dropoutKeep(const Tensor& x, double p, const DropoutSite& site, const DropoutStream& stream) {
    TORCH_CHECK(x.dim() >= 1, "dropout ", site.op, ": a tensor without a sample dimension");
    const int64_t b = x.size(0), n = b > 0 ? x.numel() / b : 0;
    TORCH_CHECK(site.offset >= 0 && site.offset + n <= kCounterLimit, "dropout ", site.op, ": a sample's tensor of ", site.offset + n,
                " elements; the engine's dropout masks hold 2^32 elements a sample");
    // Kept where the hash, uniform on [0, 2^32), is at least p x 2^32.
    const auto threshold = static_cast<int64_t>(std::llround(p * static_cast<double>(kCounterLimit)));
    const uint64_t op = fnv1a(site.op);
    Tensor keep = torch::empty({b, n}, x.options().dtype(torch::kBool));
    if (b == 0 || n == 0) return keep.view(x.sizes());
    const auto longs = x.options().dtype(torch::kLong);
    // Hashed a block of samples by a chunk of their elements at a time.
    const int64_t most = x.is_cpu() ? kCpuChunk : kGpuChunk;
    const int64_t chunk = std::min(n, most), samples_at_once = std::max<int64_t>(1, most / chunk);
    for (int64_t first = 0; first < b; first += samples_at_once) {
        const int64_t count = std::min(samples_at_once, b - first);
        std::vector<int64_t> keys(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) keys[static_cast<size_t>(i)] = sampleKey(stream, op, stream.first_sample + first + i);
        const Tensor key = torch::tensor(keys, torch::kLong).to(x.device()).unsqueeze(1);
        for (int64_t from = 0; from < n; from += chunk) {
            const int64_t len = std::min(chunk, n - from);
            Tensor h = torch::arange(site.offset + from, site.offset + from + len, longs).mul_(kCounterMultiplier).unsqueeze(0).bitwise_xor(key);
            h.bitwise_and_(kLow32);
            for (int round = 0; round < 2; ++round) {
                h.bitwise_xor_(h.__rshift__(kMixShift));
                h.mul_(kMixMultiplier).bitwise_and_(kLow32);
            }
            h.bitwise_xor_(h.__rshift__(kMixShift));
            keep.narrow(0, first, count).narrow(1, from, len).copy_(h.ge(threshold));
        }
    }
    return keep.view(x.sizes());
}

Tensor applyDropout(const Tensor& x, const Tensor& keep, double p) {
    if (p <= 0) return x;
    return x.masked_fill(keep.logical_not(), 0) * (1.0 / (1.0 - p));
}

Tensor dropout(const Tensor& x, double p, const DropoutSite& site, bool training) {
    if (p <= 0 || !training) return x;
    return applyDropout(x, dropoutKeep(x, p, site, currentDropoutStream()), p);
}

}  // namespace hippie::engine
