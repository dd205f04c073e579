// hippie-plan calibrate --run N [--db FILE] [--check N ...] [--out FILE] [--json]
#include "app/cli/dispatch/cmd_calibrate.h"

#include <QFileInfo>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/dispatch/core_app.h"
#include "app/cli/format.h"
#include "app/cli/table.h"
#include "app/dispatch/stored_run.h"
#include "app/store/run_store.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"

namespace hippie::cli {

namespace {

using nlohmann::json;

struct CalibrateOptions {
    std::string db;
    long long run = 0;
    std::vector<long long> check;
    std::string out;
    bool json = false;
};

// Another stored run predicted on the given and on the calibrated cluster.
struct Check {
    long long run = 0;
    double measured_s = 0, before_s = 0, after_s = 0;
    double errorBefore() const { return (measured_s - before_s) / before_s * 100.0; }
    double errorAfter() const { return (measured_s - after_s) / after_s * 100.0; }
};

double predictStep(const dispatch::StoredRun& r, const Cluster& cluster) {
    const CostModel cost(*r.graph, cluster);
    return simulate(lower(*r.plan, *r.graph), *r.plan, cost).metrics.iteration_time_s;
}

Check checkOn(const QString& db, long long id, const Cluster& calibrated) {
    const dispatch::StoredRun r = dispatch::loadStoredRun(db, id);
    const std::string where = "--check " + std::to_string(id);
    if (!r.error.isEmpty()) throw Error(where + ": " + r.error.toStdString());
    if (!r.predicted) throw Error(where + ": " + r.prediction_note.toStdString());  // plan, graph and cluster simulated
    if (!r.details.summary.measured_step_s) throw Error(where + ": the run has no measured step time (did it succeed?)");
    Check c;
    c.run = id;
    c.measured_s = *r.details.summary.measured_step_s;
    c.before_s = r.predicted->metrics.iteration_time_s;  // loadStoredRun simulated it on the run's cluster
    c.after_s = predictStep(r, calibrated);
    return c;
}

std::string signedPercent(double v) { return (v >= 0 ? "+" : "") + fixed(v, 1) + "%"; }

int runCalibrate(const CalibrateOptions& o) {
    const auto app = ensureCoreApplication();

    const QString db = o.db.empty() ? store::RunStore::defaultPath() : QString::fromStdString(o.db);
    if (!QFileInfo::exists(db)) throw Error("--db " + db.toStdString() + ": no such file (no run has been stored there)");
    const CalibrationResult r = dispatch::calibrateStoredRun(dispatch::loadStoredRun(db, o.run), o.run);
    std::vector<Check> checks;  // a fit that is not kept leaves the cluster as given: nothing to check
    if (r.accepted)
        for (long long id : o.check) checks.push_back(checkOn(db, id, r.cluster));
    if (r.accepted && !o.out.empty()) saveClusterFile(r.cluster, o.out);

    if (o.json) {
        json factors = json::array();
        for (const std::string& f : r.describeFactors()) factors.push_back(f);
        json j = {{"run", o.run},
                  {"accepted", r.accepted},
                  {"refusal", r.refusal},
                  {"factors", factors},
                  {"compute_events", r.compute_events},
                  {"communication_events", r.communication_events},
                  {"unmatched_events", r.unmatched_events},
                  {"event_error_before_percent", r.event_error_before_percent},
                  {"event_error_after_percent", r.event_error_after_percent},
                  {"measured_step_s", r.measured_step_s},
                  {"predicted_step_before_s", r.predicted_step_before_s},
                  {"predicted_step_after_s", r.predicted_step_after_s},
                  {"step_error_before_percent", r.errorBeforePercent()},
                  {"step_error_after_percent", r.errorAfterPercent()},
                  {"cluster", clusterToJson(r.cluster)}};
        json cj = json::array();
        for (const Check& c : checks)
            cj.push_back({{"run", c.run},
                          {"measured_step_s", c.measured_s},
                          {"predicted_step_before_s", c.before_s},
                          {"predicted_step_after_s", c.after_s},
                          {"step_error_before_percent", c.errorBefore()},
                          {"step_error_after_percent", c.errorAfter()}});
        j["checks"] = cj;
        if (r.accepted && !o.out.empty()) j["written"] = o.out;
        std::cout << j.dump(2) << '\n';
    } else {
        std::cout << "Fitted to run " << o.run << ": " << r.compute_events << " compute and " << r.communication_events
                  << " communication events" << (r.unmatched_events ? " (" + std::to_string(r.unmatched_events) + " unmatched)" : "")
                  << "\n";
        const std::vector<std::string> factors = r.describeFactors();
        for (const std::string& f : factors) std::cout << "  " << f << '\n';
        if (factors.empty()) std::cout << "  nothing could be fitted\n";
        printFields(std::cout, {{"event time error", signedPercent(r.event_error_before_percent).substr(1) + " before, " +
                                                         signedPercent(r.event_error_after_percent).substr(1) + " after"},
                                {"measured step", milliseconds(r.measured_step_s)},
                                {"predicted step", milliseconds(r.predicted_step_before_s) + " before, " +
                                                       milliseconds(r.predicted_step_after_s) + " after"},
                                {"step error", signedPercent(r.errorBeforePercent()) + " before, " + signedPercent(r.errorAfterPercent()) + " after"}});
        for (const Check& c : checks)
            std::cout << "check on run " << c.run << ": measured " << milliseconds(c.measured_s) << ", predicted "
                      << milliseconds(c.before_s) << " -> " << milliseconds(c.after_s) << ", error " << signedPercent(c.errorBefore())
                      << " -> " << signedPercent(c.errorAfter()) << '\n';
        if (r.accepted)
            std::cout << (o.out.empty() ? "Kept (use --out FILE to write the calibrated cluster)." : "Kept: wrote " + o.out) << '\n';
        else
            std::cout << "Not kept: " << r.refusal << ".\n";
    }
    return r.accepted ? kExitOk : kExitFitNotKept;
}

}  // namespace

Command addCalibrateCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("calibrate", "Fit a stored run's cluster to its measured trace (the studio's Fit cost model)");
    auto o = std::make_shared<CalibrateOptions>();
    sub->add_option("--run", o->run, "the run to fit to (see 'hippie-plan runs')")->required()->check(CLI::PositiveNumber);
    sub->add_option("--db", o->db, "the run database (default: $XDG_DATA_HOME/hippie-studio/runs.sqlite)");
    sub->add_option("--check", o->check, "also predict these stored runs on the calibrated cluster (repeatable)")
        ->check(CLI::PositiveNumber);
    sub->add_option("--out", o->out, "write the calibrated cluster here when the fit is kept (cluster JSON)");
    sub->add_flag("--json", o->json, "print JSON");
    sub->footer("Exit status: 0 the fit is kept, 2 bad arguments or a run that cannot be fitted, 3 the fit predicts the run's "
                "step worse than the given cluster and is not kept.");
    return {sub, [o] { return runCalibrate(*o); }};
}

}  // namespace hippie::cli
