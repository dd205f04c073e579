#pragma once
// Framing of the agent protocol (protocol.h): one compact JSON object per line. LineReader cuts
// a byte stream into lines and refuses a line longer than its limit, even before its '\n'
// arrives, so a peer cannot make us buffer without bound.
#include <QByteArray>

#include <nlohmann/json.hpp>

#include "app/jobs/protocol.h"

namespace hippie::jobs {

QByteArray frame(const nlohmann::json& message);  // compact JSON and '\n'

class LineReader {
public:
    enum class Status { Line, NeedMore, TooLong };

    explicit LineReader(qint64 max_bytes = kMaxMessageBytes) : max_bytes_(max_bytes) {}
    void append(const QByteArray& data) { buffer_.append(data); }
    // Line: *line holds the next line without its '\n' ('\r' before it is dropped too).
    // TooLong: the next line exceeds max_bytes; the reader keeps answering TooLong.
    Status next(QByteArray* line);
    qint64 maxBytes() const { return max_bytes_; }
    void setMaxBytes(qint64 max_bytes) { max_bytes_ = max_bytes; }  // e.g. raised once a peer authenticated
    qint64 buffered() const { return buffer_.size(); }

private:
    QByteArray buffer_;
    qsizetype scanned_ = 0;  // bytes of buffer_ known to hold no '\n'
    qint64 max_bytes_;
    bool too_long_ = false;
};

// One line as a protocol message: a JSON object with a string "type". Throws hippie::Error
// ("malformed JSON ...", "the message has no \"type\"").
nlohmann::json parseMessage(const QByteArray& line);

}  // namespace hippie::jobs
