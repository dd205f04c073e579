// hippie-plan runs [--db FILE] [--json] [--state S] [--id N]
#include "app/cli/dispatch/cmd_runs.h"

#include <QDateTime>
#include <QFileInfo>

#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/dispatch/core_app.h"
#include "app/cli/format.h"
#include "app/cli/table.h"
#include "app/dispatch/lost_runs.h"
#include "app/store/run_store.h"
#include "planners/common/error.h"

namespace hippie::cli {

namespace {

using nlohmann::json;
using store::RunDetails;
using store::RunState;
using store::RunStore;
using store::RunSummary;

constexpr int kLogLinesShown = 20;  // the tail of a run's log in the text view; --json has all
constexpr qint64 kMsPerSecond = 1000;
constexpr qint64 kSecondsPerMinute = 60;
constexpr qint64 kSecondsPerHour = 3600;

struct RunsOptions {
    std::string db;
    bool json = false;
    std::string state;
    long long id = 0;
};

std::string str(const QString& s) { return s.toStdString(); }

std::string allStateNames() {
    std::string out;
    for (RunState s : {RunState::Queued, RunState::Running, RunState::Succeeded, RunState::Failed, RunState::Cancelled,
                       RunState::Lost})
        out += (out.empty() ? "" : ", ") + str(store::runStateName(s));
    return out;
}

std::string timeText(qint64 ms) {
    if (ms <= 0) return "-";
    return str(QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")));
}

std::string durationText(const RunSummary& r) {
    if (r.started_ms <= 0) return "-";
    const bool running = r.ended_ms <= 0;
    const qint64 end = running ? QDateTime::currentMSecsSinceEpoch() : r.ended_ms;
    const double seconds = static_cast<double>(end - r.started_ms) / kMsPerSecond;
    std::string text;
    if (seconds < kSecondsPerMinute) {
        text = fixed(seconds, 1) + " s";
    } else {
        const auto s = static_cast<qint64>(seconds);
        char buf[32];
        if (s < kSecondsPerHour)
            std::snprintf(buf, sizeof buf, "%lldm %02llds", static_cast<long long>(s / kSecondsPerMinute),
                          static_cast<long long>(s % kSecondsPerMinute));
        else
            std::snprintf(buf, sizeof buf, "%lldh %02lldm", static_cast<long long>(s / kSecondsPerHour),
                          static_cast<long long>(s % kSecondsPerHour / kSecondsPerMinute));
        text = buf;
    }
    return running ? text + " so far" : text;
}

std::string optionalMs(const std::optional<double>& seconds) { return seconds ? milliseconds(*seconds) : "-"; }

std::string errorText(const RunSummary& r) {
    const auto e = r.errorPercent();
    if (!e) return "-";
    return (*e >= 0 ? "+" : "") + fixed(*e, 1) + "%";
}

json optionalJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json msJson(qint64 ms) { return ms > 0 ? json(ms) : json(nullptr); }

json summaryJson(const RunSummary& r) {
    return {{"id", r.id},
            {"plan_id", r.plan_id},
            {"job_id", r.job_id.isEmpty() ? json(nullptr) : json(str(r.job_id))},
            {"state", str(store::runStateName(r.state))},
            {"message", str(r.message)},
            {"model", str(r.model)},
            {"cluster", str(r.cluster)},
            {"planner", str(r.planner)},
            {"created_ms", msJson(r.created_ms)},
            {"started_ms", msJson(r.started_ms)},
            {"ended_ms", msJson(r.ended_ms)},
            {"workers", r.workers},
            {"attempt", r.attempt},
            {"checkpoint_every", r.checkpoint_every},
            {"checkpoint_dir", r.checkpoint_dir.isEmpty() ? json(nullptr) : json(str(r.checkpoint_dir))},
            {"data_file", r.options.value("data_file", json(nullptr))},  // null: synthetic data
            {"predicted_step_s", optionalJson(r.predicted_step_s)},
            {"measured_step_s", optionalJson(r.measured_step_s)},
            {"measured_samples_per_s", optionalJson(r.measured_samples_per_s)},
            {"final_loss", optionalJson(r.final_loss)},
            {"error_percent", optionalJson(r.errorPercent())}};
}

void printRunTable(const std::vector<RunSummary>& runs, const QString& path) {
    if (runs.empty()) {
        std::cout << "No runs in " << str(path) << ".\n";
        return;
    }
    Table t({{"id", Align::Right},
             {"state"},
             {"model"},
             {"cluster"},
             {"planner"},
             {"start"},
             {"duration", Align::Right},
             {"predicted step", Align::Right},
             {"measured step", Align::Right},
             {"error", Align::Right}});
    for (const RunSummary& r : runs)
        t.addRow({std::to_string(r.id), str(store::runStateName(r.state)), str(r.model), str(r.cluster), str(r.planner),
                  timeText(r.started_ms), durationText(r), optionalMs(r.predicted_step_s), optionalMs(r.measured_step_s),
                  errorText(r)});
    t.print(std::cout);
}

json detailsJson(const RunDetails& d) {
    json events = json::array();
    for (const auto& e : d.events) events.push_back({{"attempt", e.attempt}, {"source", e.source}, {"seq", e.seq}, {"event", e.event}});
    json attempts = json::array();
    for (const auto& a : d.attempts)
        attempts.push_back({{"attempt", a.attempt}, {"job_id", str(a.job_id)}, {"workers", a.workers},
                            {"state", str(store::runStateName(a.state))}, {"message", str(a.message)},
                            {"started_ms", msJson(a.started_ms)}, {"ended_ms", msJson(a.ended_ms)}});
    json metrics = json::object();
    for (const auto& [name, value] : d.metrics) metrics[str(name)] = value;
    json logs = json::array();
    for (const auto& l : d.logs) logs.push_back({{"rank", l.rank}, {"stream", str(l.stream)}, {"text", str(l.text)}});
    json out = summaryJson(d.summary);
    out["plan"] = d.plan;
    out["model_json"] = d.model;
    out["cluster_json"] = d.cluster;
    out["predicted_metrics"] = d.predicted_metrics;
    out["metrics"] = metrics;
    out["events"] = events;
    out["attempts"] = attempts;
    out["logs"] = logs;
    out["measured_trace"] = d.measured_trace;
    out["measured_trace_error"] = d.measured_trace_error.isEmpty() ? json(nullptr) : json(str(d.measured_trace_error));
    return out;
}

void printDetails(const RunDetails& d) {
    const RunSummary& r = d.summary;
    std::vector<std::pair<std::string, std::string>> fields = {
        {"run", std::to_string(r.id)},
        {"state", str(store::runStateName(r.state))},
        {"job", r.job_id.isEmpty() ? "-" : str(r.job_id)},
        {"model", str(r.model)},
        {"cluster", str(r.cluster)},
        {"planner", str(r.planner)},
        {"plan", std::to_string(r.plan_id)},
        {"created", timeText(r.created_ms)},
        {"started", timeText(r.started_ms)},
        {"ended", timeText(r.ended_ms)},
        {"duration", durationText(r)},
        {"workers", r.workers.dump()},
        {"predicted step", optionalMs(r.predicted_step_s)},
        {"measured step", optionalMs(r.measured_step_s)},
        {"error", errorText(r)},
        {"samples/s", r.measured_samples_per_s ? fixed(*r.measured_samples_per_s, 1) : "-"},
        {"final loss", r.final_loss ? fixed(*r.final_loss, 4) : "-"}};
    if (!r.message.isEmpty()) fields.emplace_back("message", str(r.message));
    if (r.checkpoint_every > 0)
        fields.emplace_back("checkpoints", "every " + std::to_string(r.checkpoint_every) + " steps in " + str(r.checkpoint_dir));
    if (r.attempt > 1) {
        std::string earlier;
        for (const auto& a : d.attempts)
            earlier += "; " + std::to_string(a.attempt) + " " + str(store::runStateName(a.state)) +
                       (a.message.isEmpty() ? "" : " (" + str(a.message) + ")");
        fields.emplace_back("attempt", std::to_string(r.attempt) + earlier);
    }
    printFields(std::cout, fields);

    if (!d.metrics.empty()) {
        printHeading(std::cout, "Metrics");
        Table t({{"name"}, {"value", Align::Right}});
        for (const auto& [name, value] : d.metrics) t.addRow({str(name), fixed(value, 6)});
        t.print(std::cout);
    }

    printHeading(std::cout, "Events");
    std::map<std::string, int> by_kind;
    for (const auto& e : d.events)
        by_kind[e.event.is_object() && e.event.contains("event") && e.event["event"].is_string()
                    ? e.event["event"].get<std::string>()
                    : "(none)"]++;
    if (by_kind.empty()) std::cout << "none\n";
    else {
        Table t({{"event"}, {"count", Align::Right}});
        for (const auto& [kind, n] : by_kind) t.addRow({kind, std::to_string(n)});
        t.print(std::cout);
    }

    printHeading(std::cout, "Measured trace");
    if (d.measured_trace.is_object()) {
        const json& m = d.measured_trace["metrics"];
        printFields(std::cout, {{"devices", std::to_string(d.measured_trace["devices"].size())},
                                {"events", std::to_string(d.measured_trace["events"].size())},
                                {"iteration", milliseconds(m["iteration_time_s"].get<double>())},
                                {"bubble", percent(m["bubble_fraction"].get<double>())}});
    } else if (!d.measured_trace_error.isEmpty()) {
        std::cout << "unreadable: " << str(d.measured_trace_error) << '\n';
    } else {
        std::cout << "none\n";
    }

    printHeading(std::cout, "Log");
    if (d.logs.empty()) std::cout << "none\n";
    const size_t first = d.logs.size() > static_cast<size_t>(kLogLinesShown) ? d.logs.size() - kLogLinesShown : 0;
    if (first > 0) std::cout << "(" << first << " earlier chunks; --json shows them all)\n";
    for (size_t i = first; i < d.logs.size(); ++i) {
        const auto& l = d.logs[i];
        std::string text = str(l.text);
        if (!text.empty() && text.back() == '\n') text.pop_back();
        std::cout << "[rank " << l.rank << ' ' << str(l.stream) << "] " << text << '\n';
    }
}

int runRuns(const RunsOptions& o) {
    const auto app = ensureCoreApplication();

    std::optional<RunState> state;
    if (!o.state.empty()) {
        state = store::runStateFromName(QString::fromStdString(o.state));
        if (!state) throw Error("--state '" + o.state + "' is not a run state (use " + allStateNames() + ")");
    }
    const bool default_db = o.db.empty();
    const QString path = default_db ? RunStore::defaultPath() : QString::fromStdString(o.db);
    // Listing never creates a database: a missing default one just means no runs yet.
    if (!QFileInfo::exists(path)) {
        if (!default_db)
            throw Error("--db " + o.db + ": no such file (the studio and `hippie-plan dispatch` create it; the default is " +
                        str(RunStore::defaultPath()) + ")");
        if (o.id > 0) throw Error("there is no run " + std::to_string(o.id) + ": " + str(path) + " does not exist yet");
        if (o.json) std::cout << "[]\n";
        else std::cout << "No runs yet: " << str(path) << " does not exist.\n";
        return kExitOk;
    }
    RunStore db(path);
    // As the studio does on start: a run whose driver died (a killed dispatch) and whose workers
    // are all unreachable would otherwise show "running" forever.
    dispatch::markUnreachableRunsLost(db);
    if (o.id > 0) {
        const RunDetails d = db.runDetails(o.id);
        if (o.json) std::cout << detailsJson(d).dump(2) << '\n';
        else printDetails(d);
        return kExitOk;
    }
    store::RunFilter filter;
    filter.state = state;
    filter.limit = std::numeric_limits<int>::max();
    const std::vector<RunSummary> runs = db.listRuns(filter);
    if (o.json) {
        json out = json::array();
        for (const RunSummary& r : runs) out.push_back(summaryJson(r));
        std::cout << out.dump(2) << '\n';
    } else {
        printRunTable(runs, path);
    }
    return kExitOk;
}

}  // namespace

Command addRunsCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("runs", "List the runs kept in the run store (newest first), or show one");
    auto o = std::make_shared<RunsOptions>();
    sub->add_option("--db", o->db, "the run database (default: $XDG_DATA_HOME/hippie-studio/runs.sqlite)");
    sub->add_flag("--json", o->json, "print JSON instead of a table");
    sub->add_option("--state", o->state, "only runs in this state: " + allStateNames());
    sub->add_option("--id", o->id, "show this run in detail: metrics, events, measured trace and log")
        ->check(CLI::PositiveNumber);
    return {sub, [o] { return runRuns(*o); }};
}

}  // namespace hippie::cli
