#include "app/studio/torchscript_import.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QInputDialog>
#include <QProcess>
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

QString TorchScriptImport::enginePath() {
    const QFileInfo engine(QCoreApplication::applicationDirPath() + QStringLiteral("/hippie-engine"));
    return engine.isExecutable() ? engine.absoluteFilePath() : QString();
}

void TorchScriptImport::start(const QString& file, QWidget* dialog_parent) {
    const QString engine = enginePath();
    if (engine.isEmpty()) {
        emit failed(tr("Importing %1 needs `hippie-engine inspect`, which is not built: configure with "
                       "-DHIPPIE_BUILD_ENGINE=ON (needs LibTorch), or export the model as graph JSON.")
                        .arg(file));
        return;
    }
    if (process_) {
        emit failed(tr("An import is already running."));
        return;
    }
    bool ok = false;
    const QString shape = QInputDialog::getText(dialog_parent, tr("Example input"),
                                                tr("Input shape of %1 (comma-separated, e.g. 8,32):").arg(QFileInfo(file).fileName()),
                                                QLineEdit::Normal, QStringLiteral("8,32"), &ok);
    if (!ok) return;
    delete dir_;
    dir_ = new QTemporaryDir;
    const QString out = dir_->filePath(QStringLiteral("imported.graph.json"));
    process_ = new QProcess(this);
    connect(process_, &QProcess::finished, this, [this, file, out](int code, QProcess::ExitStatus status) {
        const QString err = QString::fromUtf8(process_->readAllStandardError()).trimmed();
        process_->deleteLater();
        process_ = nullptr;
        if (status == QProcess::NormalExit && code == 0)
            emit imported(out);
        else
            emit failed(tr("hippie-engine inspect %1 failed (exit %2): %3").arg(file).arg(code).arg(err));
    });
    process_->start(engine, {QStringLiteral("inspect"), file, QStringLiteral("--input-shape"), shape, QStringLiteral("--out"), out});
}

}  // namespace hippie::studio
