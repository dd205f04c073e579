#include "app/store/event_writer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

namespace hippie::store {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxRetryDelayMs = 2000;     // a failing disk is retried at least this often
constexpr int kGiveUpOnStopMs = 5000;      // when stopping, transient failures are retried this long

struct EventItem {
    StoredEvent event;
};
struct LogItem {
    int rank;
    QString stream, text;
};
struct StateItem {
    RunState state;
    QString message;
};
struct MetricItem {
    QString name;
    double value;
};

struct Item {
    quint64 serial = 0;  // items are numbered as posted and committed in that order
    qint64 run = 0;
    std::variant<EventItem, LogItem, StateItem, MetricItem> what;
};

}  // namespace

struct EventWriter::Impl {
    EventWriter* owner = nullptr;
    QString path;
    int flush_ms = 50;
    size_t max_batch = 500;

    std::mutex mutex;
    std::condition_variable wake_writer;
    std::condition_variable wake_flushers;
    std::deque<Item> queue;
    Clock::time_point oldest_pending;  // when the first item of the current batch was posted
    quint64 posted = 0;                // serial of the last item posted
    quint64 done = 0;                  // serial up to which every item is committed (or dropped, reported)
    int flush_waiters = 0;
    bool stopping = false;
    bool exited = false;
    std::atomic<qint64> committed_events{0};
    std::promise<void> opened;  // the thread's open: done, or why it failed
    std::thread thread;

    void post(qint64 run, decltype(Item::what) what) {
        {
            std::lock_guard lock(mutex);
            if (queue.empty()) oldest_pending = Clock::now();
            queue.push_back({++posted, run, std::move(what)});
        }
        wake_writer.notify_one();
    }

    void run();
    void writeOne(RunStore& store, const std::vector<Item>& batch, size_t& i);
    void write(RunStore& store, const std::vector<Item>& batch);
    void finished(const std::vector<Item>& items, size_t count, qint64 events);
};

// Writes batch[i] and the events for the same run that follow it (one appendEvents call); moves i on.
void EventWriter::Impl::writeOne(RunStore& store, const std::vector<Item>& batch, size_t& i) {
    const Item& item = batch[i];
    if (std::holds_alternative<EventItem>(item.what)) {
        std::vector<StoredEvent> events;
        while (i < batch.size() && batch[i].run == item.run && std::holds_alternative<EventItem>(batch[i].what))
            events.push_back(std::get<EventItem>(batch[i++].what).event);
        store.appendEvents(item.run, events);
        return;
    }
    if (const auto* log = std::get_if<LogItem>(&item.what)) store.appendLog(item.run, log->rank, log->stream, log->text);
    else if (const auto* st = std::get_if<StateItem>(&item.what)) store.setRunState(item.run, st->state, st->message);
    else if (const auto* m = std::get_if<MetricItem>(&item.what)) store.setMetric(item.run, m->name, m->value);
    ++i;
}

void EventWriter::Impl::write(RunStore& store, const std::vector<Item>& batch) {
    store.inTransaction([&] {
        for (size_t i = 0; i < batch.size();) writeOne(store, batch, i);
    });
}

// `count` leading items of `items` are committed (`events` of them events) or dropped: flush() may
// return for them.
void EventWriter::Impl::finished(const std::vector<Item>& items, size_t count, qint64 events) {
    if (count == 0) return;
    committed_events += events;
    {
        std::lock_guard lock(mutex);
        done = items[count - 1].serial;
    }
    wake_flushers.notify_all();
}

