// The agent protocol's pieces without a network: JobSpec JSON, framing, tokens, and the checks a
// JobRunner makes before it starts anything.
#include <QTemporaryDir>
#include <QTest>

#include "app/jobs/agent_server.h"
#include "app/jobs/framing.h"
#include "app/jobs/job_runner.h"
#include "app/jobs/protocol.h"
#include "planners/common/error.h"
#include "planners/model/presets.h"
#include "planners/schedule/plan_json.h"

using nlohmann::json;
namespace hj = hippie::jobs;

namespace {

json tinyPlan(int pp, int dp) {
    hippie::Plan p;
    p.model.zoo = "mlp-tiny";
    p.model.batch_size = 16;
    p.model = hippie::expandPreset(p.model);  // as a plan file records a preset: the MLP at its sizes
    p.planner = "manual";
    p.cluster = "cpu-local";
    p.dp = dp;
    p.micro_batches = 2;
    p.global_batch = 16;
    for (int s = 0; s < pp; ++s) p.stages.push_back({s, s});
    p.device_map = hippie::defaultDeviceMap(pp, dp);
    return hippie::planToJson(p);
}

hj::JobSpec sampleJob() {
    hj::JobSpec s;
    s.id = "job-1_a";
    s.plan = tinyPlan(2, 1);
    s.steps = 7;
    s.seed = 12345678901234ULL;
    s.world_size = 2;
    s.first_rank = 1;
    s.rank_count = 1;
    s.master_addr = "10.0.0.5";
    s.master_port = 29500;
    s.lr = 0.01;
    s.op_timeout_s = 30;
    s.trace_every_step = true;
    s.dump_params = "params-{rank}.json";
    s.checkpoint_every = 3;
    s.checkpoint_key = "run-first-attempt";
    s.resume = true;
    s.data_file = "/data/tokens.bin";
    s.token_dtype = "uint32";
    return s;
}

QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const hippie::Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestProtocol : public QObject {
    Q_OBJECT
private slots:
    void jobStates() {
        for (hj::JobState s : {hj::JobState::Queued, hj::JobState::Running, hj::JobState::Succeeded, hj::JobState::Failed,
                               hj::JobState::Cancelled, hj::JobState::Lost})
            QVERIFY(hj::jobStateFromString(hj::toString(s)) == std::optional<hj::JobState>(s));
        QVERIFY(!hj::jobStateFromString("done"));
        QVERIFY(!hj::isTerminal(hj::JobState::Running));
        QVERIFY(!hj::isTerminal(hj::JobState::Queued));
        QVERIFY(hj::isTerminal(hj::JobState::Lost));
        QVERIFY(hj::isTerminal(hj::JobState::Cancelled));
    }

    void jobSpecRoundTrip() {
        const hj::JobSpec a = sampleJob();
        const json j = hj::jobToJson(a);
        const hj::JobSpec b = hj::jobFromJson(json::parse(j.dump()));
        QCOMPARE(b.id, a.id);
        QVERIFY(b.plan == a.plan);
        QCOMPARE(b.steps, a.steps);
        QCOMPARE(b.seed, a.seed);
        QCOMPARE(b.world_size, a.world_size);
        QCOMPARE(b.first_rank, a.first_rank);
        QCOMPARE(b.rank_count, a.rank_count);
        QCOMPARE(b.master_addr, a.master_addr);
        QCOMPARE(b.master_port, a.master_port);
        QCOMPARE(b.lr, a.lr);
        QCOMPARE(b.op_timeout_s, a.op_timeout_s);
        QCOMPARE(b.trace_every_step, a.trace_every_step);
        QCOMPARE(b.dump_params, a.dump_params);
        QCOMPARE(b.checkpoint_every, a.checkpoint_every);
        QCOMPARE(b.checkpoint_key, a.checkpoint_key);
        QCOMPARE(b.resume, a.resume);
        QCOMPARE(b.data_file, a.data_file);
        QCOMPARE(b.token_dtype, a.token_dtype);
        QVERIFY(b.graph.is_null());
        QVERIFY(hj::jobToJson(b) == j);
    }

    void defaultsWhenOptionalFieldsAreAbsent() {
        const hj::JobSpec s = hj::jobFromJson({{"id", "x"}, {"plan", tinyPlan(1, 1)}});
        QCOMPARE(s.steps, 5);
        QCOMPARE(s.world_size, 1);
        QCOMPARE(s.master_port, 0);
        QCOMPARE(s.master_addr, std::string("127.0.0.1"));
        QCOMPARE(s.checkpoint_every, 0);
        QVERIFY(s.checkpoint_key.empty());
        QVERIFY(!s.resume);
        QVERIFY(s.data_file.empty());    // synthetic data
        QVERIFY(s.token_dtype.empty());  // the engine's default
    }

    void badFieldIsNamed_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");  // JSON; "absent" removes the field
        QTest::newRow("id missing") << "id" << "absent";
        QTest::newRow("id with slash") << "id" << R"("../etc")";
        QTest::newRow("id too long") << "id" << ('"' + QString(65, QLatin1Char('a')) + '"');
        QTest::newRow("plan missing") << "plan" << "absent";
        QTest::newRow("plan not object") << "plan" << R"("plan.json")";
        QTest::newRow("steps text") << "steps" << R"("5")";
        QTest::newRow("steps zero") << "steps" << "0";
        QTest::newRow("steps fraction") << "steps" << "2.5";
        QTest::newRow("seed negative") << "seed" << "-1";
        QTest::newRow("world_size zero") << "world_size" << "0";
        QTest::newRow("first_rank negative") << "first_rank" << "-1";
        QTest::newRow("first_rank too big") << "first_rank" << "2";
        QTest::newRow("rank_count past end") << "rank_count" << "2";
        QTest::newRow("master_addr option") << "master_addr" << R"("--evil")";
        QTest::newRow("master_addr space") << "master_addr" << R"("a b")";
        QTest::newRow("master_port big") << "master_port" << "70000";
        QTest::newRow("lr negative") << "lr" << "-0.1";
        QTest::newRow("op_timeout_s text") << "op_timeout_s" << R"("1s")";
        QTest::newRow("trace_every_step int") << "trace_every_step" << "1";
        QTest::newRow("dump_params number") << "dump_params" << "3";
        QTest::newRow("graph array") << "graph" << "[1]";
        QTest::newRow("checkpoint_every negative") << "checkpoint_every" << "-2";
        QTest::newRow("checkpoint_key leaves the directory") << "checkpoint_key" << R"("../../etc")";
        QTest::newRow("checkpoint_key empty") << "checkpoint_key" << R"("")";
        QTest::newRow("checkpoint_key missing with resume") << "checkpoint_key" << "absent";
        QTest::newRow("resume text") << "resume" << R"("yes")";
        QTest::newRow("data_file empty") << "data_file" << R"("")";
        QTest::newRow("data_file number") << "data_file" << "7";
        QTest::newRow("token_dtype int8") << "token_dtype" << R"("int8")";
    }
    void badFieldIsNamed() {
        QFETCH(QString, field);
        QFETCH(QString, value);
        json j = hj::jobToJson(sampleJob());
        if (value == QLatin1String("absent")) j.erase(field.toStdString());
        else j[field.toStdString()] = json::parse(value.toStdString());
        const QString message = errorOf([&] { hj::jobFromJson(j); });
        QVERIFY2(!message.isEmpty(), "accepted a bad field");
        QVERIFY2(message.contains(QLatin1Char('\'') + field + QLatin1Char('\'')), qPrintable(message));
    }

