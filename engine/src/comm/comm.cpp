#include "engine/src/comm/comm.h"

#include <functional>

#include "engine/src/comm/c10d_shim.h"
#include "engine/src/launch/ports.h"

namespace hippie::engine {

struct Pending::Impl {
    shim::WorkPtr work;
    std::vector<torch::Tensor> keep;  // the buffers must outlive the transfer
    std::string what;                 // "recv from rank 1", for error messages
    std::function<void()> after;      // host staging: copies the result back to the device
};

void Pending::wait() {
    if (!impl_ || !impl_->work) return;
    try {
        impl_->work->wait();
    } catch (const std::exception& e) {
        throw CommError(impl_->what + " failed: " + e.what());
    }
    impl_->work.reset();
    if (impl_->after) {
        impl_->after();
        impl_->after = nullptr;
    }
}

bool Pending::completed() const { return !impl_ || !impl_->work || impl_->work->isCompleted(); }

struct Comm::State {
    c10::intrusive_ptr<::c10d::Store> store;
    c10::intrusive_ptr<::c10d::ProcessGroupGloo::Options> options;
    c10::intrusive_ptr<::c10d::ProcessGroupGloo> world;  // barrier, and transfers unless NCCL
    std::map<int, shim::GroupPtr> groups;
    shim::GroupPtr up, down;  // NCCL transfers to a higher / lower rank
    bool nccl = false;
    bool staged = false;  // Gloo with tensors on a CUDA device: transfers go through host copies
    std::map<int, std::vector<int>> members;
    std::chrono::milliseconds connect_timeout{};
    std::chrono::milliseconds op_timeout{};
    std::string master;
};

namespace {

std::string peerName(int rank) { return "rank " + std::to_string(rank); }

#if defined(USE_C10D_NCCL)
shim::GroupPtr makeNccl(const c10::intrusive_ptr<::c10d::Store>& store, const std::string& prefix, int rank, int size,
                        std::chrono::milliseconds timeout) {
    auto options = ::c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<::c10d::ProcessGroupNCCL>(c10::make_intrusive<::c10d::PrefixStore>(prefix, store), rank, size, options);
}
#endif

}  // namespace

Comm::Comm(const Rendezvous& r) : s_(std::make_unique<State>()), rank_(r.rank), world_(r.world_size) {
    s_->connect_timeout = r.connect_timeout;
    s_->master = r.master_addr + ":" + std::to_string(r.master_port);
    ::c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(r.master_port);
    o.isServer = r.rank == 0;
    o.numWorkers = static_cast<std::size_t>(r.world_size);
    o.waitWorkers = false;
    o.timeout = r.connect_timeout;
    if (r.rank != 0) waitForListener(r.master_addr, r.master_port, r.connect_timeout.count());  // else TCPStore's 1 s retry
    try {
        s_->store = c10::make_intrusive<::c10d::TCPStore>(r.master_addr, o);
    } catch (const std::exception& e) {
        throw CommError("cannot reach the master " + s_->master + (r.rank == 0 ? " (listening there failed)" : "") +
                        " within " + std::to_string(r.connect_timeout.count() / 1000) +
                        " s: check --master-addr/--master-port and that rank 0 runs (" + e.what() + ")");
    }
    s_->options = ::c10d::ProcessGroupGloo::Options::create(r.op_timeout);
    s_->options->devices.push_back(::c10d::ProcessGroupGloo::createDeviceForHostname(r.gloo_hostname));
    try {
        auto prefixed = c10::make_intrusive<::c10d::PrefixStore>("world", s_->store);
        s_->world = c10::make_intrusive<::c10d::ProcessGroupGloo>(prefixed, r.rank, r.world_size, s_->options);
    } catch (const std::exception& e) {
        throw CommError("connecting the " + std::to_string(r.world_size) + " ranks through " + s_->master +
                        " failed (is every rank started with the same --world-size?): " + e.what());
    }
    if (r.nccl) {
#if defined(USE_C10D_NCCL)
        s_->nccl = true;
        s_->op_timeout = r.op_timeout;
        s_->up = makeNccl(s_->store, "p2p-up", r.rank, r.world_size, r.op_timeout);
        s_->down = makeNccl(s_->store, "p2p-down", r.rank, r.world_size, r.op_timeout);
#else
        throw CommError("NCCL was asked for but this hippie-engine was built without it (no CUDA LibTorch or nccl.h); use --comm gloo");
#endif
    } else {
        s_->staged = r.device.is_cuda();
    }
}

std::string Comm::backend() const { return s_->nccl ? "nccl" : s_->staged ? "gloo (host-staged)" : "gloo"; }

Comm::~Comm() = default;

void Comm::addGroup(int id, const std::vector<int>& members) {
    int local = -1;
    for (size_t i = 0; i < members.size(); ++i)
        if (members[i] == rank_) local = static_cast<int>(i);
    TORCH_CHECK(local >= 0, "addGroup: rank not in the group");
    auto prefixed = c10::make_intrusive<::c10d::PrefixStore>("group" + std::to_string(id), s_->store);
    try {
#if defined(USE_C10D_NCCL)
        if (s_->nccl) {
            s_->groups[id] = makeNccl(s_->store, "group" + std::to_string(id), local, static_cast<int>(members.size()), s_->op_timeout);
            s_->members[id] = members;
            return;
        }
#endif
        s_->groups[id] = c10::make_intrusive<::c10d::ProcessGroupGloo>(prefixed, local, static_cast<int>(members.size()), s_->options);
    } catch (const std::exception& e) {
        throw CommError("creating all-reduce group " + std::to_string(id) + " failed: " + e.what());
    }
    s_->members[id] = members;
}

bool Comm::hasGroup(int id) const { return s_->groups.count(id) > 0; }

Pending Comm::send(const torch::Tensor& t, int peer, int tag) {
    auto impl = std::make_shared<Pending::Impl>();
    impl->keep = {s_->staged ? t.to(torch::kCPU) : t.contiguous()};
    impl->what = "send to " + peerName(peer);
    try {
        if (s_->nccl) impl->work = (peer > rank_ ? s_->up : s_->down)->send(impl->keep, peer, tag);
        else impl->work = s_->world->send(impl->keep, peer, tag);
    } catch (const std::exception& e) {
        throw CommError(impl->what + " failed: " + e.what());
    }
    return Pending(impl);
}

Pending Comm::recv(torch::Tensor& t, int peer, int tag) {
    auto impl = std::make_shared<Pending::Impl>();
    impl->keep = {s_->staged ? torch::empty_like(t, torch::TensorOptions().device(torch::kCPU)) : t};
    if (s_->staged) impl->after = [t, host = impl->keep[0]]() mutable { t.copy_(host); };
    impl->what = "receive from " + peerName(peer);
    try {
        if (s_->nccl) impl->work = (peer < rank_ ? s_->up : s_->down)->recv(impl->keep, peer, tag);
        else impl->work = s_->world->recv(impl->keep, peer, tag);
    } catch (const std::exception& e) {
        throw CommError(impl->what + " failed: " + e.what());
    }
    return Pending(impl);
}

Pending Comm::allReduceSum(const torch::Tensor& t, int group) { return allReduce(t, group, false); }

Pending Comm::allReduceMax(const torch::Tensor& t, int group) { return allReduce(t, group, true); }

Pending Comm::allReduce(const torch::Tensor& t, int group, bool max) {
    auto impl = std::make_shared<Pending::Impl>();
    impl->keep = {s_->staged ? t.to(torch::kCPU) : t};
    if (s_->staged) impl->after = [t, host = impl->keep[0]]() mutable { t.copy_(host); };
    std::string ranks;
    for (int m : s_->members.at(group)) ranks += (ranks.empty() ? "" : ",") + std::to_string(m);
    impl->what = std::string(max ? "max " : "") + "all-reduce in group " + std::to_string(group) + " (ranks " + ranks + ")";
    ::c10d::AllreduceOptions o;
    o.reduceOp = max ? ::c10d::ReduceOp::MAX : ::c10d::ReduceOp::SUM;
    try {
        impl->work = s_->groups.at(group)->allreduce(impl->keep, o);
    } catch (const std::exception& e) {
        throw CommError(impl->what + " failed: " + e.what());
    }
    return Pending(impl);
}

Pending Comm::allGather(const torch::Tensor& shard, const torch::Tensor& out, int group) {
    auto impl = std::make_shared<Pending::Impl>();
    const int64_t n = static_cast<int64_t>(s_->members.at(group).size());
    TORCH_CHECK(out.numel() == n * shard.numel(), "allGather: the output holds ", out.numel(), " elements, not ", n, " x ", shard.numel());
    const torch::Tensor host_out = s_->staged ? out.to(torch::kCPU) : out;
    std::vector<torch::Tensor> outputs;
    for (int64_t i = 0; i < n; ++i) outputs.push_back(host_out.narrow(0, i * shard.numel(), shard.numel()));
    impl->keep = {s_->staged ? shard.to(torch::kCPU) : shard.contiguous(), host_out};
    if (s_->staged) impl->after = [out, host_out]() mutable { out.copy_(host_out); };
    std::string ranks;
    for (int m : s_->members.at(group)) ranks += (ranks.empty() ? "" : ",") + std::to_string(m);
    impl->what = "all-gather in group " + std::to_string(group) + " (ranks " + ranks + ")";
    try {
        std::vector<std::vector<torch::Tensor>> out_lists{outputs};
        std::vector<torch::Tensor> in{impl->keep[0]};
        impl->work = s_->groups.at(group)->allgather(out_lists, in);
    } catch (const std::exception& e) {
        throw CommError(impl->what + " failed: " + e.what());
    }
    return Pending(impl);
}

void Comm::barrier() {
    try {
        s_->world->barrier()->wait();
    } catch (const std::exception& e) {
        throw CommError(std::string("barrier of all ranks failed (a rank stopped?): ") + e.what());
    }
}

void Comm::storeSet(const std::string& key, const std::string& value) {
    s_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string Comm::storeGet(const std::string& key) {
    try {
        s_->store->wait({key}, s_->connect_timeout);
        const std::vector<uint8_t> v = s_->store->get(key);
        return std::string(v.begin(), v.end());
    } catch (const std::exception& e) {
        throw CommError("waiting for '" + key + "' from another rank through " + s_->master + " failed: " + e.what());
    }
}

}  // namespace hippie::engine
