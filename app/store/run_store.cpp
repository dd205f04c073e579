#include "app/store/run_store.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QThread>
#include <QVariant>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>

#include "app/store/measured_trace.h"
#include "app/store/sql_script.h"

namespace hippie::store {

using nlohmann::json;

// ---- states ----

namespace {

struct StateName {
    RunState state;
    const char* name;
};
constexpr StateName kStateNames[] = {{RunState::Queued, "queued"},         {RunState::Running, "running"},
                                     {RunState::Succeeded, "succeeded"},   {RunState::Failed, "failed"},
                                     {RunState::Cancelled, "cancelled"},   {RunState::Lost, "lost"}};

}  // namespace

QString runStateName(RunState s) {
    for (const StateName& n : kStateNames)
        if (n.state == s) return QString::fromLatin1(n.name);
    return QStringLiteral("unknown");
}

std::optional<RunState> runStateFromName(const QString& name) {
    for (const StateName& n : kStateNames)
        if (name == QLatin1String(n.name)) return n.state;
    return std::nullopt;
}

bool isFinalState(RunState s) { return s != RunState::Queued && s != RunState::Running; }

std::optional<double> RunSummary::errorPercent() const {
    if (!predicted_step_s || !measured_step_s || *predicted_step_s <= 0) return std::nullopt;
    return (*measured_step_s - *predicted_step_s) / *predicted_step_s * 100.0;
}

// ---- helpers ----

namespace {

constexpr int kBusyTimeoutMs = 5000;  // wait this long for another connection's write to end
constexpr int kWalRetryMs = 5;         // between tries to switch a new file to WAL
constexpr const char* kMigrationsDir = ":/migrations";

// SQLite primary result codes (sqlite3.h) after which the same write may succeed later.
constexpr int kSqliteBusy = 5, kSqliteLocked = 6, kSqliteReadOnly = 8, kSqliteIoErr = 10, kSqliteFull = 13,
              kSqliteCantOpen = 14, kSqliteProtocol = 15;

std::atomic<quint64> g_connection_serial{0};

qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }

std::string str(const QString& s) { return s.toStdString(); }

QString errorText(const QSqlError& e) {
    QString t = e.databaseText().isEmpty() ? e.text() : e.databaseText();
    return t.trimmed();
}

bool isTransient(const QSqlError& e) {
    bool ok = false;
    const int code = e.nativeErrorCode().toInt(&ok) & 0xff;
    if (!ok) return false;
    return code == kSqliteBusy || code == kSqliteLocked || code == kSqliteReadOnly || code == kSqliteIoErr ||
           code == kSqliteFull || code == kSqliteCantOpen || code == kSqliteProtocol;
}

struct Migration {
    int version;
    QString file;
};

// resources/migrations/NNN_name.sql, ordered; versions must run 1, 2, 3, ... without gaps.
const std::vector<Migration>& migrations() {
    static const std::vector<Migration> list = [] {
        static const QRegularExpression name_re(QStringLiteral("^(\\d{3})_[a-z0-9_]+\\.sql$"));
        std::vector<Migration> out;
        const QStringList files = QDir(QString::fromLatin1(kMigrationsDir)).entryList({QStringLiteral("*.sql")}, QDir::Files);
        for (const QString& f : files) {
            const QRegularExpressionMatch m = name_re.match(f);
            if (!m.hasMatch())
                throw Error("internal: migration '" + str(f) + "' is not named NNN_name.sql (resources/migrations/)");
            out.push_back({m.captured(1).toInt(), QString::fromLatin1(kMigrationsDir) + u'/' + f});
        }
        std::sort(out.begin(), out.end(), [](const Migration& a, const Migration& b) { return a.version < b.version; });
        for (size_t i = 0; i < out.size(); ++i)
            if (out[i].version != static_cast<int>(i) + 1)
                throw Error("internal: the migrations in resources/migrations/ must be numbered 001, 002, ... without "
                            "gaps or repeats; found " + str(QFileInfo(out[i].file).fileName()));
        if (out.empty()) throw Error("internal: no schema migrations were compiled in (resources/migrations/*.sql)");
        return out;
    }();
    return list;
}

QString jsonText(const json& j) { return QString::fromStdString(j.dump()); }

QString hashOf(const QString& text) {
    return QString::fromLatin1(QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha256).toHex());
}

QVariant nullIfZero(qint64 id) { return id == 0 ? QVariant() : QVariant(id); }
QVariant nullIfEmpty(const QString& s) { return s.isEmpty() ? QVariant() : QVariant(s); }

// A model's name: the graph's "name", else the plan model spec's zoo name or file.
QString modelName(const json& model) {
    if (!model.is_object()) return {};
    for (const char* key : {"name", "zoo"})
        if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
            return QString::fromStdString(model[key].get<std::string>());
    if (model.contains("file") && model["file"].is_string())
        return QFileInfo(QString::fromStdString(model["file"].get<std::string>())).fileName();
    return {};
}

