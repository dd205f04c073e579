#pragma once
// TorchScript files become graph JSON through `hippie-engine inspect` (the studio never links
// LibTorch), run as a separate process so that a crash there cannot take the studio down.
#include <QObject>
#include <QString>

class QProcess;
class QTemporaryDir;
class QWidget;

namespace hippie::studio {

class TorchScriptImport : public QObject {
    Q_OBJECT
public:
    explicit TorchScriptImport(QObject* parent = nullptr);
    ~TorchScriptImport() override;

    // $HIPPIE_ENGINE when set (and "" if that is not an executable), else hippie-engine beside
    // hippie-studio, else on PATH; "" when it is not built or installed. The studio's one rule
    // for finding the engine (dispatch's jobs::findEngine adds an explicit path before it).
    static QString enginePath();
    // Asks for the example input shape (dialog parented to `dialog_parent`) and starts.
    void start(const QString& file, QWidget* dialog_parent);
    // Starts `hippie-engine inspect FILE --input-shape SHAPE`; imported() or failed() follows.
    void startWithShape(const QString& file, const QString& input_shape);
    bool isRunning() const { return process_ != nullptr; }

signals:
    void imported(const QString& graph_json_path);
    void failed(const QString& message);

private:
    bool canStart(const QString& file);  // false (and failed() emitted) when no engine or busy
    QProcess* process_ = nullptr;
    QTemporaryDir* dir_ = nullptr;
};

}  // namespace hippie::studio
