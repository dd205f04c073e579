#pragma once
// hippie-engine for the GUI suites: where to find the one of this build, and how to hand it to
// the studio ($HIPPIE_ENGINE) for the length of a test.
#include <QByteArray>
#include <QFileInfo>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace hippie::testing {

// hippie-engine from $HIPPIE_ENGINE, $HIPPIE_BIN_DIR or this build; "" when none is built.
inline QString findEngine() {
    QStringList candidates;
    if (qEnvironmentVariableIsSet("HIPPIE_ENGINE")) candidates << qEnvironmentVariable("HIPPIE_ENGINE");
    if (qEnvironmentVariableIsSet("HIPPIE_BIN_DIR")) candidates << qEnvironmentVariable("HIPPIE_BIN_DIR") + "/hippie-engine";
    candidates << QStringLiteral(HIPPIE_BIN_DIR "/hippie-engine");
    for (const QString& c : candidates)
        if (QFileInfo(c).isFile() && QFileInfo(c).isExecutable()) return QFileInfo(c).absoluteFilePath();
    return {};
}

// Restores an environment variable when the test ends, however it ends.
struct EnvGuard {
    QByteArray name, value;
    bool was_set;
    explicit EnvGuard(const char* n) : name(n), value(qgetenv(n)), was_set(qEnvironmentVariableIsSet(n)) {}
    ~EnvGuard() {
        if (was_set)
            qputenv(name.constData(), value);
        else
            qunsetenv(name.constData());
    }
};

// The engine `path` (this build's when empty), given to the studio as $HIPPIE_ENGINE while this
// object lives (the variable is restored after). `path` is empty when no engine is built: skip.
struct EngineForStudio {
    static constexpr const char* kMissing = "hippie-engine is not built (set HIPPIE_ENGINE or HIPPIE_BIN_DIR)";
    const EnvGuard guard{"HIPPIE_ENGINE"};
    const QString path;
    explicit EngineForStudio(const QString& engine = findEngine()) : path(engine) {
        if (!path.isEmpty()) qputenv("HIPPIE_ENGINE", path.toLocal8Bit());
    }
};

}  // namespace hippie::testing
