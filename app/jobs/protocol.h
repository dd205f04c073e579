#pragma once
// The studio <-> hippie-agent protocol, version 1.
//
// Transport: TCP, or TLS when the agent has a certificate (the client pins the certificate's
// SHA-256 fingerprint instead of trusting a CA). A frame is one JSON object on one line (UTF-8,
// ended by '\n'); a line longer than kMaxMessageBytes is refused with an "error" message and
// the connection is closed. Every message has a "type". Unknown types, fields a request does not
// define (below; in a job, those of JobSpec; in its plan and graph, those of their schemas) and
// missing or mistyped fields are answered with {"type":"error","message":...} (a submit with
// "rejected") naming the field; the connection stays.
//
// client -> agent
//   hello    {"token", "client", "protocol"}       must be first; answered "welcome" or "refused"
//                                                   (then closed). Tokens compare in constant time.
//   submit   {"job": JobSpec}                      -> "accepted" {"job","master_port"} | "rejected" {"job","message"}
//   attach   {"job", "after_seq"}                  replays the job's events with seq > after_seq, then live
//   cancel   {"job"}                               -> the job ends "cancelled" (a job-state event)
//   status   {"job"?}                              -> "status" {"jobs":[{"id","state","last_seq","message"}]}
//   probe    {}                                    -> "devices" {"cluster": Cluster JSON from `hippie-engine probe`}
//                                                     | "error" {"message"} when the probe fails
//   ping     {}                                    -> "pong"
// agent -> client
//   welcome   {"agent": host name, "protocol", "engine": path or null, "jobs": [status...], "heartbeat_ms"}
//   refused   {"message"}
//   event     {"job", "seq", "event": {...}}       seq counts from 1 per job on this agent, no gaps.
//             "event" is an engine JSON line (it names its "rank") or one of the agent's own:
//               {"event":"job-state","state":"running|succeeded|failed|cancelled","message"}
//                 ("running" also lists "ranks": [{"rank","pid"}] and the agent's "work_dir")
//               {"event":"log","rank","stream":"stderr","text"}   (a rank's stderr, in chunks)
//   heartbeat {"time_ms", "jobs": [{"id","state","last_seq"}]}   every heartbeat_ms
//   accepted, rejected, status, devices, pong, error   as above
//
// A job outlives the connection that submitted it: a client that reconnects sends "attach" with
// the last seq it holds and loses or doubles nothing. An agent writes events to a client only
// while its socket has room (about 1 MiB waiting); a slow client gets the rest as it reads. A
// client that misses kMissedHeartbeats heartbeats in a row considers the agent lost.
#include <QMetaType>
#include <QString>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hippie::jobs {

inline constexpr int kProtocolVersion = 1;
inline constexpr qint64 kMaxMessageBytes = 16 * 1024 * 1024;  // a plan or a trace fits; a flood does not
// Before authentication only a hello may arrive: a token and a client name fit in a few KiB, so an
// unauthenticated peer cannot make the agent buffer more than this.
inline constexpr qint64 kMaxHelloBytes = 4 * 1024;
inline constexpr quint16 kDefaultAgentPort = 7469;
inline constexpr int kDefaultHeartbeatMs = 1000;
inline constexpr int kMissedHeartbeats = 5;

// queued and lost are the store's: an agent never reports them.
enum class JobState { Queued, Running, Succeeded, Failed, Cancelled, Lost };
const char* toString(JobState s);
std::optional<JobState> jobStateFromString(const std::string& s);
bool isTerminal(JobState s);  // succeeded, failed, cancelled, lost

// What an agent is asked to run: its share of the ranks of one plan.
struct JobSpec {
    std::string id;              // [A-Za-z0-9_-]{1,64}, chosen by the client; also the work sub-directory
    nlohmann::json plan;         // Plan JSON (planners/schedule/plan_json.h); checked before anything starts
    int steps = 5;
    unsigned long long seed = 0;
    int world_size = 1;          // ranks of the whole job (= the plan's pp x dp)
    int first_rank = 0;          // this agent starts ranks first_rank .. first_rank + rank_count - 1
    int rank_count = 1;
    std::string master_addr = "127.0.0.1";
    int master_port = 0;         // 0: the agent hosting rank 0 picks a free port and answers it in "accepted"
    double lr = 0;               // 0: the engine's default
    double op_timeout_s = 0;     // 0: the engine's default
    bool trace_every_step = false;
    std::string dump_params;     // optional: file name for each rank's final parameters ("{rank}" allowed);
                                 // relative to the job's work directory, refused if it leaves it
    nlohmann::json graph;        // optional Graph JSON, for plans whose model is a file ("model.file"):
                                 // written to the work directory as model-graph.json, which the plan then names
    // Checkpoints. The client names no directory on the agent's host: the agent keeps them under
    // <work>/checkpoints/<checkpoint_key>/, so that a later job (a resumed attempt, a new id)
    // finds the ranks' checkpoints by the key its first attempt was given.
    int checkpoint_every = 0;    // > 0: each rank writes a checkpoint every N steps and after the last
    std::string checkpoint_key;  // job-id characters; required with checkpoint_every or resume
    bool resume = false;         // start from the newest checkpoint every rank of this agent has under the key
    // Training data (hippie-engine run --data): a path on the agent's host; empty: synthetic.
    std::string data_file;
    std::string token_dtype;     // token-id files (*.bin): uint16 or uint32; empty: the engine's default
};

// Field-by-field reading; throws hippie::Error naming the field that is missing or wrong.
nlohmann::json jobToJson(const JobSpec& j);
JobSpec jobFromJson(const nlohmann::json& j);
bool isValidJobId(const std::string& id);

}  // namespace hippie::jobs

Q_DECLARE_METATYPE(nlohmann::json)
Q_DECLARE_METATYPE(hippie::jobs::JobState)
