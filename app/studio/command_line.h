#pragma once
// hippie-studio's command line.
#include <QSize>
#include <QString>
#include <QStringList>

#include "app/studio/main_window.h"

class QCoreApplication;

namespace hippie::studio {

struct CommandLine {
    StartOptions start;
    QString screenshot;  // --screenshot FILE: render offscreen after planning, save, exit
    QString view;        // --view compare|gantt|graph|teaching
    QSize screenshot_size{1600, 1000};  // --screenshot-size WxH
    int lesson = -1;     // --lesson N: open teaching lesson N (1 = the first listed), index N - 1; -1 none
    QString error;       // non-empty: print and exit 2
};

CommandLine parseCommandLine(const QCoreApplication& app);

}  // namespace hippie::studio
