#pragma once
// Process groups of one rank: a TCPStore rendezvous, a world group for point-to-point
// transfers, and one group per all-reduce group of the Program that holds this rank.
// Gloo over TCP on CPU. On a CUDA device: NCCL when the LibTorch has it (USE_C10D_NCCL) and the
// run asks for it, else Gloo through host copies (slow, but works with ranks sharing a GPU).
// NCCL ignores tags and matches a pair's transfers in order, so point-to-point traffic uses one
// NCCL group per direction (lower -> higher rank, higher -> lower): each carries one direction
// only, in the sender's program order, which the executor checks the receiver posts in the same
// order (Executor::checkLinkOrder).
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace hippie::engine {

struct Rendezvous {
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    int rank = 0;
    int world_size = 1;
    std::chrono::milliseconds connect_timeout{30000};  // reaching the master and the peers
    std::chrono::milliseconds op_timeout{60000};       // one collective or transfer
    std::string gloo_hostname = "127.0.0.1";           // address Gloo binds to and advertises
    torch::Device device{torch::kCPU};                 // where the tensors handed to Comm live
    bool nccl = false;                                 // NCCL groups (CUDA device, USE_C10D_NCCL)
};

// An asynchronous transfer or collective: wait() rethrows a peer's failure as CommError.
class Pending {
public:
    Pending() = default;
    bool valid() const { return impl_ != nullptr; }
    void wait();
    bool completed() const;

    struct Impl;
    explicit Pending(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

private:
    std::shared_ptr<Impl> impl_;
};

class CommError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Comm {
public:
    explicit Comm(const Rendezvous& r);  // throws CommError naming the master on timeout
    ~Comm();
    Comm(const Comm&) = delete;
    Comm& operator=(const Comm&) = delete;

    int rank() const { return rank_; }
    std::string backend() const;  // "gloo", "gloo (host-staged)" or "nccl"
    int worldSize() const { return world_; }

    // Creates the group of global ranks `members` (must contain this rank). Every member calls
    // it with the same id; groups are created in increasing id order on every rank.
    void addGroup(int id, const std::vector<int>& members);
    bool hasGroup(int id) const;

    Pending send(const torch::Tensor& t, int peer, int tag);
    Pending recv(torch::Tensor& t, int peer, int tag);
    Pending allReduceSum(const torch::Tensor& t, int group);
    Pending allReduceMax(const torch::Tensor& t, int group);
    // Every member's `shard` (the same numel on all) into `out` (numel = members x shard), in
    // the group's member order. Gloo and NCCL both have all-gather; Gloo in LibTorch 1.13 has
    // no reduce-scatter, which the executor composes from allReduceSum (ZeRO 2/3).
    Pending allGather(const torch::Tensor& shard, const torch::Tensor& out, int group);
    void barrier();

    void storeSet(const std::string& key, const std::string& value);
    std::string storeGet(const std::string& key);  // waits up to the connect timeout

private:
    Pending allReduce(const torch::Tensor& t, int group, bool max);
    struct State;
    std::unique_ptr<State> s_;
    int rank_ = 0;
    int world_ = 1;
};

}  // namespace hippie::engine