    void notAnObject() {
        QVERIFY(errorOf([] { hj::jobFromJson(json::array()); }).contains(QLatin1String("object")));
    }

    void jobIds() {
        QVERIFY(hj::isValidJobId("run-2024_01"));
        QVERIFY(!hj::isValidJobId(""));
        QVERIFY(!hj::isValidJobId("a/b"));
        QVERIFY(!hj::isValidJobId(".."));
        QVERIFY(!hj::isValidJobId("a b"));
        QVERIFY(!hj::isValidJobId(std::string(65, 'x')));
        QVERIFY(hj::isValidJobId(std::string(64, 'x')));
    }

    void lineReaderSplitsLines() {
        hj::LineReader r(100);
        QByteArray line;
        r.append("{\"type\":\"ping\"}\n{\"ty");
        QCOMPARE(r.next(&line), hj::LineReader::Status::Line);
        QCOMPARE(line, QByteArray("{\"type\":\"ping\"}"));
        QCOMPARE(r.next(&line), hj::LineReader::Status::NeedMore);
        r.append("pe\":1}\r\n\n");
        QCOMPARE(r.next(&line), hj::LineReader::Status::Line);
        QCOMPARE(line, QByteArray("{\"type\":1}"));
        QCOMPARE(r.next(&line), hj::LineReader::Status::Line);
        QCOMPARE(line, QByteArray());
        QCOMPARE(r.next(&line), hj::LineReader::Status::NeedMore);
    }

