#include "app/studio/studio_settings.h"

#include <exception>

#include <QSettings>

#include "planners/model/overrides.h"

namespace hippie::studio {

namespace {
constexpr const char* kDefaultModel = "gpt2-small";
constexpr const char* kDefaultCluster = "dgx-a100-1x8";
constexpr int kDefaultBatch = 8;
}  // namespace

StudioSettings StudioSettings::load() {
    const QSettings s(QStringLiteral("hippie"), QStringLiteral("hippie-studio"));
    StudioSettings out;
    out.geometry = s.value(QStringLiteral("window/geometry")).toByteArray();
    out.window_state = s.value(QStringLiteral("window/state")).toByteArray();
    out.model.zoo = s.value(QStringLiteral("model/zoo"), QString::fromLatin1(kDefaultModel)).toString().toStdString();
    out.model.file = s.value(QStringLiteral("model/file")).toString().toStdString();
    out.model.batch_size = s.value(QStringLiteral("model/batch"), kDefaultBatch).toInt();
    out.model.seq_len = s.value(QStringLiteral("model/seq_len"), 0).toInt();
    try {
        applyOverrideText(out.model, s.value(QStringLiteral("model/overrides")).toString().toStdString());
    } catch (const std::exception&) {
        out.model.overrides.clear();  // text another version wrote: the published size
    }
    try {
        out.model.precision = precisionFromString(s.value(QStringLiteral("model/precision"), QStringLiteral("fp16")).toString().toStdString());
        out.objective = objectiveFromString(s.value(QStringLiteral("planning/objective"), QStringLiteral("me-floor")).toString().toStdString());
    } catch (const std::exception&) {
        // A value written by another version: keep the defaults.
    }
    out.cluster = s.value(QStringLiteral("cluster/name"), QString::fromLatin1(kDefaultCluster)).toString();
    out.planners = s.value(QStringLiteral("planning/planners")).toStringList();
    out.time_budget_s = s.value(QStringLiteral("planning/time_budget_s"), out.time_budget_s).toDouble();
    out.global_batch = s.value(QStringLiteral("planning/global_batch"), out.global_batch).toInt();
    return out;
}

void StudioSettings::save() const {
    QSettings s(QStringLiteral("hippie"), QStringLiteral("hippie-studio"));
    s.setValue(QStringLiteral("window/geometry"), geometry);
    s.setValue(QStringLiteral("window/state"), window_state);
    s.setValue(QStringLiteral("model/zoo"), QString::fromStdString(model.zoo));
    s.setValue(QStringLiteral("model/file"), QString::fromStdString(model.file));
    s.setValue(QStringLiteral("model/batch"), model.batch_size);
    s.setValue(QStringLiteral("model/seq_len"), model.seq_len);
    s.setValue(QStringLiteral("model/overrides"), QString::fromStdString(sizeOverrideText(model)));
    s.setValue(QStringLiteral("model/precision"), QString::fromLatin1(toString(model.precision)));
    s.setValue(QStringLiteral("cluster/name"), cluster);
    s.setValue(QStringLiteral("planning/planners"), planners);
    s.setValue(QStringLiteral("planning/objective"), QString::fromLatin1(toString(objective)));
    s.setValue(QStringLiteral("planning/time_budget_s"), time_budget_s);
    s.setValue(QStringLiteral("planning/global_batch"), global_batch);
}

}  // namespace hippie::studio
