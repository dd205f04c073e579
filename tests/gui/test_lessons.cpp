// Each teaching lesson shows what its text says: the claims the page prints are computed from
// the simulated traces, and every claim a lesson makes holds.
#include <QListWidget>
#include <QRegularExpression>
#include <QScrollBar>
#include <QtTest>
#include <algorithm>
#include <set>

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
        size_t expected = lesson.expects.size();  // against the baseline, then each further lesson
        for (const LessonComparison& c : lesson.also_compared) {
            QVERIFY(c.lesson >= 0 && c.lesson < int(lessons().size()) && c.lesson != index && !c.expects.empty());
            expected += c.expects.size();
        }
        QCOMPARE(run.claims.size(), expected);
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

    // The ZeRO lessons follow each other stage by stage, each on the same model and GPUs as the
    // one before and claiming (everyClaimHolds checks it) lower peak memory than it.
    void zeroLessonsFallStageByStage() {
        std::vector<int> chain;
        for (int i = 0; i < int(lessons().size()); ++i)
            if (lessons()[size_t(i)].title.starts_with("ZeRO-")) chain.push_back(i);
        QCOMPARE(chain.size(), size_t(4));  // ZeRO-0 to ZeRO-3
        for (size_t k = 0; k < chain.size(); ++k) {
            const Lesson& l = lessons()[size_t(chain[k])];
            QCOMPARE(l.zero_stage, int(k));
            QCOMPARE(l.tp, 1);
            QVERIFY(l.pp == 1 && l.dp == 8);
            if (k == 0) continue;
            QCOMPARE(chain[k], chain[k - 1] + 1);  // consecutive
            QCOMPARE(l.baseline, chain[k - 1]);
            const Lesson& b = lessons()[size_t(l.baseline)];
            QVERIFY(l.model.zoo == b.model.zoo && l.cluster == b.cluster && l.global_batch == b.global_batch);
            QVERIFY(std::find(l.expects.begin(), l.expects.end(), LessonExpect::LowerPeakMemory) != l.expects.end());
            const LessonRun run = runLesson(chain[k]), base = runLesson(l.baseline);
            QVERIFY(run.trace.metrics.max_peak_memory_bytes < base.trace.metrics.max_peak_memory_bytes);
        }
        // ZeRO-2's text: the step from ZeRO-1 (2 bytes of gradients a parameter) is smaller than
        // the one from ZeRO-0 (12 bytes of optimizer state).
        const auto peak = [](int i) { return double(runLesson(i).trace.metrics.max_peak_memory_bytes); };
        QVERIFY(lessons()[size_t(chain[2])].idea.find("by less than from ZeRO-0 to ZeRO-1") != std::string::npos);
        QVERIFY(peak(chain[0]) - peak(chain[1]) > peak(chain[1]) - peak(chain[2]));
    }

    // No, full and selective recomputation: the same training (model, GPUs, batch) three ways.
    // Full recomputation keeps the least and takes the longest; selective keeps less than none at
    // a time below full's. Relations of the traces, not their numbers: how the simulator counts
    // a recomputed block's memory may change, the order may not.
    void recomputationTradesTimeForMemory() {
        int none = -1, full = -1, selective = -1;
        for (int i = 0; i < int(lessons().size()); ++i) {
            const Lesson& l = lessons()[size_t(i)];
            if (l.selective_recompute) selective = i;
            else if (l.recompute_all) full = i;
        }
        QVERIFY(full >= 0 && selective >= 0);
        none = lessons()[size_t(full)].baseline;
        QVERIFY(none >= 0);
        QCOMPARE(selective, full + 1);  // in the list one after the other: none, full, selective
        QCOMPARE(full, none + 1);
        const Lesson &n = lessons()[size_t(none)], &f = lessons()[size_t(full)], &s = lessons()[size_t(selective)];
        for (const Lesson* l : {&f, &s}) {
            QCOMPARE(l->model.zoo, n.model.zoo);
            QCOMPARE(l->cluster, n.cluster);
            QVERIFY(l->pp == n.pp && l->dp == n.dp && l->tp == n.tp && l->zero_stage == n.zero_stage);
            QVERIFY(l->micro_batches == n.micro_batches && l->global_batch == n.global_batch);
        }
        // Selective is compared with full (time) and with none (memory and time).
        QCOMPARE(s.baseline, full);
        QCOMPARE(int(s.also_compared.size()), 1);
        QCOMPARE(s.also_compared[0].lesson, none);

        const LessonRun rn = runLesson(none), rf = runLesson(full), rs = runLesson(selective);
        QVERIFY(rn.plan.recompute_layers.empty() && !rn.plan.selective_recompute);
        QCOMPARE(int(rf.plan.recompute_layers.size()), setupLesson(f).problem.graph.layerCount());
        QVERIFY(!rf.plan.selective_recompute);
        QVERIFY(rs.plan.recompute_layers.empty() && rs.plan.selective_recompute);
        const TraceMetrics &mn = rn.trace.metrics, &mf = rf.trace.metrics, &ms = rs.trace.metrics;
        QVERIFY2(mf.max_peak_memory_bytes <= ms.max_peak_memory_bytes && ms.max_peak_memory_bytes < mn.max_peak_memory_bytes,
                 qPrintable(QStringLiteral("peaks: full %1, selective %2, none %3").arg(mf.max_peak_memory_bytes).arg(ms.max_peak_memory_bytes).arg(mn.max_peak_memory_bytes)));
        QVERIFY2(mn.iteration_time_s < ms.iteration_time_s && ms.iteration_time_s < mf.iteration_time_s,
                 qPrintable(QStringLiteral("iterations: none %1, selective %2, full %3").arg(mn.iteration_time_s).arg(ms.iteration_time_s).arg(mf.iteration_time_s)));
        // What the Gantt chart shows: recompute blocks, none without them, selective's shorter in all.
        const auto recomputeSeconds = [](const Trace& t) {
            double sum = 0;
            for (const TraceEvent& e : t.events)
                if (e.kind == InstrKind::Recompute) sum += e.end_s - e.start_s;
            return sum;
        };
        QCOMPARE(recomputeSeconds(rn.trace), 0.0);
        QVERIFY(recomputeSeconds(rs.trace) > 0);
        QVERIFY(recomputeSeconds(rs.trace) < recomputeSeconds(rf.trace));

        // The claims quote the traces' numbers: selective's iteration against full's, its peak
        // against none's (in the units the text prints).
        const QString text = QString::fromStdString(claimsText(rs.claims));
        const auto msText = [](double sec) { return QString::number(sec * 1e3, 'f', sec < 0.01 ? 2 : 1) + QStringLiteral(" ms"); };
        const auto gibText = [](int64_t b) { return QString::number(double(b) / (1024.0 * 1024.0 * 1024.0), 'f', 2) + QStringLiteral(" GiB"); };
        for (const QString& quoted : {msText(ms.iteration_time_s), msText(mf.iteration_time_s), msText(mn.iteration_time_s),
                                      gibText(ms.max_peak_memory_bytes), gibText(mn.max_peak_memory_bytes)})
            QVERIFY2(text.contains(quoted), qPrintable(quoted + QStringLiteral(" not in: ") + text));
        QVERIFY2(text.contains(QStringLiteral("shorter than Full recomputation's")) && text.contains(QStringLiteral("in No recomputation")),
                 qPrintable(text));
        // The lessons' own prose quotes no number: those are the claims', computed.
        const QRegularExpression number(QStringLiteral("\\d+(\\.\\d+)?\\s*(GiB|MiB|ms|%|x)"));
        for (const Lesson* l : {&n, &f, &s}) QVERIFY2(!QString::fromStdString(l->idea).contains(number), l->idea.c_str());
    }

    // Tensor parallelism stays inside a node: the same t8 group on the same model is slower with
    // its ranks on two nodes; the device maps are what the lessons say.
    void tensorParallelismAcrossNodesIsSlower() {
        int in_node = -1, across = -1, sp = -1;
        for (int i = 0; i < int(lessons().size()); ++i) {
            const Lesson& l = lessons()[size_t(i)];
            if (l.tp <= 1 || l.pp > 1) continue;  // the tensor-parallel lessons (not the per-stage ones' pipelines)
            if (l.sequence_parallel) sp = i;
            else if (l.device_map.empty()) in_node = i;
            else across = i;
        }
        QVERIFY(in_node >= 0 && across >= 0 && sp >= 0);
        const LessonRun a = runLesson(in_node), b = runLesson(across);
        const std::vector<std::vector<int>> groups_a = a.plan.tpGroups(), groups_b = b.plan.tpGroups();
        QVERIFY(groups_a.size() == 1 && groups_b.size() == 1);
        std::set<int> nodes_a, nodes_b;
        for (int d : groups_a[0]) nodes_a.insert(a.cluster.nodeOf(d));
        for (int d : groups_b[0]) nodes_b.insert(b.cluster.nodeOf(d));
        QCOMPARE(int(nodes_a.size()), 1);
        QCOMPARE(int(nodes_b.size()), 2);
        QCOMPARE(int(groups_a[0].size()), 8);
        QCOMPARE(lessons()[size_t(across)].baseline, in_node);
        QVERIFY(b.trace.metrics.iteration_time_s > a.trace.metrics.iteration_time_s);
        QVERIFY2(QString::fromStdString(claimsText(b.claims)).contains(QStringLiteral("longer than")), claimsText(b.claims).c_str());
        // Sequence parallelism is compared with the same group without it.
        const Lesson& s = lessons()[size_t(sp)];
        QCOMPARE(s.baseline, in_node);
        const LessonRun c = runLesson(sp);
        QVERIFY(c.plan.sequence_parallel && !a.plan.sequence_parallel);
        QCOMPARE(c.plan.tp, a.plan.tp);
        QVERIFY(c.trace.metrics.max_peak_memory_bytes < a.trace.metrics.max_peak_memory_bytes);
    }

    // The Teaching page groups a tensor-parallel lesson's rows by rank and shows its nodes.
    void teachingRowsNameTheTensorParallelRanks() {
        int across = -1;
        for (int i = 0; i < int(lessons().size()); ++i)
            if (lessons()[size_t(i)].tp > 1 && !lessons()[size_t(i)].device_map.empty()) across = i;
        QVERIFY(across >= 0);
        TeachingPage page;
        QVERIFY(page.loadLesson(across));
        // One stage: the rows fold by node, ranks in order, a separator between the two nodes.
        QVERIFY(!page.view()->rowLayout().by_stage);
        QCOMPARE(int(page.view()->rowLayout().rows.size()), 8);
        QCOMPARE(page.view()->rowText(0), QStringLiteral("S0 t0 · n0 GPU 0"));
        QCOMPARE(page.view()->rowText(4), QStringLiteral("S0 t4 · n1 GPU 8"));
        QCOMPARE(int(page.view()->rowLayout().group_separators.size()), 1);
        QCOMPARE(page.view()->groupCount(), 2);
    }

    // A claim that does not hold says so instead of repeating the lesson's wish.
    void aFalseClaimIsReportedAsFalse() {
        Trace slow, fast;
        slow.metrics.iteration_time_s = 0.0382;
        fast.metrics.iteration_time_s = 0.0320;
        const std::vector<LessonClaim> c = lessonClaims(slow, &fast, "1F1B", {LessonExpect::ShorterIteration});
        QVERIFY(!c[0].holds);
        QCOMPARE(QString::fromStdString(c[0].text), QStringLiteral("Iteration 38.2 ms, 19% longer than 1F1B's 32.0 ms."));
        // The other iteration relations on the same numbers.
        QVERIFY(lessonClaims(slow, &fast, "1F1B", {LessonExpect::LongerIteration})[0].holds);
        QVERIFY(!lessonClaims(slow, &fast, "1F1B", {LessonExpect::NoLongerIteration})[0].holds);
        QVERIFY(lessonClaims(fast, &slow, "x", {LessonExpect::NoLongerIteration})[0].holds);
        QVERIFY(!lessonClaims(fast, &slow, "x", {LessonExpect::SameIteration})[0].holds);
        QVERIFY(!lessonClaims(fast, &slow, "x", {LessonExpect::LongerIteration})[0].holds);
        QVERIFY(!lessonClaims(fast, nullptr, "", {LessonExpect::NoLongerIteration})[0].holds);
    }

    // Every lesson's title is shown whole in the list, at the smallest window the guide shows.
    void everyTitleFitsTheList() {
        TeachingPage page;
        page.resize(1280 - 340, 800 - 60);  // the Teaching page's share of a 1280x800 window
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        const auto* list = page.findChild<QListWidget*>();
        QVERIFY(list);
        QCOMPARE(list->count(), int(lessons().size()));
        QCOMPARE(list->horizontalScrollBar()->maximum(), 0);
        for (int i = 0; i < list->count(); ++i) {
            const QString title = list->item(i)->text();
            QCOMPARE(title, QString::fromStdString(lessons()[size_t(i)].title));
            QVERIFY2(list->fontMetrics().horizontalAdvance(title) < list->viewport()->width(), qPrintable(title));
        }
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