std::optional<double> numberAt(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
    return j[key].get<double>();
}

}  // namespace

// ---- a query that throws ----

namespace {

class Sql {
public:
    Sql(const QString& connection, const QString& path) : db_(QSqlDatabase::database(connection, false)), path_(path) {}

    // Prepares, binds in order and runs `sql`; throws WriteError (with `doing` and SQLite's words).
    QSqlQuery run(const QString& sql, const QVariantList& binds, const char* doing) const {
        QSqlQuery q(db_);
        q.setForwardOnly(true);
        if (!q.prepare(sql)) fail(q.lastError(), doing);
        for (int i = 0; i < binds.size(); ++i) q.bindValue(i, binds[i]);
        if (!q.exec()) fail(q.lastError(), doing);
        return q;
    }
    QSqlQuery run(const QString& sql, const char* doing) const { return run(sql, {}, doing); }

    // Runs a statement that cannot be prepared with bound values (PRAGMA, BEGIN, DDL).
    QSqlQuery exec(const QString& sql, const char* doing) const {
        QSqlQuery q(db_);
        q.setForwardOnly(true);
        if (!q.exec(sql)) fail(q.lastError(), doing);
        return q;
    }

    QVariant scalar(const QString& sql, const QVariantList& binds, const char* doing) const {
        QSqlQuery q = run(sql, binds, doing);
        return q.next() ? q.value(0) : QVariant();
    }
    QVariant pragma(const QString& sql, const char* doing) const {
        QSqlQuery q = exec(sql, doing);
        return q.next() ? q.value(0) : QVariant();
    }

    [[noreturn]] void fail(const QSqlError& e, const char* doing) const {
        QString hint;
        if (isTransient(e)) hint = QStringLiteral("; check that the disk has room and the file is writable");
        throw WriteError(str(path_) + ": " + doing + " failed: " + str(errorText(e)) + str(hint), isTransient(e));
    }

private:
    QSqlDatabase db_;
    QString path_;
};

}  // namespace

// ---- opening ----

QString RunStore::defaultPath() {
    // GenericDataLocation honours XDG_DATA_HOME and does not depend on the application's
    // organisation name, so the studio, hippie-plan and tests agree on one file.
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
           QStringLiteral("/hippie-studio/runs.sqlite");
}

int RunStore::latestSchemaVersion() { return migrations().back().version; }

RunStore::RunStore(const QString& path) : path_(path) {
    connection_ = QStringLiteral("hippie-store-%1").arg(++g_connection_serial);
    try {
        open();
        migrate();
    } catch (...) {
        QSqlDatabase::database(connection_, false).close();
        QSqlDatabase::removeDatabase(connection_);
        throw;
    }
}

RunStore::~RunStore() {
    {
        QSqlDatabase db = QSqlDatabase::database(connection_, false);
        if (db.isValid()) db.close();
    }
    QSqlDatabase::removeDatabase(connection_);
}

