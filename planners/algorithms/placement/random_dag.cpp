#include "planners/algorithms/placement/random_dag.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "planners/common/error.h"

namespace hippie::placement {

namespace {

using Rng = std::mt19937_64;

double logUniform(Rng& rng, double lo, double hi) {
    return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
}

int64_t logUniformBytes(Rng& rng, int64_t lo, int64_t hi) {
    return static_cast<int64_t>(logUniform(rng, static_cast<double>(lo), static_cast<double>(hi)));
}

class DagBuilder {
public:
    DagBuilder(const RandomDagOptions& o) : o_(o), rng_(o.seed) {
        g_.name = "random-dag-" + std::to_string(o.ops);
        g_.batch_size = o.batch_size;
        g_.source.batch_size = o.batch_size;
    }

    int addOp(int level, const std::string& kind, double fwd_flops) {
        Op op;
        op.name = "l" + std::to_string(level) + ".op" + std::to_string(g_.ops.size());
        op.kind = kind;
        op.layer = level;
        op.fwd_flops = fwd_flops;
        op.bwd_flops = 2 * fwd_flops;
        op.output_bytes = logUniformBytes(rng_, o_.min_output_bytes, o_.max_output_bytes);
        if (kind == "matmul") op.param_bytes = logUniformBytes(rng_, o_.min_param_bytes, o_.max_param_bytes);
        g_.ops.push_back(op);
        return static_cast<int>(g_.ops.size()) - 1;
    }

    void connect(int src, int dst) {
        g_.edges.push_back({src, dst, g_.ops[static_cast<size_t>(src)].output_bytes});
        read_[static_cast<size_t>(src)] = true;
    }

    // One level of ops reading the previous level (and sometimes the one before).
    std::vector<int> level(int index, int count, const std::vector<int>& prev, const std::vector<int>& prev2) {
        std::vector<int> ops;
        for (int i = 0; i < count; ++i) {
            const bool weighted = std::uniform_real_distribution<double>(0, 1)(rng_) < o_.weighted_share;
            const int op = addOp(index, weighted ? "matmul" : "elementwise", logUniform(rng_, o_.min_fwd_flops, o_.max_fwd_flops));
            read_.push_back(false);
            std::set<int> inputs;
            const int k = std::uniform_int_distribution<int>(1, o_.max_inputs)(rng_);
            for (int j = 0; j < k; ++j) {
                const bool skip = !prev2.empty() && std::uniform_real_distribution<double>(0, 1)(rng_) < o_.skip_probability;
                const auto& from = skip ? prev2 : prev;
                inputs.insert(from[static_cast<size_t>(std::uniform_int_distribution<int>(0, static_cast<int>(from.size()) - 1)(rng_))]);
            }
            for (int src : inputs) connect(src, op);
            ops.push_back(op);
        }
        // Every op of the previous level is read by someone.
        for (int src : prev)
            if (!read_[static_cast<size_t>(src)]) connect(src, ops[static_cast<size_t>(std::uniform_int_distribution<int>(0, count - 1)(rng_))]);
        return ops;
    }

    Graph build() {
        const int body = o_.ops - 2;
        read_.push_back(false);
        std::vector<int> prev{addOp(0, "input", 0)}, prev2;
        int index = 1;
        for (int made = 0; made < body; made += o_.width, ++index) {
            auto ops = level(index, std::min(o_.width, body - made), prev, prev2);
            prev2 = std::exchange(prev, std::move(ops));
        }
        const int loss = addOp(index, "loss", 0);
        read_.push_back(false);
        for (size_t op = 0; op + 1 < g_.ops.size(); ++op)
            if (!read_[op]) connect(static_cast<int>(op), loss);
        return std::move(g_);
    }

private:
    const RandomDagOptions& o_;
    Rng rng_;
    Graph g_;
    std::vector<bool> read_;  // by op: has a consumer
};

}  // namespace

Graph randomLayeredDag(const RandomDagOptions& options) {
    if (options.ops < 3 || options.width < 1 || options.max_inputs < 1)
        throw Error("random DAG: needs at least 3 ops, a width and at least one input per op");
    return DagBuilder(options).build();
}

}  // namespace hippie::placement
