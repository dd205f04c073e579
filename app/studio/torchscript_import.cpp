#include "app/studio/torchscript_import.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

namespace hippie::studio {

TorchScriptImport::TorchScriptImport(QObject* parent) : QObject(parent) {}

TorchScriptImport::~TorchScriptImport() {
    if (process_) {
        process_->kill();
        process_->waitForFinished();
    }
    delete dir_;
}

namespace {
const char* const kEngineVariable = "HIPPIE_ENGINE";

// Says why the engine was not found and what to do, or "" when it is there.
QString missingEngineMessage(const QString& file) {
    if (!TorchScriptImport::enginePath().isEmpty()) return {};
    const QString configured = qEnvironmentVariable(kEngineVariable);
    const QString looked = !configured.isEmpty() ? QObject::tr("%1=%2 is not an executable").arg(QLatin1String(kEngineVariable), configured)
                                                 : QObject::tr("there is no hippie-engine in %1").arg(QCoreApplication::applicationDirPath());
    return QObject::tr("Importing %1 needs `hippie-engine inspect`, which was not found (%2): install the hippie-engine "
                       "package, build with -DHIPPIE_BUILD_ENGINE=ON (needs LibTorch) or set %3 to its path; or export "
                       "the model as graph JSON. The current model stays loaded.")
        .arg(file, looked, QLatin1String(kEngineVariable));
}

// The engine reports errors as a JSON line {"event":"error","message":...} on stdout; stderr
// holds what LibTorch or the C++ runtime printed.
QString engineError(const QByteArray& out, const QByteArray& err) {
    QStringList messages;
    for (const QByteArray& line : out.split('\n')) {
        const QJsonObject event = QJsonDocument::fromJson(line).object();
        if (event.value(QStringLiteral("event")).toString() == QLatin1String("error"))
            messages << event.value(QStringLiteral("message")).toString();
    }
    const QString tail = QString::fromUtf8(err).trimmed();
    if (!tail.isEmpty()) messages << tail;
    return messages.join(QLatin1Char('\n'));
}
}  // namespace

QString TorchScriptImport::enginePath() {
    const auto usable = [](const QString& p) {
        const QFileInfo f(p);
        return f.isFile() && f.isExecutable();
    };
    if (const QString configured = qEnvironmentVariable(kEngineVariable); !configured.isEmpty())
        return usable(configured) ? QFileInfo(configured).absoluteFilePath() : QString();
    const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/hippie-engine");
    if (usable(beside)) return QFileInfo(beside).absoluteFilePath();
    return QStandardPaths::findExecutable(QStringLiteral("hippie-engine"));
}

bool TorchScriptImport::canStart(const QString& file) {
    if (const QString missing = missingEngineMessage(file); !missing.isEmpty()) {
        emit failed(missing);
        return false;
    }
    if (process_) {
        emit failed(tr("An import is already running."));
        return false;
    }
    return true;
}

void TorchScriptImport::start(const QString& file, QWidget* dialog_parent) {
    if (!canStart(file)) return;
    bool ok = false;
    const QString shape = QInputDialog::getText(dialog_parent, tr("Example input"),
                                                tr("Input shape of %1 (comma-separated, e.g. 8,32):").arg(QFileInfo(file).fileName()),
                                                QLineEdit::Normal, QStringLiteral("8,32"), &ok);
    if (ok) startWithShape(file, shape);
}

void TorchScriptImport::startWithShape(const QString& file, const QString& input_shape) {
    if (!canStart(file)) return;
    const QString engine = enginePath();
    const QString shape = input_shape.trimmed();
    delete dir_;
    dir_ = new QTemporaryDir;
    const QString out = dir_->filePath(QStringLiteral("imported.graph.json"));
    process_ = new QProcess(this);
    connect(process_, &QProcess::finished, this, [this, file, out](int code, QProcess::ExitStatus status) {
        const QString err = engineError(process_->readAllStandardOutput(), process_->readAllStandardError());
        process_->deleteLater();
        process_ = nullptr;
        if (status == QProcess::NormalExit && code == 0)
            emit imported(out);
        else
            emit failed(tr("hippie-engine inspect %1 failed (exit %2): %3\nThe current model stays loaded.").arg(file).arg(code).arg(err));
    });
    connect(process_, &QProcess::errorOccurred, this, [this, engine](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;  // the other errors end in finished()
        const QString why = process_->errorString();
        process_->deleteLater();
        process_ = nullptr;
        emit failed(tr("could not start %1: %2").arg(engine, why));
    });
    process_->start(engine, {QStringLiteral("inspect"), file, QStringLiteral("--input-shape"), shape, QStringLiteral("--out"), out});
}

}  // namespace hippie::studio
