#include "app/studio/dispatch/dispatch_check.h"

#include <QFileInfo>
#include <QObject>
#include <QProcess>

#include <nlohmann/json.hpp>

#include "app/dispatch/rank_split.h"
#include "planners/common/error.h"
#include "planners/schedule/engine_support.h"

namespace hippie::studio {

namespace {

QString modelName(const Plan& plan) {
    return QString::fromStdString(plan.model.zoo.empty() ? plan.model.file : plan.model.zoo);
}

QString rankRange(const dispatch::RankShare& s) {
    return s.rank_count == 1 ? QObject::tr("rank %1").arg(s.first_rank)
                             : QObject::tr("ranks %1–%2").arg(s.first_rank).arg(s.first_rank + s.rank_count - 1);
}

// The name the engine knows the plan's model by, or "" when it trains a TorchScript module.
QString trainedName(const Plan& plan, const std::optional<Graph>& graph) {
    if (!plan.model.zoo.empty()) return QString::fromStdString(plan.model.zoo);
    if (QFileInfo(QString::fromStdString(plan.model.file)).suffix() == QLatin1String("pt")) return {};
    if (graph && QFileInfo(QString::fromStdString(graph->source.file)).suffix() == QLatin1String("pt")) return {};
    return graph ? QString::fromStdString(graph->name) : QString();
}

void checkEngine(const Plan& plan, const std::optional<Graph>& graph, const EngineInfo& engine, DispatchCheck& out) {
    if (engine.path.isEmpty()) {
        out.blockers << QObject::tr("No hippie-engine was found next to the studio or on PATH, so nothing can run on this "
                                    "machine: install the hippie-engine package (or build with LibTorch), or untick This machine.");
        return;
    }
    if (!engine.models) {
        out.blockers << QObject::tr("The engine %1 did not say which models it trains (%2): check that it runs "
                                    "(`hippie-engine models`).")
                            .arg(engine.path, engine.error);
        return;
    }
    const QString name = trainedName(plan, graph);
    const bool script = name.isEmpty() && (!plan.model.file.empty() || graph);
    if (script) return;  // a TorchScript module: the engine trains whatever it holds
    if (name.isEmpty()) {
        out.blockers << QObject::tr("The plan's model file %1 could not be read, so the engine cannot be checked: open the "
                                    "plan with File ▸ Open plan first.")
                            .arg(modelName(plan));
        return;
    }
    if (!engine.models->contains(name))
        out.blockers << QObject::tr("The engine %1 trains %2; it cannot train '%3'. Plan one of those models, or install an "
                                    "engine that trains '%3'.")
                            .arg(engine.path, engine.models->join(QStringLiteral(", ")), name);
}

}  // namespace

DispatchCheck checkDispatch(const Plan& plan, const std::optional<Graph>& graph, const std::vector<DispatchWorker>& workers,
                            const EngineInfo& engine, int steps, const QString& data_file) {
    DispatchCheck out;
    // Whichever engine runs it (this machine's or an agent's), none trains this yet.
    if (const std::string why = untrainedParallelism(plan); !why.empty()) {
        out.blockers << QObject::tr("The %1 plan cannot run: %2.").arg(QString::fromStdString(plan.planner), QString::fromStdString(why));
        return out;
    }
    const int ranks = plan.deviceCount();
    if (workers.empty()) {
        out.blockers << QObject::tr("Tick at least one worker.");
        return out;
    }
    bool any_local = false, any_remote = false;
    std::vector<int> capacities;
    for (const DispatchWorker& w : workers) {
        any_local = any_local || w.local;
        any_remote = any_remote || !w.local;
        capacities.push_back(w.devices);
    }
    if (any_local) checkEngine(plan, graph, engine, out);
    if (any_local && !data_file.isEmpty() && !QFileInfo(data_file).isFile())
        out.blockers << QObject::tr("The training data %1 is not a file on this machine, whose ranks read it.").arg(data_file);
    if (any_remote) out.warnings << QObject::tr("Each agent checks with its own engine that it trains '%1' when the run starts.").arg(modelName(plan));

    std::vector<dispatch::RankShare> shares;
    try {
        shares = dispatch::splitRanks(ranks, capacities);
    } catch (const Error& e) {
        out.blockers << QString::fromUtf8(e.what());
        return out;
    }
    out.steps << QObject::tr("Start %1 hippie-engine ranks (pp %2 × dp %3) of the %4 plan of %5, %6 schedule, %7 micro-batches:")
                     .arg(ranks)
                     .arg(plan.pipelineDepth())
                     .arg(QString::fromStdString(plan.dpText()))
                     .arg(QString::fromStdString(plan.planner), modelName(plan), QString::fromLatin1(toString(plan.schedule)))
                     .arg(plan.micro_batches);
    for (size_t i = 0; i < workers.size(); ++i) {
        const DispatchWorker& w = workers[i];
        const dispatch::RankShare& s = shares[i];
        if (s.rank_count == 0) continue;
        QString line = QObject::tr("• %1: %2").arg(w.label, rankRange(s));
        if (w.devices <= 0) {
            line += QObject::tr(" (its devices are not known yet: probe it first)");
            out.warnings << QObject::tr("%1 has not been probed: how many devices it has is unknown.").arg(w.label);
        } else if (s.rank_count > w.devices) {
            const int per_device = (s.rank_count + w.devices - 1) / w.devices;
            line += QObject::tr(" on %1 device(s): up to %2 ranks share each device, each with a slice of its memory and "
                                "compute")
                        .arg(w.devices)
                        .arg(per_device);
            out.shares_devices = true;
        } else {
            line += QObject::tr(" on %1 of its %2 device(s), one rank each").arg(s.rank_count).arg(w.devices);
        }
        out.steps << line;
    }
    const QString data = data_file.isEmpty() ? QObject::tr("synthetic data")
                                             : QObject::tr("%1 (every rank reads it where it runs)").arg(data_file);
    out.steps << QObject::tr("Train %1 step(s) on %2; the Run page shows loss, step time and memory as they come, "
                             "and Cancel stops every rank.")
                     .arg(steps)
                     .arg(data);
    if (out.shares_devices)
        out.warnings << QObject::tr("The plan needs %1 devices but the ticked workers have fewer: ranks will share devices and "
                                    "may run out of memory. Tick more workers, or tick \"Let ranks share devices\".")
                            .arg(ranks);
    return out;
}

EngineInfo askEngine(const QString& engine, int timeout_ms) {
    EngineInfo info;
    info.path = engine;
    if (engine.isEmpty()) return info;
    QProcess p;
    p.start(engine, {QStringLiteral("models")});
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished(1000);
        info.error = QObject::tr("no answer within %1 s").arg(timeout_ms / 1000);
        return info;
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        info.error = QObject::tr("exit code %1").arg(p.exitCode());
        return info;
    }
    QStringList names;
    for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
        if (line.trimmed().isEmpty()) continue;
        const nlohmann::json j = nlohmann::json::parse(line.toStdString(), nullptr, false);
        if (j.is_object() && j.contains("name") && j["name"].is_string()) names << QString::fromStdString(j["name"].get<std::string>());
    }
    if (names.isEmpty()) {
        info.error = QObject::tr("it listed no models");
        return info;
    }
    info.models = names;
    return info;
}

}  // namespace hippie::studio
