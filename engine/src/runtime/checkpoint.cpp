#include "engine/src/runtime/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

#include "planners/common/error.h"

namespace hippie::engine {

namespace fs = std::filesystem;

namespace {

std::string rankDir(const std::string& dir, int rank) { return (fs::path(dir) / ("rank-" + std::to_string(rank))).string(); }

void fsyncPath(const std::string& path, bool directory) {
    const int fd = open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) throw Error("checkpoint: cannot open '" + path + "' to sync it: " + std::strerror(errno));
    const int rc = fsync(fd);
    close(fd);
    if (rc != 0) throw Error("checkpoint: fsync of '" + path + "' failed: " + std::strerror(errno));
}

}  // namespace

std::string checkpointPath(const std::string& dir, int rank, int step) {
    return (fs::path(rankDir(dir, rank)) / ("step-" + std::to_string(step) + ".pt")).string();
}

void writeCheckpoint(const std::string& dir, int rank, int step, int64_t global_batch, const Executor& ex) {
    const std::string rdir = rankDir(dir, rank);
    std::error_code ec;
    fs::create_directories(rdir, ec);
    if (ec) throw Error("--checkpoint-dir: cannot create '" + rdir + "': " + ec.message());
    torch::serialize::OutputArchive a;
    ex.saveState(a);
    a.write("step", torch::tensor({int64_t{step}}, torch::kLong));
    a.write("samples_seen", torch::tensor({(int64_t{step} + 1) * global_batch}, torch::kLong));
    {
        auto gen = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(gen.mutex());
        a.write("cpu_rng_state", gen.get_state());
    }
    const std::string final_path = checkpointPath(dir, rank, step);
    const std::string tmp = final_path + ".tmp";
    try {
        a.save_to(tmp);
    } catch (const std::exception& e) {
        throw Error("checkpoint: cannot write '" + tmp + "': " + std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
    }
    fsyncPath(tmp, false);
    if (std::rename(tmp.c_str(), final_path.c_str()) != 0)
        throw Error("checkpoint: cannot rename '" + tmp + "' to '" + final_path + "': " + std::strerror(errno));
    fsyncPath(rdir, true);  // the rename itself is durable
}

std::vector<int> checkpointSteps(const std::string& dir, int rank) {
    std::vector<int> steps;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(rankDir(dir, rank), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("step-", 0) != 0 || e.path().extension() != ".pt") continue;
        try {
            steps.push_back(std::stoi(name.substr(5)));
        } catch (const std::exception&) {
        }
    }
    std::sort(steps.begin(), steps.end());
    return steps;
}

CheckpointInfo readCheckpoint(const std::string& dir, int rank, int step, Executor& ex) {
    const std::string path = checkpointPath(dir, rank, step);
    CheckpointInfo info;
    try {
        torch::serialize::InputArchive a;
        a.load_from(path);
        ex.loadState(a);
        // A fresh tensor for each key: read() into a defined tensor re-points its storage.
        torch::Tensor step_t, seen_t, rng_t;
        a.read("step", step_t);
        info.step = static_cast<int>(step_t.item<int64_t>());
        a.read("samples_seen", seen_t);
        info.samples_seen = seen_t.item<int64_t>();
        a.read("cpu_rng_state", rng_t);
        auto gen = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(rng_t.clone());
    } catch (const Error& e) {
        throw Error("checkpoint '" + path + "': " + e.what());
    } catch (const std::exception& e) {
        const std::string what = e.what();
        throw Error("checkpoint '" + path + "' cannot be read: " + what.substr(0, what.find('\n')));
    }
    if (info.step != step) throw Error("checkpoint '" + path + "' holds step " + std::to_string(info.step));
    return info;
}

void pruneCheckpoints(const std::string& dir, int rank, size_t keep) {
    const std::vector<int> steps = checkpointSteps(dir, rank);
    for (size_t i = 0; i + keep < steps.size(); ++i) {
        std::error_code ec;
        fs::remove(checkpointPath(dir, rank, steps[i]), ec);
    }
}

}  // namespace hippie::engine