void RunStore::open() {
    const std::string p = str(path_);
    if (path_.isEmpty()) throw Error("no database file given");
    const QFileInfo info(path_);
    if (info.isDir()) throw Error(p + " is a folder, not a database file; name a file such as " + p + "/runs.sqlite");
    const QString dir = info.absolutePath();
    if (!QFileInfo(dir).isDir() && !QDir().mkpath(dir))
        throw Error(p + ": cannot create its folder " + str(dir) + "; choose a database file in a writable folder");
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE")))
        throw Error("the Qt SQLite driver (QSQLITE) is not installed; install the package libqt6sql6-sqlite");

    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
    db.setDatabaseName(path_);
    db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyTimeoutMs));
    if (!db.open())
        throw Error(p + ": cannot open the database: " + str(errorText(db.lastError())) +
                    "; check that the folder exists and is writable");

    Sql sql(connection_, path_);
    // Reading the header first: a file that is not SQLite fails here, before anything is written.
    // The version and the tables are read in one read transaction: another connection creating
    // the schema (tables and version in one transaction, migrate()) is seen whole or not at all.
    // Read apart, its commit could fall between the two reads, and a database being created was
    // taken for another program's (version 0, tables present).
    int version = 0;
    int tables = 0;
    struct ReadTransaction {
        QSqlDatabase& db;
        bool open = QSqlQuery(db).exec(QStringLiteral("BEGIN"));  // deferred: reads nothing yet
        void end() {
            if (open) QSqlQuery(db).exec(QStringLiteral("COMMIT"));
            open = false;
        }
        ~ReadTransaction() { end(); }
    } read{db};
    {
        QSqlQuery q(db);
        if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) {
            const QSqlError err = q.lastError();
            if (isTransient(err))
                throw WriteError(p + ": cannot read it (SQLite says: " + str(errorText(err)) +
                                 "); the file and its folder must be readable and writable", true);
            throw Error(p + " is not a SQLite database (SQLite says: " + str(errorText(err)) +
                        "); choose another database file, or move this one away to start a new one");
        }
        version = q.value(0).toInt();
    }
    tables = sql.scalar(QStringLiteral("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"), {},
                        "reading the schema")
                 .toInt();
    read.end();
    if (version > latestSchemaVersion())
        throw Error(p + " has schema version " + std::to_string(version) + ", newer than this build knows (" +
                    std::to_string(latestSchemaVersion()) + "); it was left untouched. Use a newer Hippie Studio, "
                    "or another database file");
    if (version == 0 && tables > 0)
        throw Error(p + " is a SQLite database of another program (it has tables but no Hippie Studio schema "
                    "version); it was left untouched. Choose another database file");

    sql.exec(QStringLiteral("PRAGMA foreign_keys = ON"), "turning foreign keys on");
    if (sql.pragma(QStringLiteral("PRAGMA foreign_keys"), "reading foreign_keys").toInt() != 1)
        throw Error(p + ": SQLite refused to enforce foreign keys (PRAGMA foreign_keys stays off)");
    // Switching needs the file to itself for a moment. Two connections switching at once would
    // each wait for the other, so SQLite answers one of them "locked" at once rather than after
    // the busy timeout: that one tries again, within the same timeout.
    QString mode;
    QElapsedTimer waited;
    waited.start();
    for (;;) {
        try {
            mode = sql.pragma(QStringLiteral("PRAGMA journal_mode = WAL"), "switching to WAL journal mode").toString().toLower();
            break;
        } catch (const WriteError& e) {
            if (e.transient() && waited.elapsed() < kBusyTimeoutMs) {
                QThread::msleep(kWalRetryMs);
                continue;
            }
            throw Error(p + ": cannot use WAL journal mode (" + e.what() + "); the database and its folder must be "
                        "writable and on a local disk");
        }
    }
    if (mode != u"wal")
        throw Error(p + ": cannot use WAL journal mode (SQLite keeps '" + str(mode) + "'); the database and its folder "
                    "must be writable and on a local disk");
    // Every commit reaches the disk before it returns: a committed event survives a crash.
    sql.exec(QStringLiteral("PRAGMA synchronous = FULL"), "setting synchronous = FULL");
}

void RunStore::migrate() {
    Sql sql(connection_, path_);
    for (const Migration& m : migrations()) {
        if (sql.pragma(QStringLiteral("PRAGMA user_version"), "reading the schema version").toInt() >= m.version) continue;
        QFile f(m.file);
        if (!f.open(QIODevice::ReadOnly)) throw Error("internal: cannot read the compiled-in migration " + str(m.file));
        const QStringList statements = splitSqlScript(QString::fromUtf8(f.readAll()), m.file);
        // IMMEDIATE: a second process opening the same file waits, then finds the work done.
        sql.exec(QStringLiteral("BEGIN IMMEDIATE"), "starting a migration");
        try {
            const int now = sql.pragma(QStringLiteral("PRAGMA user_version"), "reading the schema version").toInt();
            if (now < m.version) {
                for (const QString& s : statements) sql.exec(s, "migrating the schema");
                sql.exec(QStringLiteral("PRAGMA user_version = %1").arg(m.version), "setting the schema version");
            }
            sql.exec(QStringLiteral("COMMIT"), "committing a migration");
        } catch (const Error& e) {
            QSqlQuery(QSqlDatabase::database(connection_, false)).exec(QStringLiteral("ROLLBACK"));
            throw Error(std::string("migration ") + str(QFileInfo(m.file).fileName()) + " failed, the database keeps "
                        "its previous version: " + e.what());
        }
    }
}

int RunStore::schemaVersion() const {
    return Sql(connection_, path_).pragma(QStringLiteral("PRAGMA user_version"), "reading the schema version").toInt();
}

QString RunStore::journalMode() const {
    return Sql(connection_, path_).pragma(QStringLiteral("PRAGMA journal_mode"), "reading the journal mode").toString().toLower();
}

QString RunStore::integrityCheck() const {
    QSqlQuery q = Sql(connection_, path_).exec(QStringLiteral("PRAGMA integrity_check"), "checking integrity");
    QStringList lines;
    while (q.next()) lines << q.value(0).toString();
    return lines.join(u'\n');
}

// ---- writing ----
// A null QString binds as SQL NULL; COALESCE(?, '') stores it as the empty text it means.

void RunStore::inTransaction(const std::function<void()>& work) {
    if (transaction_depth_ > 0) {
        work();
        return;
    }
    Sql sql(connection_, path_);
    sql.exec(QStringLiteral("BEGIN IMMEDIATE"), "starting a transaction");
    ++transaction_depth_;
    try {
        work();
        --transaction_depth_;
        sql.exec(QStringLiteral("COMMIT"), "committing");
    } catch (...) {
        transaction_depth_ = 0;
        QSqlQuery(QSqlDatabase::database(connection_, false)).exec(QStringLiteral("ROLLBACK"));
        throw;
    }
}

