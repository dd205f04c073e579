#pragma once
// How the ranks of one plan are shared among the workers of a run, and where they meet.
#include <QString>

#include <vector>

namespace hippie::dispatch {

struct RankShare {
    int first_rank = 0;
    int rank_count = 0;
};

// Contiguous shares of `world` ranks, in worker order (rank 0 on the first worker). When every
// worker's capacity (devices it offers, > 0) is known and they add up to at least `world`, each
// worker is filled up to its capacity in order; otherwise the ranks are spread evenly.
// Throws hippie::Error when there are no workers or more workers than ranks.
std::vector<RankShare> splitRanks(int world, const std::vector<int>& capacities);

// True for 127.0.0.0/8, ::1 and "localhost".
bool isLoopbackHost(const QString& host);

}  // namespace hippie::dispatch
