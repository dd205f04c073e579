// hippie-studio: the desktop strategy explorer. Everything lives in MainWindow; this file only
// reads the command line and, for --screenshot, saves the window once everything has settled.
#include <cstdio>
#include <cstring>

#include <QApplication>

#include "app/studio/command_line.h"
#include "app/studio/main_window.h"
#include "app/studio/screenshot.h"
#include "app/studio/teaching_page.h"
#include "planners/common/allocator.h"

namespace {
constexpr int kScreenshotTimeoutMs = 10 * 60 * 1000;
void setApplicationNames() {
    QCoreApplication::setApplicationName(QStringLiteral("hippie-studio"));
    QCoreApplication::setOrganizationName(QStringLiteral("hippie"));
    QCoreApplication::setApplicationVersion(QStringLiteral(HIPPIE_VERSION));
}

bool asksForHelpOrVersion(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        for (const char* flag : {"-h", "--help", "--help-all", "-v", "--version"})
            if (std::strcmp(argv[i], flag) == 0) return true;
    return false;
}
}  // namespace

int main(int argc, char** argv) {
    hippie::keepFreedMemoryForReuse();  // planning churns through large Programs
    // --help and --version need no display (over ssh there is none): answered before QApplication
    // connects to one, by the same parser, which prints and exits.
    if (asksForHelpOrVersion(argc, argv)) {
        QCoreApplication core(argc, argv);
        setApplicationNames();
        const hippie::studio::CommandLine cl = hippie::studio::parseCommandLine(core);
        std::fprintf(stderr, "hippie-studio: %s\n", qPrintable(cl.error));
        return 2;
    }
    QApplication app(argc, argv);
    setApplicationNames();

    const hippie::studio::CommandLine cl = hippie::studio::parseCommandLine(app);
    if (!cl.error.isEmpty()) {
        std::fprintf(stderr, "hippie-studio: %s\n", qPrintable(cl.error));
        return 2;
    }
    const bool screenshot = !cl.screenshot.isEmpty();
    // Screenshots are for docs and tests: the same picture whatever the user last did.
    hippie::studio::MainWindow window(/*use_settings=*/!screenshot);
    if (screenshot) {
        window.resize(cl.screenshot_size);
        auto* taker = new hippie::studio::ScreenshotTaker(&window, cl.screenshot, *hippie::studio::MainWindow::pageFromName(cl.view),
                                                          kScreenshotTimeoutMs, cl.lesson);
        QObject::connect(taker, &hippie::studio::ScreenshotTaker::done, &app, [](int code) { QApplication::exit(code); });
    }
    window.show();
    if (!screenshot && cl.lesson >= 0) {
        window.showPage(hippie::studio::MainWindow::Page::Teaching);
        window.teaching()->loadLesson(cl.lesson);
    }
    if (!window.start(cl.start)) {
        std::fprintf(stderr, "hippie-studio: %s\n", qPrintable(window.lastError()));
        // A screenshot of what was not asked for would mislead docs and tests.
        if (screenshot) return 2;
    }
    return app.exec();
}
