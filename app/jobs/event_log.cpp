#include "app/jobs/event_log.h"

namespace hippie::jobs {

bool EventLog::openFile(const QString& path) {
    if (file_.isOpen()) file_.close();
    file_.setFileName(path);
    file_end_ = 0;
    closed_ = false;
    // Unbuffered: each line is flushed at once anyway, and QFile's buffers would cost every job
    // tens of KiB for as long as the agent keeps it.
    write_failed_ = !file_.open(QIODevice::ReadWrite | QIODevice::Truncate | QIODevice::Unbuffered);
    return !write_failed_;
}

qint64 EventLog::append(const nlohmann::json& event) {
    std::string text = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (file_.isOpen() && !write_failed_) {
        const QByteArray bytes = QByteArray::fromStdString(text) + '\n';
        // Reads seek elsewhere: every write goes to the end.
        if (file_.seek(file_end_) && file_.write(bytes) == bytes.size() && file_.flush()) {
            entries_.push_back({file_end_, static_cast<qint64>(text.size())});
            file_end_ += bytes.size();
            return size();
        }
        write_failed_ = true;  // disk full: the rest stays in memory; what is in the file can still be read
    }
    memory_.push_back(std::move(text));
    entries_.push_back({-1, static_cast<qint64>(memory_.size() - 1)});
    return size();
}

void EventLog::closeFile() {
    if (!file_.isOpen()) return;
    file_.close();
    closed_ = true;
}

std::string EventLog::line(qint64 seq) const {
    if (seq < 1 || seq > size()) return {};
    const Entry& e = entries_[static_cast<size_t>(seq - 1)];
    if (e.offset < 0) return memory_[static_cast<size_t>(e.length)];
    if (closed_) {
        QFile f(file_.fileName());
        if (!f.open(QIODevice::ReadOnly | QIODevice::Unbuffered) || !f.seek(e.offset)) return {};
        const QByteArray bytes = f.read(e.length);
        return bytes.size() == e.length ? bytes.toStdString() : std::string();
    }
    if (!file_.isOpen() || !file_.seek(e.offset)) return {};
    const QByteArray bytes = file_.read(e.length);
    return bytes.size() == e.length ? bytes.toStdString() : std::string();
}

nlohmann::json EventLog::at(qint64 seq) const {
    const std::string text = line(seq);
    if (text.empty()) return nullptr;
    return nlohmann::json::parse(text, nullptr, false);
}

qint64 EventLog::memoryBytes() const {
    qint64 bytes = static_cast<qint64>(entries_.capacity() * sizeof(Entry));
    for (const std::string& s : memory_) bytes += static_cast<qint64>(s.capacity() + sizeof(std::string));
    return bytes;
}

}  // namespace hippie::jobs
