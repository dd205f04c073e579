#pragma once
// The Model panel's "Overrides" line: a zoo model's size overrides as text
// ("layers=2,seq_len=128"), with the current model's keys and values in its tooltip. Checked
// when the model is loaded, where a bad item gets the panel's one-line message.
#include <QLineEdit>

#include "planners/model/graph.h"

namespace hippie::studio {

class OverrideEdit : public QLineEdit {
    Q_OBJECT
public:
    explicit OverrideEdit(QWidget* parent = nullptr);

    // Lists `zoo`'s keys with their published values in the tooltip.
    void describeModel(const std::string& zoo);
    // Shows spec's overrides (not its seq_len, which has its own control).
    void showOverrides(const ModelSpec& spec);
    // Parses the text into spec (seq_len too, if given). Empty on success, else the message;
    // a seq_len that disagrees with a non-zero spec.seq_len is refused.
    QString applyTo(ModelSpec& spec) const;
};

}  // namespace hippie::studio