namespace {

// INSERT OR IGNORE on a unique hash, then the id of the row holding that hash.
qint64 saveUnique(const Sql& sql, const QString& table, const QString& name, const QString& text, const char* doing) {
    const QString hash = hashOf(text);
    sql.run(QStringLiteral("INSERT INTO %1 (name, json, hash, created_ms) VALUES (COALESCE(?, ''), ?, ?, ?) "
                           "ON CONFLICT (hash) DO NOTHING").arg(table),
            {name, text, hash, nowMs()}, doing);
    return sql.scalar(QStringLiteral("SELECT id FROM %1 WHERE hash = ?").arg(table), {hash}, doing).toLongLong();
}

}  // namespace

qint64 RunStore::saveModel(const json& model) {
    if (!model.is_object()) throw Error(str(path_) + ": a model to store must be a JSON object (got " + model.type_name() + ")");
    return saveUnique(Sql(connection_, path_), QStringLiteral("models"), modelName(model), jsonText(model), "saving a model");
}

qint64 RunStore::saveCluster(const json& cluster) {
    if (!cluster.is_object())
        throw Error(str(path_) + ": a cluster to store must be a JSON object (got " + cluster.type_name() + ")");
    const QString name = cluster.contains("name") && cluster["name"].is_string()
                             ? QString::fromStdString(cluster["name"].get<std::string>())
                             : QString();
    return saveUnique(Sql(connection_, path_), QStringLiteral("clusters"), name, jsonText(cluster), "saving a cluster");
}

qint64 RunStore::savePlan(const json& plan, qint64 model_id, qint64 cluster_id, const json& predicted_metrics) {
    if (!plan.is_object()) throw Error(str(path_) + ": a plan to store must be a JSON object (got " + plan.type_name() + ")");
    const QString planner = plan.contains("planner") && plan["planner"].is_string()
                                ? QString::fromStdString(plan["planner"].get<std::string>())
                                : QStringLiteral("manual");
    const QString text = jsonText(plan), predicted = jsonText(predicted_metrics);
    const QString hash = hashOf(QString::fromStdString(json{{"plan", plan}, {"model", model_id}, {"cluster", cluster_id},
                                     {"predicted", predicted_metrics}}.dump()));
    const Sql sql(connection_, path_);
    try {
        sql.run(QStringLiteral("INSERT INTO plans (model_id, cluster_id, planner, json, predicted_metrics, hash, created_ms) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING"),
                {nullIfZero(model_id), nullIfZero(cluster_id), planner, text, predicted, hash, nowMs()}, "saving a plan");
    } catch (const WriteError& e) {
        if (e.transient()) throw;
        throw WriteError(std::string(e.what()) + " (is model " + std::to_string(model_id) + " / cluster " +
                             std::to_string(cluster_id) + " stored?)", false);
    }
    return sql.scalar(QStringLiteral("SELECT id FROM plans WHERE hash = ?"), {hash}, "saving a plan").toLongLong();
}

qint64 RunStore::createRun(const NewRun& run) {
    if (!run.workers.is_array())
        throw Error(str(path_) + ": a run's workers must be a JSON array (got " + run.workers.type_name() + ")");
    if (run.steps < 0) throw Error(str(path_) + ": a run's steps must be >= 0 (got " + std::to_string(run.steps) + ")");
    if (run.checkpoint_every < 0 || (run.checkpoint_every > 0) == run.checkpoint_dir.isEmpty())
        throw Error(str(path_) + ": a run writes checkpoints with both a directory and checkpoint_every > 0, or neither");
    if (!run.options.is_object()) throw Error(str(path_) + ": a run's options must be a JSON object (got " + run.options.type_name() + ")");
    const Sql sql(connection_, path_);
    if (!run.job_id.isEmpty()) {
        if (const auto existing = runByJob(run.job_id))
            throw WriteError(str(path_) + ": job id '" + str(run.job_id) + "' is already used by run " +
                                 std::to_string(*existing) + "; each run needs its own job id", false);
    }
    try {
        QSqlQuery q = sql.run(QStringLiteral("INSERT INTO runs (plan_id, job_id, workers, steps, state, message, created_ms, note, "
                                             "checkpoint_dir, checkpoint_every, options) "
                                             "VALUES (?, ?, ?, ?, 'queued', '', ?, COALESCE(?, ''), COALESCE(?, ''), ?, ?)"),
                              {run.plan_id, nullIfEmpty(run.job_id), jsonText(run.workers), run.steps, nowMs(), run.note,
                               run.checkpoint_dir, run.checkpoint_every, jsonText(run.options)},
                              "creating a run");
        return q.lastInsertId().toLongLong();
    } catch (const WriteError& e) {
        if (e.transient()) throw;
        throw WriteError(std::string(e.what()) + " (is plan " + std::to_string(run.plan_id) + " stored?)", false);
    }
}

