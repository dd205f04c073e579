#include "planners/algorithms/placement/m_sct.h"

#include <glpk.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <numeric>

#include "planners/algorithms/placement/list_scheduler.h"
#include "planners/algorithms/placement/run_order.h"

namespace hippie::placement {

namespace {

// The LP is written in milliseconds: op times of 1e-6..1 s become well-scaled coefficients.
constexpr double kLpTimeUnitPerSecond = 1e3;
// A relaxed x below this rounds to 0: the edge's consumer is the favourite child.
constexpr double kFavouriteThreshold = 0.5;
// Share of the remaining time budget the LP may take; list scheduling needs the rest.
constexpr double kLpBudgetShare = 0.5;
// GLPK keeps global state; planners may run in parallel threads.
std::mutex glpk_mutex;

// GLPK allocates an environment for each thread that calls it. Planners run in threads that
// end (compare, the studio), so it is freed when the LP is done: declared before the problem,
// it frees the environment after the problem is deleted and before the lock is released.
struct GlpkEnvironment {
    GlpkEnvironment() = default;
    GlpkEnvironment(const GlpkEnvironment&) = delete;
    GlpkEnvironment& operator=(const GlpkEnvironment&) = delete;
    ~GlpkEnvironment() { glp_free_env(); }
};

struct EdgeRef {
    int src = 0;
    int dst = 0;
    int64_t bytes = 0;
};

std::vector<EdgeRef> edgesOf(const PlacementModel& m) {
    std::vector<EdgeRef> out;
    for (int u = 0; u < m.units(); ++u)
        for (const Arc& a : m.succs(u)) out.push_back({u, a.unit, a.bytes});
    return out;
}

// Sparse constraint matrix in GLPK's 1-based triplet form, rows added as they are written.
class LpBuilder {
public:
    explicit LpBuilder(glp_prob* lp) : lp_(lp), ia_(1), ja_(1), ar_(1) {}

