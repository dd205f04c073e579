#include "app/studio/screenshot.h"

#include <QApplication>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "app/studio/main_window.h"
#include "app/studio/teaching_page.h"

namespace hippie::studio {

namespace {
constexpr int kPollMs = 100;
constexpr int kSettlePolls = 3;          // idle this many polls in a row before capturing
constexpr int kTeachingLesson = 2;       // 1F1B: warm-up, steady state and cool-down in one picture
constexpr double kTeachingMoment = 0.45;  // fraction of the iteration shown in teaching mode
}  // namespace

ScreenshotTaker::ScreenshotTaker(MainWindow* window, QString path, MainWindow::Page page, int timeout_ms, int lesson)
    : QObject(window), window_(window), path_(std::move(path)), page_(page), timer_(new QTimer(this)), timeout_ms_(timeout_ms), lesson_(lesson) {
    timer_->setInterval(kPollMs);
    connect(timer_, &QTimer::timeout, this, &ScreenshotTaker::poll);
    timer_->start();
}

void ScreenshotTaker::poll() {
    waited_ms_ += kPollMs;
    if (!window_->isIdle() && waited_ms_ < timeout_ms_) {
        idle_polls_ = 0;
        return;
    }
    if (!page_shown_) {
        // Showing a page can start work (a graph layout at its size): settle again after.
        window_->showPage(page_);
        if (page_ == MainWindow::Page::Teaching) {
            window_->teaching()->loadLesson(lesson_ >= 0 ? lesson_ : kTeachingLesson);
            window_->teaching()->setTime(window_->teaching()->endTime() * (lesson_ >= 0 ? 1.0 : kTeachingMoment));
        }
        page_shown_ = true;
        return;
    }
    if (++idle_polls_ < kSettlePolls && waited_ms_ < timeout_ms_) return;
    capture();
}

void ScreenshotTaker::capture() {
    timer_->stop();
    const bool timed_out = waited_ms_ >= timeout_ms_;
    if (timed_out) std::fprintf(stderr, "hippie-studio: still busy after %d s; saving what is shown\n", timeout_ms_ / 1000);
    const bool saved = window_->grab().save(path_, "PNG");
    if (!saved) std::fprintf(stderr, "hippie-studio: could not write %s\n", qPrintable(path_));
    emit done(saved ? (timed_out ? 3 : 0) : 1);
}

}  // namespace hippie::studio