namespace {

bool isForward(RunState from, RunState to) {
    if (from == RunState::Queued) return to != RunState::Queued;
    if (from == RunState::Running) return isFinalState(to);
    return false;
}

}  // namespace

bool RunStore::setRunState(qint64 run, RunState state, const QString& message) {
    const Sql sql(connection_, path_);
    const QVariant current = sql.scalar(QStringLiteral("SELECT state FROM runs WHERE id = ?"), {run}, "reading a run's state");
    if (!current.isValid()) throw WriteError(str(path_) + ": there is no run " + std::to_string(run), false);
    const auto from = runStateFromName(current.toString());
    if (!from) throw Error(str(path_) + ": run " + std::to_string(run) + " has an unknown state '" + str(current.toString()) + "'");
    if (!isForward(*from, state)) return false;
    const qint64 now = nowMs();
    QSqlQuery q = sql.run(
        QStringLiteral("UPDATE runs SET state = ?, message = CASE WHEN COALESCE(?, '') = '' THEN message ELSE ? END, "
                       "started_ms = CASE WHEN ? AND started_ms IS NULL THEN ? ELSE started_ms END, "
                       "ended_ms = CASE WHEN ? THEN ? ELSE ended_ms END "
                       "WHERE id = ? AND state = ?"),
        {runStateName(state), message, message, state == RunState::Running, now, isFinalState(state), now, run,
         runStateName(*from)},
        "changing a run's state");
    return q.numRowsAffected() == 1;  // 0: another connection moved it first
}

