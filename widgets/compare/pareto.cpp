#include "widgets/compare/pareto.h"

#include <algorithm>
#include <numeric>

namespace hippie::widgets {

std::vector<int> paretoFront(const std::vector<TradeoffPoint>& points) {
    std::vector<int> order(points.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        const TradeoffPoint& pa = points[static_cast<size_t>(a)];
        const TradeoffPoint& pb = points[static_cast<size_t>(b)];
        return pa.memory != pb.memory ? pa.memory < pb.memory : pa.throughput > pb.throughput;
    });
    std::vector<int> front;
    double best_throughput = 0;
    for (int i : order) {
        const TradeoffPoint& p = points[static_cast<size_t>(i)];
        if (front.empty() || p.throughput > best_throughput) {
            front.push_back(i);
            best_throughput = p.throughput;
        }
    }
    return front;
}

}  // namespace hippie::widgets
