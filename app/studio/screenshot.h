#pragma once
// --screenshot: waits until the window has nothing in flight (planners done, the selected plan
// simulated, the graph laid out), shows the requested page, saves the window as PNG and quits.
#include <QObject>
#include <QString>

#include "app/studio/main_window.h"

class QTimer;

namespace hippie::studio {

class ScreenshotTaker : public QObject {
    Q_OBJECT
public:
    // `lesson` >= 0: the Teaching page shows that lesson's whole iteration (else the 1F1B
    // lesson part-way, the user guide's picture).
    ScreenshotTaker(MainWindow* window, QString path, MainWindow::Page page, int timeout_ms, int lesson = -1);

signals:
    void done(int exit_code);

private:
    void poll();
    void capture();

    MainWindow* window_;
    QString path_;
    MainWindow::Page page_;
    QTimer* timer_;
    int waited_ms_ = 0;
    int timeout_ms_;
    int idle_polls_ = 0;
    bool page_shown_ = false;
    int lesson_ = -1;
};

}  // namespace hippie::studio