int RunStore::startNextAttempt(qint64 run, const QString& job_id, const json& workers) {
    if (!workers.is_array()) throw Error(str(path_) + ": a run's workers must be a JSON array (got " + workers.type_name() + ")");
    const std::string what = str(path_) + ": run " + std::to_string(run);
    int next = 0;
    inTransaction([&] {
        const Sql sql(connection_, path_);
        QSqlQuery q = sql.run(QStringLiteral("SELECT state, attempt, job_id, message, started_ms, ended_ms, workers FROM runs WHERE id = ?"),
                              {run}, "reading a run to resume");
        if (!q.next()) throw WriteError(str(path_) + ": there is no run " + std::to_string(run), false);
        const QString state = q.value(0).toString();
        const auto from = runStateFromName(state);
        if (!from || !isFinalState(*from) || *from == RunState::Succeeded)
            throw WriteError(what + " is " + str(state) + ": only a failed, cancelled or lost run starts another attempt", false);
        const int attempt = q.value(1).toInt();
        if (!job_id.isEmpty() && job_id != q.value(2).toString())
            if (const auto existing = runByJob(job_id))
                throw WriteError(str(path_) + ": job id '" + str(job_id) + "' is already used by run " + std::to_string(*existing), false);
        sql.run(QStringLiteral("INSERT INTO run_attempts (run_id, attempt, job_id, workers, state, message, started_ms, ended_ms) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                {run, attempt, q.value(2), q.value(6), state, q.value(3), q.value(4), q.value(5)}, "keeping a run's attempt");
        sql.run(QStringLiteral("UPDATE runs SET state = 'running', attempt = ?, job_id = ?, workers = ?, message = '', "
                               "started_ms = ?, ended_ms = NULL WHERE id = ? AND state = ?"),
                {attempt + 1, nullIfEmpty(job_id), jsonText(workers), nowMs(), run, state}, "starting a run's next attempt");
        next = attempt + 1;
    });
    return next;
}

void RunStore::appendEvents(qint64 run, const std::vector<StoredEvent>& events) {
    if (events.empty()) return;
    for (const StoredEvent& e : events)
        if (e.source < 0) throw WriteError(str(path_) + ": an event's source must be >= 0 (got " + std::to_string(e.source) + ")", false);
    inTransaction([&] {
        const Sql sql(connection_, path_);
        QSqlQuery q(QSqlDatabase::database(connection_, false));
        if (!q.prepare(QStringLiteral("INSERT INTO events (run_id, attempt, source, seq, rank, kind, json, time_ms) "
                                      "VALUES (?, ?, ?, ?, ?, COALESCE(?, ''), ?, ?) ON CONFLICT (run_id, attempt, source, seq) DO NOTHING")))
            sql.fail(q.lastError(), "storing events");
        const qint64 now = nowMs();
        for (const StoredEvent& e : events) {
            const json& ev = e.event;
            QVariant rank, kind = QStringLiteral("");
            if (ev.is_object() && ev.contains("rank") && ev["rank"].is_number_integer()) rank = ev["rank"].get<qint64>();
            if (ev.is_object() && ev.contains("event") && ev["event"].is_string())
                kind = QString::fromStdString(ev["event"].get<std::string>());
            q.bindValue(0, run);
            q.bindValue(1, std::max(1, e.attempt));
            q.bindValue(2, e.source);
            q.bindValue(3, e.seq);
            q.bindValue(4, rank);
            q.bindValue(5, kind);
            q.bindValue(6, jsonText(ev));
            q.bindValue(7, now);
            if (!q.exec()) {
                const QSqlError err = q.lastError();
                throw WriteError(str(path_) + ": storing an event of run " + std::to_string(run) + " failed: " +
                                     str(errorText(err)),
                                 isTransient(err));
            }
        }
    });
}

void RunStore::appendLog(qint64 run, int rank, const QString& stream, const QString& text) {
    Sql(connection_, path_).run(QStringLiteral("INSERT INTO logs (run_id, rank, stream, text, time_ms) VALUES (?, ?, COALESCE(?, ''), COALESCE(?, ''), ?)"),
                                {run, rank, stream, text, nowMs()}, "storing a log");
}

void RunStore::setMetric(qint64 run, const QString& name, double value) {
    if (!std::isfinite(value))
        throw WriteError(str(path_) + ": metric '" + str(name) + "' of run " + std::to_string(run) + " is not a finite number", false);
    Sql(connection_, path_).run(QStringLiteral("INSERT INTO metrics (run_id, name, value, time_ms) VALUES (?, COALESCE(?, ''), ?, ?)"),
                                {run, name, value, nowMs()}, "storing a metric");
}

void RunStore::saveSlurmJob(qint64 run, const SlurmRecord& r) {
    Sql(connection_, path_).run(
        QStringLiteral("INSERT INTO slurm_jobs (run_id, login_host, job_dir, slurm_job_id, script, state, reason, node_list, "
                       "exit_code, tasks, updated_ms) VALUES (?, COALESCE(?, ''), COALESCE(?, ''), COALESCE(?, ''), COALESCE(?, ''), "
                       "COALESCE(?, ''), COALESCE(?, ''), COALESCE(?, ''), COALESCE(?, ''), ?, ?) "
                       "ON CONFLICT (run_id) DO UPDATE SET login_host = excluded.login_host, job_dir = excluded.job_dir, "
                       "slurm_job_id = excluded.slurm_job_id, script = excluded.script, state = excluded.state, "
                       "reason = excluded.reason, node_list = excluded.node_list, exit_code = excluded.exit_code, "
                       "tasks = excluded.tasks, updated_ms = excluded.updated_ms"),
        {run, r.login_host, r.job_dir, r.slurm_job_id, r.script, r.state, r.reason, r.node_list, r.exit_code,
         QString::fromStdString(r.tasks.dump()), nowMs()},
        "storing a run's Slurm job");
}

std::optional<SlurmRecord> RunStore::slurmJob(qint64 run) const {
    QSqlQuery q = Sql(connection_, path_).run(
        QStringLiteral("SELECT login_host, job_dir, slurm_job_id, script, state, reason, node_list, exit_code, tasks "
                       "FROM slurm_jobs WHERE run_id = ?"),
        {run}, "reading a run's Slurm job");
    if (!q.next()) return std::nullopt;
    SlurmRecord r;
    r.login_host = q.value(0).toString();
    r.job_dir = q.value(1).toString();
    r.slurm_job_id = q.value(2).toString();
    r.script = q.value(3).toString();
    r.state = q.value(4).toString();
    r.reason = q.value(5).toString();
    r.node_list = q.value(6).toString();
    r.exit_code = q.value(7).toString();
    try {
        r.tasks = json::parse(q.value(8).toString().toStdString());
    } catch (const json::exception&) {
        r.tasks = json::array();
    }
    return r;
}

// ---- reading ----

namespace {

const QString kSummarySelect = QStringLiteral(
    "SELECT r.id, r.plan_id, r.job_id, r.workers, r.state, r.message, r.created_ms, r.started_ms, r.ended_ms, "
    "p.planner, p.json, p.predicted_metrics, m.name, c.name, r.attempt, r.checkpoint_dir, r.checkpoint_every, r.options, r.steps "
    "FROM runs r JOIN plans p ON p.id = r.plan_id "
    "LEFT JOIN models m ON m.id = p.model_id LEFT JOIN clusters c ON c.id = p.cluster_id ");

json parseStored(const QString& text, const std::string& what) {
    try {
        return json::parse(text.toStdString());
    } catch (const json::exception& e) {
        throw Error(what + " is not valid JSON: " + e.what());
    }
}

// Fills what the SELECT above gives; measured values come later.
RunSummary summaryFromRow(const QSqlQuery& q, const std::string& where) {
    RunSummary s;
    s.id = q.value(0).toLongLong();
    s.plan_id = q.value(1).toLongLong();
    s.job_id = q.value(2).toString();
    const std::string run = where + ": run " + std::to_string(s.id);
    s.workers = parseStored(q.value(3).toString(), run + " workers");
    s.state = runStateFromName(q.value(4).toString()).value_or(RunState::Lost);
    s.message = q.value(5).toString();
    s.created_ms = q.value(6).toLongLong();
    s.started_ms = q.value(7).toLongLong();  // NULL reads as 0: not yet
    s.ended_ms = q.value(8).toLongLong();
    s.planner = q.value(9).toString();
    const json plan = parseStored(q.value(10).toString(), run + " plan");
    const json predicted = parseStored(q.value(11).toString(), run + " predicted metrics");
    s.model = q.value(12).isNull() || q.value(12).toString().isEmpty()
                  ? (plan.is_object() && plan.contains("model") ? modelName(plan["model"]) : QString())
                  : q.value(12).toString();
    s.cluster = q.value(13).isNull() || q.value(13).toString().isEmpty()
                    ? (plan.is_object() && plan.contains("cluster") && plan["cluster"].is_string()
                           ? QString::fromStdString(plan["cluster"].get<std::string>())
                           : QString())
                    : q.value(13).toString();
    s.attempt = q.value(14).toInt();
    s.checkpoint_dir = q.value(15).toString();
    s.checkpoint_every = q.value(16).toInt();
    s.options = parseStored(q.value(17).toString(), run + " options");
    s.steps = q.value(18).toInt();
    s.predicted_step_s = numberAt(predicted, "iteration_time_s");
    if (!s.predicted_step_s && predicted.is_object() && predicted.contains("metrics"))
        s.predicted_step_s = numberAt(predicted["metrics"], "iteration_time_s");
    return s;
}

// The latest value of each metric, in the order the names were first set.
std::vector<std::pair<QString, double>> latestMetrics(const Sql& sql, qint64 run) {
    QSqlQuery q = sql.run(QStringLiteral("SELECT name, value FROM metrics WHERE run_id = ? ORDER BY id"), {run}, "reading metrics");
    std::vector<std::pair<QString, double>> out;
    while (q.next()) {
        const QString name = q.value(0).toString();
        const double value = q.value(1).toDouble();
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
        if (it == out.end()) out.emplace_back(name, value);
        else it->second = value;
    }
    return out;
}

void fillMeasured(const Sql& sql, RunSummary& s, const std::vector<std::pair<QString, double>>& metrics,
                  const std::string& where) {
    std::optional<double> step, samples, loss_sum;
    int losses = 0;
    QSqlQuery q = sql.run(QStringLiteral("SELECT json FROM events WHERE run_id = ? AND kind = 'done' AND attempt = ? "
                                         "ORDER BY source, seq"),
                          {s.id, s.attempt}, "reading done events");
    while (q.next()) {
        const json done = parseStored(q.value(0).toString(), where + ": a done event of run " + std::to_string(s.id));
        // The step is as slow as the slowest rank.
        if (const auto st = numberAt(done, "mean_step_s"); st && (!step || *st > *step)) {
            step = st;
            samples = numberAt(done, "samples_per_s");
        }
        if (const auto l = numberAt(done, "loss")) {
            loss_sum = loss_sum.value_or(0) + *l;
            ++losses;
        }
    }
    s.measured_step_s = step;
    s.measured_samples_per_s = samples;
    if (losses > 0) s.final_loss = *loss_sum / losses;
    for (const auto& [name, value] : metrics) {
        if (name == QLatin1String(kMetricStepS)) s.measured_step_s = value;
        else if (name == QLatin1String(kMetricSamplesPerS)) s.measured_samples_per_s = value;
        else if (name == QLatin1String(kMetricFinalLoss)) s.final_loss = value;
    }
}

}  // namespace

std::vector<RunSummary> RunStore::listRuns(const RunFilter& filter) const {
    const Sql sql(connection_, path_);
    QString where;
    QVariantList binds;
    if (filter.state) {
        where = QStringLiteral("WHERE r.state = ? ");
        binds << runStateName(*filter.state);
    }
    std::vector<RunSummary> out;
    {
        QSqlQuery q = sql.run(kSummarySelect + where + QStringLiteral("ORDER BY r.id DESC"), binds, "listing runs");
        const QString text = filter.text.trimmed();
        while (q.next() && static_cast<int>(out.size()) < filter.limit) {
            RunSummary s = summaryFromRow(q, str(path_));
            if (!text.isEmpty() && !s.model.contains(text, Qt::CaseInsensitive) &&
                !s.cluster.contains(text, Qt::CaseInsensitive) && !s.planner.contains(text, Qt::CaseInsensitive) &&
                !s.job_id.contains(text, Qt::CaseInsensitive))
                continue;
            out.push_back(std::move(s));
        }
    }
    for (RunSummary& s : out) fillMeasured(sql, s, latestMetrics(sql, s.id), str(path_));
    return out;
}

RunDetails RunStore::runDetails(qint64 run) const {
    const Sql sql(connection_, path_);
    const std::string where = str(path_) + ": run " + std::to_string(run);
    RunDetails d;
    json plan_model = nullptr;
    {
        QSqlQuery q = sql.run(kSummarySelect + QStringLiteral("WHERE r.id = ?"), {run}, "reading a run");
        if (!q.next()) throw Error(str(path_) + ": there is no run " + std::to_string(run));
        d.summary = summaryFromRow(q, str(path_));
        d.plan = parseStored(q.value(10).toString(), where + " plan");
        d.predicted_metrics = parseStored(q.value(11).toString(), where + " predicted metrics");
    }
    {
        QSqlQuery q = sql.run(QStringLiteral("SELECT m.json, c.json FROM plans p LEFT JOIN models m ON m.id = p.model_id "
                                             "LEFT JOIN clusters c ON c.id = p.cluster_id WHERE p.id = ?"),
                              {d.summary.plan_id}, "reading a run's model and cluster");
        if (q.next()) {
            d.model = q.value(0).isNull() ? json(nullptr) : parseStored(q.value(0).toString(), where + " model");
            d.cluster = q.value(1).isNull() ? json(nullptr) : parseStored(q.value(1).toString(), where + " cluster");
        }
    }
    std::vector<json> traces;
    {
        QSqlQuery q = sql.run(QStringLiteral("SELECT source, seq, kind, json, attempt FROM events WHERE run_id = ? "
                                             "ORDER BY attempt, source, seq"),
                              {run}, "reading a run's events");
        while (q.next()) {
            StoredEvent e;
            e.source = q.value(0).toInt();
            e.seq = q.value(1).toLongLong();
            e.attempt = q.value(4).toInt();
            e.event = parseStored(q.value(3).toString(), where + " event " + std::to_string(e.attempt) + "/" +
                                                             std::to_string(e.source) + "/" + std::to_string(e.seq));
            // The measured trace is the latest attempt's: its last step is the run's.
            if (q.value(2).toString() == u"trace" && e.attempt == d.summary.attempt) traces.push_back(e.event);
            d.events.push_back(std::move(e));
        }
    }
    {
        QSqlQuery q = sql.run(QStringLiteral("SELECT attempt, job_id, state, message, started_ms, ended_ms, workers FROM run_attempts "
                                             "WHERE run_id = ? ORDER BY attempt"),
                              {run}, "reading a run's attempts");
        while (q.next()) {
            RunAttempt a;
            a.attempt = q.value(0).toInt();
            a.job_id = q.value(1).toString();
            a.state = runStateFromName(q.value(2).toString()).value_or(RunState::Lost);
            a.message = q.value(3).toString();
            a.started_ms = q.value(4).toLongLong();
            a.ended_ms = q.value(5).toLongLong();
            a.workers = parseStored(q.value(6).toString(), where + " attempt " + std::to_string(a.attempt) + " workers");
            d.attempts.push_back(std::move(a));
        }
    }
    d.metrics = latestMetrics(sql, run);
    {
        QSqlQuery q = sql.run(QStringLiteral("SELECT rank, stream, text FROM logs WHERE run_id = ? ORDER BY id"), {run},
                              "reading a run's logs");
        while (q.next()) d.logs.push_back({q.value(0).toInt(), q.value(1).toString(), q.value(2).toString()});
    }
    fillMeasured(sql, d.summary, d.metrics, str(path_));
    try {
        d.measured_trace = mergeRankTraces(traces, "run " + std::to_string(run));
    } catch (const Error& e) {
        d.measured_trace = nullptr;
        d.measured_trace_error = QString::fromStdString(e.what());
    }
    d.slurm = slurmJob(run);
    return d;
}

std::optional<qint64> RunStore::runByJob(const QString& job_id) const {
    if (job_id.isEmpty()) return std::nullopt;
    const QVariant id = Sql(connection_, path_).scalar(QStringLiteral("SELECT id FROM runs WHERE job_id = ?"), {job_id},
                                                       "finding a run by job id");
    if (!id.isValid() || id.isNull()) return std::nullopt;
    return id.toLongLong();
}

int RunStore::markLostRuns(const std::function<bool(const RunSummary&)>& still_reachable) {
    std::vector<RunSummary> open_runs;
    for (RunState s : {RunState::Queued, RunState::Running}) {
        RunFilter f;
        f.state = s;
        f.limit = std::numeric_limits<int>::max();
        for (RunSummary& r : listRuns(f)) open_runs.push_back(std::move(r));
    }
    int lost = 0;
    for (const RunSummary& r : open_runs) {
        if (still_reachable && still_reachable(r)) continue;
        if (setRunState(r.id, RunState::Lost,
                        QStringLiteral("no agent of this run was reachable when the run store was opened (it was %1)")
                            .arg(runStateName(r.state))))
            ++lost;
    }
    return lost;
}

}  // namespace hippie::store