    void row(int type, double bound, std::initializer_list<std::pair<int, double>> terms) {
        const int r = glp_add_rows(lp_, 1);
        glp_set_row_bnds(lp_, r, type, bound, bound);
        for (const auto& [col, coef] : terms) add(r, col, coef);
    }
    int newRow(int type, double bound) {
        const int r = glp_add_rows(lp_, 1);
        glp_set_row_bnds(lp_, r, type, bound, bound);
        return r;
    }
    void add(int r, int col, double coef) {
        ia_.push_back(r);
        ja_.push_back(col);
        ar_.push_back(coef);
    }
    void load() { glp_load_matrix(lp_, static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data()); }

private:
    glp_prob* lp_;
    std::vector<int> ia_, ja_;
    std::vector<double> ar_;
};

// Columns: s_i = 1..n, x_e = n+1..n+E, w = n+E+1.
void buildSctLp(glp_prob* lp, const PlacementModel& m, const std::vector<EdgeRef>& edges) {
    const int n = m.units(), e_count = static_cast<int>(edges.size());
    const int w = n + e_count + 1;
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, w);
    for (int c = 1; c <= n; ++c) glp_set_col_bnds(lp, c, GLP_LO, 0, 0);
    for (int c = n + 1; c < w; ++c) glp_set_col_bnds(lp, c, GLP_DB, 0, 1);
    glp_set_col_bnds(lp, w, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, w, 1.0);
    auto p = [&](int u) { return m.meanComputeSeconds(u) * kLpTimeUnitPerSecond; };
    LpBuilder b(lp);
    std::vector<int> out_row(static_cast<size_t>(n), 0), in_row(static_cast<size_t>(n), 0);
    for (int u = 0; u < n; ++u) {
        const auto k_out = static_cast<double>(m.succs(u).size()), k_in = static_cast<double>(m.preds(u).size());
        if (k_out >= 2) out_row[static_cast<size_t>(u)] = b.newRow(GLP_LO, k_out - 1);
        if (k_in >= 2) in_row[static_cast<size_t>(u)] = b.newRow(GLP_LO, k_in - 1);
        if (k_out == 0) b.row(GLP_LO, p(u), {{w, 1.0}, {u + 1, -1.0}});
    }
    for (int e = 0; e < e_count; ++e) {
        const EdgeRef& ed = edges[static_cast<size_t>(e)];
        const int x = n + e + 1;
        const double c = m.typicalCommSeconds(ed.bytes) * kLpTimeUnitPerSecond;
        b.row(GLP_LO, p(ed.src), {{ed.dst + 1, 1.0}, {ed.src + 1, -1.0}, {x, -c}});
        if (int r = out_row[static_cast<size_t>(ed.src)]) b.add(r, x, 1.0);
        if (int r = in_row[static_cast<size_t>(ed.dst)]) b.add(r, x, 1.0);
    }
    b.load();
}

// Rounds x at 1/2, most favoured edges first so each op keeps at most one favourite either way.
void roundFavourites(const PlacementModel& m, const std::vector<EdgeRef>& edges, const std::vector<double>& x, Favourites& f) {
    std::vector<size_t> by_x(edges.size());
    std::iota(by_x.begin(), by_x.end(), size_t{0});
    std::stable_sort(by_x.begin(), by_x.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
    for (size_t e : by_x) {
        if (x[e] >= kFavouriteThreshold) break;
        const EdgeRef& ed = edges[e];
        if (f.child[static_cast<size_t>(ed.src)] >= 0 || f.parent[static_cast<size_t>(ed.dst)] >= 0) continue;
        f.child[static_cast<size_t>(ed.src)] = ed.dst;
        f.parent[static_cast<size_t>(ed.dst)] = ed.src;
        f.saved_s[static_cast<size_t>(ed.src)] = m.typicalCommSeconds(ed.bytes);
    }
}

// Favourite children on the scheduler's terms: urgent on the parent's device while the
// parent is the last op there; elsewhere, taking a device reserved for another op's
// favourite child costs what that child would pay to move.
class FavouriteChildRule final : public SchedulingRule {
public:
    explicit FavouriteChildRule(const Favourites& f) : f_(f) {}

    bool urgent(int unit, int device, const ScheduleState& s) const override {
        const int parent = f_.parent[static_cast<size_t>(unit)];
        return parent >= 0 && s.device_of[static_cast<size_t>(parent)] == device && s.last_on_device[static_cast<size_t>(device)] == parent;
    }

    double penalty(int unit, int device, const ScheduleState& s) const override {
        const int last = s.last_on_device[static_cast<size_t>(device)];
        if (last < 0) return 0.0;
        const int child = f_.child[static_cast<size_t>(last)];
        if (child < 0 || child == unit || s.device_of[static_cast<size_t>(child)] >= 0) return 0.0;
        return f_.saved_s[static_cast<size_t>(last)];
    }

private:
    const Favourites& f_;
};

}  // namespace

Favourites favouriteChildren(const PlacementModel& model, double time_limit_s) {
    const auto n = static_cast<size_t>(model.units());
    Favourites f;
    f.child.assign(n, -1);
    f.parent.assign(n, -1);
    f.saved_s.assign(n, 0.0);
    const auto edges = edgesOf(model);
    if (edges.empty()) {
        f.solved = true;
        return f;
    }
    const std::lock_guard<std::mutex> lock(glpk_mutex);
    const GlpkEnvironment environment;
    glp_term_out(GLP_OFF);  // the scaler and presolver print otherwise
    std::unique_ptr<glp_prob, void (*)(glp_prob*)> lp(glp_create_prob(), glp_delete_prob);
    buildSctLp(lp.get(), model, edges);
    glp_scale_prob(lp.get(), GLP_SF_AUTO);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;  // several times faster than the primal simplex on these LPs
    parm.presolve = GLP_ON;
    parm.tm_lim = static_cast<int>(std::clamp(time_limit_s, 0.0, 1e6) * 1e3);
    const int rc = glp_simplex(lp.get(), &parm);
    if (rc != 0 || glp_get_status(lp.get()) != GLP_OPT) {
        f.note = "GLPK did not solve the SCT LP (" + std::string(rc == GLP_ETMLIM ? "time limit" : "code " + std::to_string(rc)) +
                 "); scheduling without favourite children";
        return f;
    }
    std::vector<double> x(edges.size());
    for (size_t e = 0; e < edges.size(); ++e) x[e] = glp_get_col_prim(lp.get(), static_cast<int>(n + e + 1));
    f.solved = true;
    f.lp_makespan_s = glp_get_obj_val(lp.get()) / kLpTimeUnitPerSecond;
    roundFavourites(model, edges, x, f);
    return f;
}

MSctPlanner::MSctPlanner(PlacementOptions options)
    : PlacementPlanner("m-sct", "Baechi's m-SCT: m-ETF with favourite children from the SCT LP relaxation (solved with GLPK)",
                       std::move(options)) {}

CoreOutcome MSctPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                               std::vector<std::string>& log) const {
    if (!favourites_) {
        context.progress(0.03, "solving the SCT linear program");
        const double left_s = model.problem().time_budget_s - context.elapsedSeconds();
        favourites_ = favouriteChildren(model, kLpBudgetShare * left_s);
        const auto pairs = std::count_if(favourites_->child.begin(), favourites_->child.end(), [](int c) { return c >= 0; });
        log.push_back(favourites_->solved ? "m-sct: LP makespan " + std::to_string(favourites_->lp_makespan_s) + " s, " +
                                                std::to_string(pairs) + " favourite children"
                                          : "m-sct: " + favourites_->note);
    }
    ScheduleOutcome s = listSchedule(model, capacity, FavouriteChildRule(*favourites_), context);
    std::vector<std::string> notes;
    if (!favourites_->solved) notes.push_back(favourites_->note + ": this is m-ETF's placement");
    if (!s.schedule) return {std::nullopt, s.reason, {}, notes};
    log.push_back("m-sct: estimated makespan " + std::to_string(s.schedule->makespan_s) + " s");
    OrderChoice c = chooseExecutionOrder(model, std::move(s.schedule->assignment), capacity);
    log.push_back(executionOrderLine("m-sct", c));
    return {std::move(c.assignment), {}, {}, notes};
}

}  // namespace hippie::placement
