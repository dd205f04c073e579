// Each teaching lesson shows what its text says: the claims the page prints are computed from
// the simulated traces, and every claim a lesson makes holds.
#include <QtTest>

#include "widgets/gantt/schedule_view.h"
#include "widgets/memory/memory_plot.h"

#include "app/studio/lesson_claims.h"
#include "app/studio/lessons.h"
#include "app/studio/teaching_page.h"

using namespace hippie;
using namespace hippie::studio;

class TestLessons : public QObject {
    Q_OBJECT
private slots:
    void everyClaimHolds_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < int(lessons().size()); ++i)
            QTest::newRow(lessons()[size_t(i)].title.c_str()) << i;
    }

    void everyClaimHolds() {
        QFETCH(int, index);
        const Lesson& lesson = lessons()[size_t(index)];
        QVERIFY(!lesson.expects.empty());
        const LessonRun run = runLesson(index);
        QCOMPARE(run.claims.size(), lesson.expects.size());
        for (const LessonClaim& c : run.claims) QVERIFY2(c.holds, c.text.c_str());
    }

    // The pipeline lessons are about the schedule: no stage is a bottleneck that idles the others.
    void pipelineStagesAreBalanced() {
        for (int i = 0; i < int(lessons().size()); ++i) {
            const Lesson& lesson = lessons()[size_t(i)];
            if (lesson.pp < 2) continue;
            const std::vector<LessonClaim> c = lessonClaims(runLesson(i).trace, nullptr, {}, {LessonExpect::BalancedStages});
            QVERIFY2(c[0].holds, (lesson.title + ": " + c[0].text).c_str());
        }
    }

    // The numbers in the text are the traces': interleaving against 1F1B.
    void claimTextQuotesTheTraces() {
        int interleaving = -1;
        for (int i = 0; i < int(lessons().size()); ++i)
            if (lessons()[size_t(i)].schedule == ScheduleKind::Interleaved) interleaving = i;
        QVERIFY(interleaving >= 0);
        const LessonRun run = runLesson(interleaving);
        const LessonRun base = runLesson(lessons()[size_t(interleaving)].baseline);
        const std::string text = claimsText(run.claims);
        // Two decimals below 10 ms, one above (as the text prints them).
        const auto ms = [](double s) { return QString::number(s * 1e3, 'f', s < 0.01 ? 2 : 1); };
        const QString iteration_ms = ms(run.trace.metrics.iteration_time_s);
        const QString base_ms = ms(base.trace.metrics.iteration_time_s);
        QVERIFY2(QString::fromStdString(text).contains(iteration_ms + QStringLiteral(" ms")), text.c_str());
        QVERIFY2(QString::fromStdString(text).contains(base_ms + QStringLiteral(" ms")), text.c_str());
        QVERIFY(run.trace.metrics.iteration_time_s < base.trace.metrics.iteration_time_s);
    }

    // A claim that does not hold says so instead of repeating the lesson's wish.
    void aFalseClaimIsReportedAsFalse() {
        Trace slow, fast;
        slow.metrics.iteration_time_s = 0.0382;
        fast.metrics.iteration_time_s = 0.0320;
        const std::vector<LessonClaim> c = lessonClaims(slow, &fast, "1F1B", {LessonExpect::ShorterIteration});
        QVERIFY(!c[0].holds);
        QCOMPARE(QString::fromStdString(c[0].text), QStringLiteral("Iteration 38.2 ms, 19% longer than 1F1B's 32.0 ms."));
    }

    void teachingPageShowsTheClaims() {
        TeachingPage page;
        QVERIFY(page.loadLesson(2));
        QCOMPARE(page.claims().size(), lessons()[2].expects.size());
    }

    // What the lessons say about memory can be seen: the curves' rise from their lowest value to
    // their peak fills most of the memory axis in every lesson (from 0 they were flat lines at
    // the top, the weights dwarfing the activations).
    void lessonMemoryCurvesFillTheirAxis() {
        TeachingPage page;
        for (int i = 0; i < int(lessons().size()); ++i) {
            QVERIFY(page.loadLesson(i));
            page.setTime(page.endTime());  // the whole iteration drawn
            const widgets::MemoryPlot* memory = page.view()->memory();
            double lowest = 1e300, highest = 0;
            for (int g = 0; g < memory->graphCount(); ++g)
                for (auto it = memory->graph(g)->data()->constBegin(); it != memory->graph(g)->data()->constEnd(); ++it) {
                    lowest = std::min(lowest, it->value);
                    highest = std::max(highest, it->value);
                }
            const double filled = (highest - lowest) / (memory->axisUpper() - memory->axisLower());
            QVERIFY2(filled >= 0.5, qPrintable(QStringLiteral("%1: the curves fill %2 of the axis").arg(QString::fromStdString(lessons()[size_t(i)].title)).arg(filled)));
            QVERIFY(memory->axisLower() <= lowest && highest <= memory->axisUpper());
        }
    }
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