    void lineReaderEnforcesTheLimit() {
        QByteArray line;
        hj::LineReader exact(10);
        exact.append(QByteArray(10, 'a') + '\n');
        QCOMPARE(exact.next(&line), hj::LineReader::Status::Line);
        QCOMPARE(line.size(), 10);

        hj::LineReader with_newline(10);
        with_newline.append(QByteArray(11, 'a') + "\n{}\n");
        QCOMPARE(with_newline.next(&line), hj::LineReader::Status::TooLong);
        QCOMPARE(with_newline.next(&line), hj::LineReader::Status::TooLong);  // stays refused

        // Refused before the newline arrives: a flood is not buffered.
        hj::LineReader flood(10);
        flood.append(QByteArray(6, 'a'));
        QCOMPARE(flood.next(&line), hj::LineReader::Status::NeedMore);
        flood.append(QByteArray(6, 'a'));
        QCOMPARE(flood.next(&line), hj::LineReader::Status::TooLong);
        QCOMPARE(flood.buffered(), 0);

        QCOMPARE(hj::LineReader().maxBytes(), hj::kMaxMessageBytes);
    }

    void framesAreOneLine() {
        const QByteArray f = hj::frame({{"type", "event"}, {"text", "a\nb"}});
        QVERIFY(f.endsWith('\n'));
        QCOMPARE(f.count('\n'), 1);
        QVERIFY(hj::parseMessage(f.chopped(1))["text"] == json("a\nb"));
        // Invalid UTF-8 (a rank's raw output) does not throw.
        QVERIFY(hj::frame({{"type", "x"}, {"text", std::string("\xff\xfe")}}).endsWith('\n'));
    }

    void parseMessageNamesTheProblem() {
        QVERIFY(errorOf([] { hj::parseMessage("{not json"); }).contains(QLatin1String("malformed JSON")));
        QVERIFY(errorOf([] { hj::parseMessage("[1,2]"); }).contains(QLatin1String("object")));
        QVERIFY(errorOf([] { hj::parseMessage("{\"job\":1}"); }).contains(QLatin1String("'type'")));
        QVERIFY(errorOf([] { hj::parseMessage("{\"type\":3}"); }).contains(QLatin1String("'type'")));
        QVERIFY(hj::parseMessage("{\"type\":\"ping\"}")["type"] == json("ping"));
    }

    void tokensCompare() {
        QVERIFY(hj::tokensEqual("abc", "abc"));
        QVERIFY(!hj::tokensEqual("abd", "abc"));
        QVERIFY(!hj::tokensEqual("ab", "abc"));
        QVERIFY(!hj::tokensEqual("abcd", "abc"));
        QVERIFY(!hj::tokensEqual("", "abc"));
        QVERIFY(!hj::tokensEqual("", ""));  // an empty token never authenticates
    }

    void runnerChecksThePlan() {
        hj::JobSpec s = sampleJob();
        s.world_size = 3;
        s.first_rank = 0;
        s.rank_count = 3;
        QVERIFY(errorOf([&] { hj::JobRunner::checkSpec(s); }).contains(QLatin1String("'world_size'")));
        s = sampleJob();
        s.plan["stages"] = "two";
        QVERIFY(errorOf([&] { hj::JobRunner::checkSpec(s); }).contains(QLatin1String("plan")));
        s = sampleJob();
        s.master_port = 0;  // rank 1 cannot pick the rendezvous port
        QVERIFY(errorOf([&] { hj::JobRunner::checkSpec(s); }).contains(QLatin1String("'master_port'")));
        s = sampleJob();
        s.plan["model"] = {{"file", "/home/me/model.json"}, {"batch_size", 16}};
        QVERIFY(errorOf([&] { hj::JobRunner::checkSpec(s); }).contains(QLatin1String("'graph'")));
        QVERIFY(errorOf([&] { hj::JobRunner::checkSpec(sampleJob()); }).isEmpty());
        // Tensor parallelism of a model the engine does not split (the MLP): the agent
        // refuses it before starting ranks.
        s = sampleJob();
        s.plan["version"] = 4;
        s.plan["tp"] = 2;
        s.plan["device_map"] = {{0, 1}, {2, 3}};
        s.world_size = 4;
        const QString tp = errorOf([&] { hj::JobRunner::checkSpec(s); });
        QVERIFY2(tp.contains(QLatin1String("tensor parallelism (tp 2) is trained by this engine for the zoo's transformer models")),
                 qPrintable(tp));
    }

