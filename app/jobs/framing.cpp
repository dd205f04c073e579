#include "app/jobs/framing.h"

#include "planners/common/error.h"
#include "planners/common/json_read.h"

namespace hippie::jobs {

using nlohmann::json;

QByteArray frame(const json& message) {
    // Invalid UTF-8 from an engine's output is replaced instead of throwing.
    QByteArray out = QByteArray::fromStdString(message.dump(-1, ' ', false, json::error_handler_t::replace));
    out.append('\n');
    return out;
}

LineReader::Status LineReader::next(QByteArray* line) {
    if (too_long_) return Status::TooLong;
    const qsizetype nl = buffer_.indexOf('\n', scanned_);
    if (nl < 0) {
        scanned_ = buffer_.size();
        if (buffer_.size() > max_bytes_) {
            too_long_ = true;
            buffer_.clear();
            return Status::TooLong;
        }
        return Status::NeedMore;
    }
    if (nl > max_bytes_) {
        too_long_ = true;
        buffer_.clear();
        return Status::TooLong;
    }
    qsizetype end = nl;
    if (end > 0 && buffer_.at(end - 1) == '\r') --end;
    *line = buffer_.left(end);
    buffer_.remove(0, nl + 1);
    scanned_ = 0;
    return Status::Line;
}

json parseMessage(const QByteArray& line) {
    // Depth-limited, and every parser exception (1e400 is out_of_range, not parse_error) becomes Error.
    const json j = json_read::parseJson(std::string_view(line.constData(), static_cast<size_t>(line.size())), "malformed JSON message");
    if (!j.is_object()) throw Error("a message must be a JSON object (got " + json_read::describe(j) + ")");
    const auto it = j.find("type");
    if (it == j.end()) throw Error("the message has no field 'type'");
    if (!it->is_string()) throw Error("field 'type' must be a string (got " + json_read::describe(*it) + ")");
    return j;
}

}  // namespace hippie::jobs
