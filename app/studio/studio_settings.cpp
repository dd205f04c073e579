#include "app/studio/studio_settings.h"

#include <exception>

#include <QSettings>

#include "planners/model/overrides.h"

namespace hippie::studio {

ModelSpec StudioSettings::defaultModel() {
    ModelSpec m;
    m.zoo = "gpt2-small";
    m.batch_size = 8;
    m.precision = Precision::FP16;
    return m;
}

StudioSettings StudioSettings::load() {
    const QSettings s(QStringLiteral("hippie"), QStringLiteral("hippie-studio"));
    StudioSettings out;  // the defaults, replaced by what is stored
    out.geometry = s.value(QStringLiteral("window/geometry")).toByteArray();
    out.window_state = s.value(QStringLiteral("window/state")).toByteArray();
    out.model.zoo = s.value(QStringLiteral("model/zoo"), QString::fromStdString(out.model.zoo)).toString().toStdString();
    out.model.file = s.value(QStringLiteral("model/file")).toString().toStdString();
    out.model.batch_size = s.value(QStringLiteral("model/batch"), out.model.batch_size).toInt();
    out.model.seq_len = s.value(QStringLiteral("model/seq_len"), out.model.seq_len).toInt();
    try {
        applyOverrideText(out.model, s.value(QStringLiteral("model/overrides")).toString().toStdString());
    } catch (const std::exception&) {
        out.model.overrides.clear();  // text another version wrote: the published size
    }
    try {
        out.model.precision = precisionFromString(
            s.value(QStringLiteral("model/precision"), QString::fromLatin1(toString(out.model.precision))).toString().toStdString());
        out.objective =
            objectiveFromString(s.value(QStringLiteral("planning/objective"), QString::fromLatin1(toString(out.objective))).toString().toStdString());
    } catch (const std::exception&) {
        // A value written by another version: keep the defaults.
        const StudioSettings defaults;
        out.model.precision = defaults.model.precision;
        out.objective = defaults.objective;
    }
    out.cluster = s.value(QStringLiteral("cluster/name"), out.cluster).toString();
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
