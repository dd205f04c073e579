#pragma once
// Picks the model: a zoo model with its batch size, sequence length, size overrides and
// precision, a graph JSON file, or a TorchScript file (imported through hippie-engine).
#include <QGroupBox>

#include "planners/model/graph.h"

class QComboBox;
class QSpinBox;

namespace hippie::studio {

class MessageLabel;
class OverrideEdit;
class StudioSession;
class TorchScriptImport;

class ModelPanel : public QGroupBox {
    Q_OBJECT
public:
    ModelPanel(StudioSession* session, QWidget* parent = nullptr);

    // Selects the zoo entry and loads it; false (with the message shown) if it fails.
    bool loadZoo(const ModelSpec& spec);
    bool openGraphFile(const QString& path);
    // Imports a TorchScript file through `hippie-engine inspect` in the background; the model
    // changes when it succeeds, else the message says why (torchScriptFinished(ok) either way).
    void importTorchScript(const QString& path, const QString& input_shape);
    // What the zoo controls say; overrides whose text does not parse are left out (Load says why).
    ModelSpec currentSpec() const;
    const MessageLabel* message() const { return message_; }
    void showError(const QString& text);

signals:
    void torchScriptFinished(bool ok);
    void errorShown(const QString& text);  // also shown in the window's banner

private:
    void onLoadClicked();
    void onOpenClicked();
    void onTorchScriptClicked();
    void showSummary();

    StudioSession* session_;
    QComboBox* zoo_;
    QSpinBox* batch_;
    QSpinBox* seq_len_;
    OverrideEdit* overrides_;
    QComboBox* precision_;
    MessageLabel* message_;
    TorchScriptImport* torchscript_;
};

}  // namespace hippie::studio
