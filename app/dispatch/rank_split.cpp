#include "app/dispatch/rank_split.h"

#include <QHostAddress>

#include <numeric>
#include <string>

#include "planners/common/error.h"

namespace hippie::dispatch {

std::vector<RankShare> splitRanks(int world, const std::vector<int>& capacities) {
    const int n = static_cast<int>(capacities.size());
    if (n == 0) throw Error("no worker chosen: pick the local machine or an agent");
    if (world < 1) throw Error("the plan has no ranks");
    if (n > world)
        throw Error("the plan has " + std::to_string(world) + " ranks but " + std::to_string(n) +
                    " workers were chosen; choose at most " + std::to_string(world));
    std::vector<RankShare> out(static_cast<size_t>(n));
    bool known = true;
    for (int c : capacities) known = known && c > 0;
    if (known && std::accumulate(capacities.begin(), capacities.end(), 0) >= world) {
        int next = 0;
        for (int i = 0; i < n; ++i) {
            // Every worker keeps at least one rank: it was chosen to take part.
            const int left_for_others = n - 1 - i;
            const int take = std::max(1, std::min(capacities[static_cast<size_t>(i)], world - next - left_for_others));
            out[static_cast<size_t>(i)] = {next, take};
            next += take;
        }
        if (next == world) return out;
    }
    for (int i = 0; i < n; ++i) {
        const int first = i * world / n, end = (i + 1) * world / n;
        out[static_cast<size_t>(i)] = {first, end - first};
    }
    return out;
}

bool isLoopbackHost(const QString& host) {
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0) return true;
    const QHostAddress a(host);
    return !a.isNull() && a.isLoopback();
}

}  // namespace hippie::dispatch
