#pragma once
// hippie-studio's command line.
#include <QString>
#include <QStringList>

#include "app/studio/main_window.h"

class QCoreApplication;

namespace hippie::studio {

struct CommandLine {
    StartOptions start;
    QString screenshot;  // --screenshot FILE: render offscreen after planning, save, exit
    QString view;        // --view compare|gantt|graph|teaching
    QString error;       // non-empty: print and exit 2
};

CommandLine parseCommandLine(const QCoreApplication& app);

}  // namespace hippie::studio
