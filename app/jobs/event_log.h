#pragma once
// EventLog: a job's events in order, seq from 1, kept as compact JSON lines in a file of the job's
// work directory (events.jsonl) with only each line's offset in memory, so a long run does not
// grow the agent (or the studio) by its event history; replays read them back. Before a file is
// opened, or after a write to it failed (disk full), lines are kept in memory instead: nothing is
// dropped either way.
#include <QFile>
#include <QString>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hippie::jobs {

class EventLog {
public:
    // Later events go to `path` (created or truncated); false (and memory from then on) when it
    // cannot be written.
    bool openFile(const QString& path);
    // The job is over: the file's descriptor is given back (an agent keeps every job it ran, and
    // would otherwise hold one descriptor per job); line() then opens the file for each read.
    void closeFile();
    QString fileName() const { return file_.fileName(); }
    bool spilling() const { return file_.isOpen() && !write_failed_; }

    qint64 append(const nlohmann::json& event);  // returns its seq
    qint64 size() const { return static_cast<qint64>(entries_.size()); }
    // The compact JSON of event `seq` (1 .. size()), without the newline; empty when it cannot be
    // read back (the file was removed under us).
    std::string line(qint64 seq) const;
    nlohmann::json at(qint64 seq) const;  // parsed; null when line() is empty
    // Bytes held in memory for the events (offsets, and lines not in the file).
    qint64 memoryBytes() const;

private:
    struct Entry {
        qint64 offset = -1;  // in the file; -1: memory_[index]
        qint64 length = 0;   // bytes of the line, or the index into memory_
    };
    mutable QFile file_;
    qint64 file_end_ = 0;
    bool write_failed_ = false;
    bool closed_ = false;  // closeFile(): lines at file offsets are read by reopening it
    std::vector<Entry> entries_;
    std::vector<std::string> memory_;
};

}  // namespace hippie::jobs