    void runnerKeepsFilesInsideTheWorkDir_data() {
        QTest::addColumn<QString>("dump");
        QTest::addColumn<bool>("ok");
        QTest::newRow("plain") << "params.json" << true;
        QTest::newRow("per rank") << "params-{rank}.json" << true;
        QTest::newRow("sub dir") << "out/params.json" << true;
        QTest::newRow("parent") << "../params.json" << false;
        QTest::newRow("deep parent") << "out/../../../etc/passwd" << false;
        QTest::newRow("absolute") << "/tmp/params.json" << false;
        QTest::newRow("the dir itself") << "." << false;
        QTest::newRow("job dir is a link") << "link/params.json" << false;
    }
    void runnerKeepsFilesInsideTheWorkDir() {
        QFETCH(QString, dump);
        QFETCH(bool, ok);
        QTemporaryDir root;
        QTemporaryDir outside;
        hj::JobSpec s = sampleJob();
        s.first_rank = 0;
        s.rank_count = 2;
        s.dump_params = dump.toStdString();
        if (dump.startsWith(QLatin1String("link/"))) {
            // A link inside the job's directory cannot exist before the job, but one in the work
            // root's jobs/ folder can: name the job after it.
            QDir(root.path()).mkpath(QStringLiteral("jobs"));
            QFile::link(outside.path(), root.filePath(QStringLiteral("jobs/linked")));
            s.id = "linked";
            s.dump_params = "params.json";
        }
        hj::JobRunner runner(s, {root.path(), QStringLiteral("/bin/true"), {}, 5000, 3000});
        const QString message = errorOf([&] { runner.prepare(); });
        if (dump.startsWith(QLatin1String("link/"))) {
            QVERIFY2(message.contains(QLatin1String("already exists")), qPrintable(message));
            return;
        }
        if (ok) {
            QVERIFY2(message.isEmpty(), qPrintable(message));
            QVERIFY(QFile::exists(root.filePath(QStringLiteral("jobs/job-1_a/plan.json"))));
            QVERIFY(runner.masterPort() > 0);  // rank 0 with master_port 0 picked one
        } else {
            QVERIFY2(message.contains(QLatin1String("'dump_params'")), qPrintable(message));
            QVERIFY(!QFile::exists(root.filePath(QStringLiteral("jobs/job-1_a"))));
        }
    }

    void runnerWithoutEngineSaysSo() {
        QTemporaryDir root;
        hj::JobSpec s = sampleJob();
        s.first_rank = 0;
        s.rank_count = 2;
        hj::JobRunner runner(s, {root.path(), {}, {}, 5000, 3000});
        const QString message = errorOf([&] { runner.prepare(); });
        QVERIFY2(message.contains(QLatin1String("hippie-engine is not installed")), qPrintable(message));
        QVERIFY(message.contains(QLatin1String("LibTorch")));
    }

    void runnerWritesTheGraphItIsSent() {
        QTemporaryDir root;
        hj::JobSpec s = sampleJob();
        s.first_rank = 0;
        s.rank_count = 2;
        s.dump_params.clear();
        s.plan["model"] = {{"file", "/home/me/model.json"}, {"batch_size", 16}};
        s.graph = {{"format", "hippie-graph"}};  // not a graph
        hj::JobRunner bad(s, {root.path(), QStringLiteral("/bin/true"), {}, 5000, 3000});
        QVERIFY(errorOf([&] { bad.prepare(); }).contains(QLatin1String("graph")));
    }

    void launcherArguments() {
        hj::LaunchSpec ls;
        ls.plan_file = QStringLiteral("/w/plan.json");
        ls.world_size = 4;
        ls.master_port = 1234;
        ls.steps = 3;
        ls.seed = 9;
        ls.trace_every_step = true;
        ls.lr = 0.5;
        const QStringList a = ls.arguments(2);
        QCOMPARE(a.first(), QStringLiteral("run"));
        QCOMPARE(a.at(a.indexOf(QStringLiteral("--rank")) + 1), QStringLiteral("2"));
        QCOMPARE(a.at(a.indexOf(QStringLiteral("--world-size")) + 1), QStringLiteral("4"));
        QCOMPARE(a.at(a.indexOf(QStringLiteral("--master-port")) + 1), QStringLiteral("1234"));
        QCOMPARE(a.at(a.indexOf(QStringLiteral("--lr")) + 1), QStringLiteral("0.5"));
        QVERIFY(a.contains(QStringLiteral("--trace-every-step")));
        QVERIFY(!a.contains(QStringLiteral("--op-timeout")));
        QVERIFY(!a.contains(QStringLiteral("--dump-params")));
    }
};

QTEST_GUILESS_MAIN(TestProtocol)
#include "test_protocol.moc"
