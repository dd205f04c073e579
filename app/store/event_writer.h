#pragma once
// Writes a run's events, logs and state changes to the store from a thread of its own, with its
// own connection, in batched transactions (every flush_ms, or sooner when max_batch items wait),
// so a run that prints thousands of events never blocks the GUI thread. post*() are thread-safe
// and return at once; flush() blocks until everything posted before it is committed. What was
// committed survives the process being killed: each batch is one SQLite transaction in WAL mode.
#include <QObject>
#include <QString>

#include <memory>

#include "app/store/run_store.h"

namespace hippie::store {

class EventWriter : public QObject {
    Q_OBJECT
public:
    explicit EventWriter(const QString& db_path, int flush_ms = 50, int max_batch = 500, QObject* parent = nullptr);
    ~EventWriter() override;  // flushes and stops the thread

    void postEvent(qint64 run, const StoredEvent& event);
    void postLog(qint64 run, int rank, const QString& stream, const QString& text);
    void postState(qint64 run, RunState state, const QString& message = {});
    void postMetric(qint64 run, const QString& name, double value);
    void flush();
    qint64 committedEvents() const;

signals:
    void writeFailed(const QString& message);  // e.g. disk full; the items of that batch are kept and retried

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hippie::store