void EventWriter::Impl::run() {
    std::unique_ptr<RunStore> store;
    try {
        store = std::make_unique<RunStore>(path);
        opened.set_value();
    } catch (...) {
        opened.set_exception(std::current_exception());
        std::lock_guard lock(mutex);
        exited = true;
        return;
    }

    int retry_delay_ms = std::max(flush_ms, 10);
    bool failing_on_stop = false;           // a transient failure goes on while stopping ...
    Clock::time_point failing_since;        // ... since then
    for (;;) {
        std::vector<Item> batch;
        {
            std::unique_lock lock(mutex);
            for (;;) {
                if (queue.empty()) {
                    if (stopping) break;
                    wake_writer.wait(lock);
                    continue;
                }
                if (stopping || flush_waiters > 0 || queue.size() >= max_batch) break;
                const auto due = oldest_pending + std::chrono::milliseconds(flush_ms);
                if (Clock::now() >= due) break;
                wake_writer.wait_until(lock, due);
            }
            if (queue.empty()) break;  // stopping and nothing left
            const size_t n = std::min(queue.size(), max_batch);
            batch.assign(std::make_move_iterator(queue.begin()), std::make_move_iterator(queue.begin() + static_cast<std::ptrdiff_t>(n)));
            queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
            oldest_pending = Clock::now();
        }

        // Committed items leave `batch`; what is left after a transient failure goes back in front.
        size_t written = 0;
        qint64 events = 0;
        auto eventsIn = [&](size_t from, size_t to) {
            qint64 n = 0;
            for (size_t k = from; k < to; ++k) n += std::holds_alternative<EventItem>(batch[k].what) ? 1 : 0;
            return n;
        };
        QString failure;
        try {
            write(*store, batch);
            written = batch.size();
            events = eventsIn(0, written);
        } catch (const WriteError& e) {
            if (e.transient()) {
                failure = QString::fromStdString(e.what());
            } else {
                // One bad item (an unknown run, a non-finite metric) must not hold up the rest:
                // write them one by one and drop only those SQLite refuses for what they are.
                for (size_t i = 0; i < batch.size();) {
                    const size_t from = i;
                    try {
                        store->inTransaction([&] { writeOne(*store, batch, i); });
                        events += eventsIn(from, i);
                    } catch (const WriteError& one) {
                        if (one.transient()) {
                            failure = QString::fromStdString(one.what());
                            i = from;
                            break;
                        }
                        i = from + 1;
                        emit owner->writeFailed(QString::fromStdString(one.what()) +
                                                QStringLiteral(" (this item was dropped; the others are stored)"));
                    } catch (const std::exception& other) {
                        i = from + 1;
                        emit owner->writeFailed(QString::fromStdString(other.what()) + QStringLiteral(" (this item was dropped)"));
                    }
                    written = i;
                }
            }
        } catch (const std::exception& e) {
            failure = QString::fromStdString(e.what());
        }
        finished(batch, written, events);
        if (failure.isEmpty()) {
            retry_delay_ms = std::max(flush_ms, 10);
            failing_on_stop = false;
            continue;
        }

        // Transient: keep what is left, in order, and try again later.
        std::unique_lock lock(mutex);
        if (stopping && !failing_on_stop) {
            failing_on_stop = true;
            failing_since = Clock::now();
        }
        const bool give_up = stopping && Clock::now() - failing_since > std::chrono::milliseconds(kGiveUpOnStopMs);
        if (give_up) {
            const size_t left = batch.size() - written + queue.size();
            const quint64 last = queue.empty() ? batch.back().serial : queue.back().serial;
            queue.clear();
            done = last;
            lock.unlock();
            wake_flushers.notify_all();
            emit owner->writeFailed(failure + QStringLiteral(" (stopping: %1 items were not stored)").arg(left));
            break;
        }
        queue.insert(queue.begin(), std::make_move_iterator(batch.begin() + static_cast<std::ptrdiff_t>(written)),
                     std::make_move_iterator(batch.end()));
        lock.unlock();
        emit owner->writeFailed(failure + QStringLiteral(" (kept; retrying in %1 ms)").arg(retry_delay_ms));
        lock.lock();
        wake_writer.wait_for(lock, std::chrono::milliseconds(retry_delay_ms), [&] { return stopping && !failing_on_stop; });
        retry_delay_ms = std::min(retry_delay_ms * 2, kMaxRetryDelayMs);
    }
    store.reset();
    {
        std::lock_guard lock(mutex);
        exited = true;
    }
    wake_flushers.notify_all();
}

EventWriter::EventWriter(const QString& db_path, int flush_ms, int max_batch, QObject* parent)
    : QObject(parent), impl_(std::make_unique<Impl>()) {
    impl_->owner = this;
    impl_->path = db_path;
    impl_->flush_ms = std::max(flush_ms, 0);
    impl_->max_batch = static_cast<size_t>(std::max(max_batch, 1));
    // The thread opens its own connection; a database that cannot be opened throws here.
    std::future<void> result = impl_->opened.get_future();
    impl_->thread = std::thread([this] { impl_->run(); });
    try {
        result.get();
    } catch (...) {
        impl_->thread.join();
        throw;
    }
}

EventWriter::~EventWriter() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake_writer.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

void EventWriter::postEvent(qint64 run, const StoredEvent& event) { impl_->post(run, EventItem{event}); }

void EventWriter::postLog(qint64 run, int rank, const QString& stream, const QString& text) {
    impl_->post(run, LogItem{rank, stream, text});
}

void EventWriter::postState(qint64 run, RunState state, const QString& message) {
    impl_->post(run, StateItem{state, message});
}

void EventWriter::postMetric(qint64 run, const QString& name, double value) { impl_->post(run, MetricItem{name, value}); }

void EventWriter::flush() {
    std::unique_lock lock(impl_->mutex);
    const quint64 target = impl_->posted;
    if (impl_->done >= target || impl_->exited) return;
    ++impl_->flush_waiters;
    impl_->wake_writer.notify_all();
    impl_->wake_flushers.wait(lock, [&] { return impl_->done >= target || impl_->exited; });
    --impl_->flush_waiters;
}

qint64 EventWriter::committedEvents() const { return impl_->committed_events.load(); }

}  // namespace hippie::store
