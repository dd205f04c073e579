// The agent protocol's framing and message parser, as the agent meets them: bytes arrive in
// chunks of any size, are cut into lines (with the pre-hello limit first), parsed, and a submit's
// job is read and checked as the agent does before it runs anything.
#include <QByteArray>

#include "app/jobs/framing.h"
#include "app/jobs/job_runner.h"
#include "app/jobs/protocol.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace hippie::jobs;
    if (size == 0) return 0;
    // The first byte picks the chunk size, so the fuzzer explores lines split anywhere.
    const size_t chunk = 1 + data[0] % 64;
    hippie::jobs::LineReader reader(kMaxHelloBytes);
    bool authenticated = false;
    for (size_t at = 1; at < size; at += chunk) {
        reader.append(QByteArray(reinterpret_cast<const char*>(data + at), static_cast<qsizetype>(std::min(chunk, size - at))));
        for (;;) {
            QByteArray line;
            const LineReader::Status st = reader.next(&line);
            if (st == LineReader::Status::TooLong) return 0;
            if (st == LineReader::Status::NeedMore) break;
            hippie::fuzz::expectOnlyErrors([&] {
                const nlohmann::json m = parseMessage(line);
                const std::string type = m["type"].get<std::string>();
                if (!authenticated) {
                    authenticated = type == "hello";
                    if (authenticated) reader.setMaxBytes(kMaxMessageBytes);
                    return;
                }
                if (type == "submit" && m.contains("job")) {
                    const JobSpec spec = jobFromJson(m["job"]);
                    (void)frame(jobToJson(spec));
                    JobRunner::checkSpec(spec);
                }
            });
        }
    }
    return 0;
}
