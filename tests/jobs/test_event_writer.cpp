// EventWriter: batched writes from many threads, flush, bad items dropped alone, a locked
// database retried, and the crash test: a child process writing events through an EventWriter
// is SIGKILLed mid-write; the database must pass integrity_check and hold every event the child
// had reported committed.
//
// The child is this binary run as `test_event_writer --child-writer DB RUN`: it posts events with
// seq 1, 2, 3, ... and after each flush prints "committed N" (every seq <= N is on disk).
#include <QtTest>

#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/store/event_writer.h"
#include "app/store/run_store.h"

using hippie::store::EventWriter;
using hippie::store::RunDetails;
using hippie::store::RunState;
using hippie::store::RunStore;
using hippie::store::StoredEvent;
using nlohmann::json;

namespace {

constexpr int kChildBatch = 25;  // events the child posts between two flushes

qint64 newRun(RunStore& s, const QString& job) {
    const json plan = {{"model", {{"zoo", "gpt2-small"}}}, {"cluster", "local"}, {"planner", "hippie"}};
    hippie::store::NewRun r;
    r.plan_id = s.savePlan(plan, 0, 0, {{"iteration_time_s", 0.1}});
    r.job_id = job;
    r.steps = 1000000;
    return s.createRun(r);
}

StoredEvent stepEvent(int source, qint64 seq) {
    // About the size of an engine step line.
    return {source, seq,
            {{"event", "step"}, {"rank", source}, {"step", seq}, {"time_s", 0.0123}, {"samples_per_s", 650.4},
             {"loss", 2.0 / static_cast<double>(seq)}}};
}

// Per source: are the stored seqs exactly 1..count?
bool contiguousFromOne(const std::vector<StoredEvent>& events, int source, qint64 count) {
    qint64 expected = 1;
    for (const StoredEvent& e : events) {
        if (e.source != source) continue;
        if (e.seq != expected) return false;
        ++expected;
    }
    return expected - 1 == count;
}

// Collects writeFailed messages in this (the test's) thread. Being the receiver, it takes any
// still-queued message with it when it goes, so no message outlives the list it goes to.
class FailureLog : public QObject {
public:
    explicit FailureLog(EventWriter& w) {
        connect(&w, &EventWriter::writeFailed, this, [this](const QString& m) { messages << m; });
    }
    QStringList messages;
};

int childWriter(const QString& db, qint64 run) {
    EventWriter writer(db, 5, 100);
    // A second thread adds logs at the same time, so batches mix kinds as a real run's do.
    std::atomic<bool> stop{false};
    std::thread logs([&] {
        for (int i = 0; !stop; ++i) {
            writer.postLog(run, 0, QStringLiteral("stderr"), QStringLiteral("log line %1\n").arg(i));
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    for (qint64 seq = 1;;) {
        for (int i = 0; i < kChildBatch; ++i, ++seq) writer.postEvent(run, stepEvent(0, seq));
        writer.flush();
        std::printf("committed %lld\n", static_cast<long long>(seq - 1));
        std::fflush(stdout);
    }
    // not reached: the parent kills this process
}

}  // namespace

class TestEventWriter : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;
    QString path(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

private slots:
    void writesFromManyThreadsInBatches() {
        const QString db = path("threads.sqlite");
        qint64 run_a = 0, run_b = 0;
        {
            RunStore s(db);
            run_a = newRun(s, QStringLiteral("a"));
            run_b = newRun(s, QStringLiteral("b"));
        }
        constexpr int kThreads = 4, kPerThread = 600;
        EventWriter w(db, 20, 64);
        FailureLog log(w);
        QStringList& failures = log.messages;
        w.postState(run_a, RunState::Running);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                const qint64 run = t % 2 == 0 ? run_a : run_b;
                for (int i = 1; i <= kPerThread; ++i) {
                    w.postEvent(run, stepEvent(t, i));
                    if (i % 100 == 0) w.postLog(run, t, QStringLiteral("stdout"), QStringLiteral("t%1 at %2").arg(t).arg(i));
                }
                w.postMetric(run, QStringLiteral("threads_done"), t);
            });
        for (std::thread& t : threads) t.join();
        w.postState(run_a, RunState::Succeeded, QStringLiteral("all steps done"));
        w.flush();
        QCOMPARE(w.committedEvents(), qint64(kThreads * kPerThread));
        QCoreApplication::processEvents();
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join(u'\n')));

