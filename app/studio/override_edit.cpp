#include "app/studio/override_edit.h"

#include "planners/common/error.h"
#include "planners/model/architecture.h"
#include "planners/model/overrides.h"

namespace hippie::studio {

OverrideEdit::OverrideEdit(QWidget* parent) : QLineEdit(parent) {
    setPlaceholderText(tr("none, e.g. layers=2,seq_len=128"));
    setClearButtonEnabled(true);
}

void OverrideEdit::describeModel(const std::string& zoo) {
    const Architecture* arch = publishedArchitecture(zoo);
    if (!arch) {
        setToolTip(tr("Size overrides apply to zoo models only"));
        return;
    }
    QString keys;
    for (const auto& [key, value] : defaultOverrideValues(zoo))
        keys += (keys.isEmpty() ? QString() : QStringLiteral(", ")) + QString::fromStdString(key) + QLatin1Char('=') +
                QString::number(value, 'g', 12);
    setToolTip(tr("Size overrides of %1, key=value separated by commas. Its keys, at their published values: %2")
                   .arg(QString::fromStdString(zoo), keys));
}

void OverrideEdit::showOverrides(const ModelSpec& spec) { setText(QString::fromStdString(sizeOverrideText(spec))); }

QString OverrideEdit::applyTo(ModelSpec& spec) const {
    ModelSpec parsed = spec;
    try {
        applyOverrideText(parsed, text().toStdString());
    } catch (const Error& e) {
        return tr("Overrides: %1").arg(QString::fromUtf8(e.what()));
    }
    if (spec.seq_len > 0 && parsed.seq_len != spec.seq_len)
        return tr("Overrides: seq_len=%1 disagrees with the sequence length %2; give it once")
            .arg(parsed.seq_len)
            .arg(spec.seq_len);
    spec = parsed;
    return {};
}

}  // namespace hippie::studio
