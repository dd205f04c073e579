#include "planners/algorithms/placement/m_topo.h"

#include <algorithm>

namespace hippie::placement {

namespace {

// Growing the even share: steps of kShareGrowth of it, at least kShareSteps (to 3x the share)
// and on until it reaches the largest device's capacity.
constexpr int kShareSteps = 8;
constexpr double kShareGrowth = 0.25;

// Fills devices in turn along the topological order, each up to its limit.
std::optional<Assignment> fillInTurn(const PlacementModel& model, const std::vector<int64_t>& limit) {
    DeviceMemory mem(model);
    Assignment a;
    a.device.assign(static_cast<size_t>(model.units()), -1);
    int d = 0;
    for (int u : model.topoOrder()) {
        while (d < model.devices() && !mem.fits(u, d, limit)) ++d;
        if (d == model.devices()) return std::nullopt;
        mem.place(u, d);
        a.device[static_cast<size_t>(u)] = d;
    }
    a.order = model.topoOrder();
    return a;
}

}  // namespace

MTopoPlanner::MTopoPlanner(PlacementOptions options)
    : PlacementPlanner("m-topo", "Baechi's m-TOPO: topological order, devices filled in turn up to an even share of memory",
                       std::move(options)) {}

CoreOutcome MTopoPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                                std::vector<std::string>& log) const {
    context.progress(0.1, "filling devices in topological order");
    int64_t total = 0;
    for (int u = 0; u < model.units(); ++u) total += model.residentBytes(u);
    const int64_t share = total / model.devices() + 1;
    // Even shares first; when ops are left over (an op's resident bytes do not divide
    // evenly, or one op holds more than a share), grow the share step by step so that as many
    // devices as can still get ops, and fill to capacity only when no grown share fits.
    const int64_t largest = *std::max_element(capacity.begin(), capacity.end());
    for (int step = 0; step <= kShareSteps || share + static_cast<int64_t>(static_cast<double>(share) * kShareGrowth * (step - 1)) < largest;
         ++step) {
        const int64_t grown = share + static_cast<int64_t>(static_cast<double>(share) * kShareGrowth * step);
        std::vector<int64_t> limit = capacity;
        for (size_t d = 0; d + 1 < limit.size(); ++d) limit[d] = std::min(limit[d], grown);
        if (auto a = fillInTurn(model, limit)) {
            if (step > 0) log.push_back("even shares leave ops over; shares of " + gib(grown) + " fit");
            return {std::move(a), {}, {}, {}};
        }
    }
    log.push_back("no share of memory up to the largest device's capacity fits; filling devices to capacity");
    if (auto a = fillInTurn(model, capacity))
        return {std::move(a), {}, {}, {"shares of memory did not fit: devices filled to capacity in turn (some may stay idle)"}};
    return {std::nullopt, "filling the devices in topological order runs out of memory", {}, {}};
}

}  // namespace hippie::placement