        RunStore s(db);
        const RunDetails a = s.runDetails(run_a), b = s.runDetails(run_b);
        QCOMPARE(a.events.size(), size_t(2 * kPerThread));
        QCOMPARE(b.events.size(), size_t(2 * kPerThread));
        QVERIFY(contiguousFromOne(a.events, 0, kPerThread));
        QVERIFY(contiguousFromOne(a.events, 2, kPerThread));
        QVERIFY(contiguousFromOne(b.events, 1, kPerThread));
        QVERIFY(contiguousFromOne(b.events, 3, kPerThread));
        QCOMPARE(a.logs.size(), size_t(2 * kPerThread / 100));
        QCOMPARE(a.metrics.size(), size_t(1));
        QCOMPARE(a.summary.state, RunState::Succeeded);
        QCOMPARE(a.summary.message, QStringLiteral("all steps done"));
        QVERIFY(a.summary.started_ms > 0 && a.summary.ended_ms >= a.summary.started_ms);
        QCOMPARE(b.summary.state, RunState::Queued);
    }

    void commitsWithoutFlushWithinTheInterval() {
        const QString db = path("interval.sqlite");
        qint64 run = 0;
        {
            RunStore s(db);
            run = newRun(s, QStringLiteral("i"));
        }
        EventWriter w(db, 30, 1000);
        w.postEvent(run, stepEvent(0, 1));
        QTRY_COMPARE_WITH_TIMEOUT(w.committedEvents(), qint64(1), 2000);  // the timer, not a full batch, wrote it
        RunStore s(db);
        QCOMPARE(s.runDetails(run).events.size(), size_t(1));
        // A replayed event counts as committed but is stored once.
        w.postEvent(run, stepEvent(0, 1));
        w.flush();
        QCOMPARE(w.committedEvents(), qint64(2));
        QCOMPARE(s.runDetails(run).events.size(), size_t(1));
    }

    void flushOnDestructionAndDefaultBatching() {
        const QString db = path("dtor.sqlite");
        qint64 run = 0;
        {
            RunStore s(db);
            run = newRun(s, QStringLiteral("d"));
        }
        {
            EventWriter w(db, 60000, 500);  // a long interval: only the destructor writes these
            for (int i = 1; i <= 10; ++i) w.postEvent(run, stepEvent(0, i));
        }
        RunStore s(db);
        QCOMPARE(s.runDetails(run).events.size(), size_t(10));
    }

    void dropsOnlyTheBadItem() {
        const QString db = path("bad.sqlite");
        qint64 run = 0;
        {
            RunStore s(db);
            run = newRun(s, QStringLiteral("x"));
        }
        EventWriter w(db, 10, 100);
        FailureLog log(w);
        QStringList& failures = log.messages;
        w.postEvent(run, stepEvent(0, 1));
        w.postEvent(424242, stepEvent(0, 1));  // no such run
        w.postMetric(run, QStringLiteral("nan"), std::nan(""));
        w.postEvent(run, stepEvent(0, 2));
        w.flush();
        QCOMPARE(w.committedEvents(), qint64(2));
        QTRY_COMPARE(failures.size(), 2);
        QVERIFY2(failures[0].contains(QStringLiteral("FOREIGN KEY constraint failed")) &&
                     failures[0].contains(QStringLiteral("dropped")),
                 qPrintable(failures[0]));
        QVERIFY2(failures[1].contains(QStringLiteral("not a finite number")), qPrintable(failures[1]));
        RunStore s(db);
        QCOMPARE(s.runDetails(run).events.size(), size_t(2));
    }

    void retriesWhileTheDatabaseIsLocked() {
        const QString db = path("locked.sqlite");
        qint64 run = 0;
        {
            RunStore s(db);
            run = newRun(s, QStringLiteral("l"));
        }
        // Another connection holds the write lock longer than the writer's busy timeout.
        QSqlDatabase lock_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("locker"));
        lock_db.setDatabaseName(db);
        QVERIFY(lock_db.open());
        QSqlQuery lock(lock_db);
        QVERIFY(lock.exec(QStringLiteral("BEGIN EXCLUSIVE")));
        {
            EventWriter w(db, 10, 100);
            FailureLog log(w);
            QStringList& failures = log.messages;
            for (int i = 1; i <= 50; ++i) w.postEvent(run, stepEvent(0, i));
            QTRY_VERIFY_WITH_TIMEOUT(!failures.isEmpty(), 15000);
            QVERIFY2(failures[0].contains(QStringLiteral("locked")) && failures[0].contains(QStringLiteral("kept; retrying")),
                     qPrintable(failures[0]));
            QCOMPARE(w.committedEvents(), qint64(0));
            QVERIFY(lock.exec(QStringLiteral("ROLLBACK")));
            w.flush();
            QCOMPARE(w.committedEvents(), qint64(50));
        }
        lock = QSqlQuery();
        lock_db.close();
        lock_db = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("locker"));
        RunStore s(db);
        const RunDetails d = s.runDetails(run);
        QVERIFY(contiguousFromOne(d.events, 0, 50));
    }

    void refusesADatabaseItCannotOpen() {
        const QString p = path("not-a-db.txt");
        QFile f(p);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("plain text, not SQLite\n");
        f.close();
        try {
            EventWriter w(p);
            QFAIL("an EventWriter opened a file that is not a database");
        } catch (const hippie::Error& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("is not a SQLite database")), e.what());
        }
    }

    void keepsCommittedEventsWhenKilled() {
        const QString db = path("crash.sqlite");
        // Kill points, in events reported committed: early, mid and late in a run.
        for (const qint64 kill_after : {200, 1500, 4000}) {
            qint64 run = 0;
            {
                RunStore s(db);
                run = newRun(s, QStringLiteral("crash-%1").arg(kill_after));
            }
            QProcess child;
            child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
            child.start(QCoreApplication::applicationFilePath(),
                        {QStringLiteral("--child-writer"), db, QString::number(run)});
            QVERIFY2(child.waitForStarted(10000), qPrintable(child.errorString()));
            qint64 reported = 0;
            QByteArray pending;
            QElapsedTimer timer;
            timer.start();
            auto readReports = [&] {
                pending += child.readAllStandardOutput();
                qsizetype nl;
                while ((nl = pending.indexOf('\n')) >= 0) {
                    const QByteArray line = pending.left(nl);
                    pending.remove(0, nl + 1);
                    if (line.startsWith("committed ")) reported = line.mid(10).toLongLong();
                }
            };
            while (reported < kill_after && timer.elapsed() < 120000 && child.state() == QProcess::Running) {
                child.waitForReadyRead(1000);
                readReports();
            }
            QVERIFY2(reported >= kill_after, "the child stopped reporting before the kill point");
            QCOMPARE(child.state(), QProcess::Running);
            child.kill();  // SIGKILL: no destructor, no flush, mid-batch
            QVERIFY(child.waitForFinished(10000));
            QCOMPARE(child.exitStatus(), QProcess::CrashExit);
            readReports();  // lines written before the kill still count

            RunStore s(db);
            QCOMPARE(s.integrityCheck(), QStringLiteral("ok"));
            const RunDetails d = s.runDetails(run);
            const auto stored = static_cast<qint64>(d.events.size());
            QVERIFY2(stored >= reported, qPrintable(QStringLiteral("%1 events reported committed, %2 stored").arg(reported).arg(stored)));
            // Whole batches in posting order: seq 1..stored, no gap, nothing twice.
            QVERIFY(contiguousFromOne(d.events, 0, stored));
            QVERIFY(!d.logs.empty());
            qInfo("kill after %lld: %lld reported committed, %lld stored", static_cast<long long>(kill_after),
                  static_cast<long long>(reported), static_cast<long long>(stored));
        }
    }
};

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "--child-writer") == 0) {
        QCoreApplication app(argc, argv);
        return childWriter(QString::fromLocal8Bit(argv[2]), QByteArray(argv[3]).toLongLong());
    }
    QCoreApplication app(argc, argv);
    TestEventWriter test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_event_writer.moc"
