#pragma once
// The throughput-versus-memory Pareto front: plans no other plan beats on both counts.
#include <vector>

namespace hippie::widgets {

struct TradeoffPoint {
    double memory = 0;      // lower is better
    double throughput = 0;  // higher is better
};

// Indices of the non-dominated points, by increasing memory. A point is dominated when
// another has no more memory and no less throughput, and is strictly better in one.
std::vector<int> paretoFront(const std::vector<TradeoffPoint>& points);

}  // namespace hippie::widgets
