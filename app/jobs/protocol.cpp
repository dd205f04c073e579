#include "app/jobs/protocol.h"

#include <cmath>

#include "planners/common/error.h"
#include "planners/common/json_read.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/plan_json.h"

namespace hippie::jobs {

using nlohmann::json;
namespace jr = hippie::json_read;

const char* toString(JobState s) {
    switch (s) {
        case JobState::Queued: return "queued";
        case JobState::Running: return "running";
        case JobState::Succeeded: return "succeeded";
        case JobState::Failed: return "failed";
        case JobState::Cancelled: return "cancelled";
        case JobState::Lost: return "lost";
    }
    return "unknown";
}

std::optional<JobState> jobStateFromString(const std::string& s) {
    for (JobState k : {JobState::Queued, JobState::Running, JobState::Succeeded, JobState::Failed, JobState::Cancelled,
                       JobState::Lost})
        if (s == toString(k)) return k;
    return std::nullopt;
}

bool isTerminal(JobState s) {
    return s == JobState::Succeeded || s == JobState::Failed || s == JobState::Cancelled || s == JobState::Lost;
}

bool isValidJobId(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (const char c : id) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

namespace {

// A host name or an IPv4/IPv6 address: it becomes one argument of the engine's command line,
// so it may not look like an option.
bool isValidHost(const std::string& h) {
    if (h.empty() || h.size() > 253 || h.front() == '-') return false;
    for (const char c : h) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                        c == ':' || c == '_';
        if (!ok) return false;
    }
    return true;
}

bool optionalBool(const json& j, std::string_view key, const std::string& where, bool fallback) {
    const auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_boolean()) jr::failField(where, key, "must be true or false (got " + jr::describe(*it) + ")");
    return it->get<bool>();
}

}  // namespace

json jobToJson(const JobSpec& j) {
    json out = {{"id", j.id},
                {"plan", j.plan},
                {"steps", j.steps},
                {"seed", j.seed},
                {"world_size", j.world_size},
                {"first_rank", j.first_rank},
                {"rank_count", j.rank_count},
                {"master_addr", j.master_addr},
                {"master_port", j.master_port},
                {"lr", j.lr},
                {"op_timeout_s", j.op_timeout_s},
                {"trace_every_step", j.trace_every_step}};
    if (!j.dump_params.empty()) out["dump_params"] = j.dump_params;
    if (!j.graph.is_null()) out["graph"] = j.graph;
    if (j.checkpoint_every > 0) out["checkpoint_every"] = j.checkpoint_every;
    if (!j.checkpoint_key.empty()) out["checkpoint_key"] = j.checkpoint_key;
    if (j.resume) out["resume"] = true;
    if (!j.data_file.empty()) out["data_file"] = j.data_file;
    if (!j.token_dtype.empty()) out["token_dtype"] = j.token_dtype;
    return out;
}

JobSpec jobFromJson(const json& j) {
    const std::string where = "job";
    if (!j.is_object()) jr::fail(where, "must be a JSON object (got " + jr::describe(j) + ")");
    JobSpec s;
    s.id = jr::requireString(j, "id", where);
    if (!isValidJobId(s.id))
        jr::failField(where, "id", "must be 1 to 64 letters, digits, '_' or '-' (got " + jr::describe(j.at("id")) + ")");
    const std::string job_where = "job '" + s.id + "'";
    jr::requireKnownFields(j, {"id", "plan", "steps", "seed", "world_size", "first_rank", "rank_count", "master_addr", "master_port",
                               "lr", "op_timeout_s", "trace_every_step", "dump_params", "graph", "checkpoint_every",
                               "checkpoint_key", "resume", "data_file", "token_dtype"},
                           job_where);
    // Kept as read back (the reader refuses unknown fields), so the job never holds more than a
    // plan says, whatever the message carried.
    s.plan = planToJson(planFromJson(jr::requireObject(j, "plan", job_where), job_where + ": plan"));
    if (const auto v = jr::optionalInt(j, "steps", job_where, jr::Bound::Positive)) s.steps = *v;
    if (const auto it = j.find("seed"); it != j.end()) {
        if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<long long>() >= 0))
            jr::failField(job_where, "seed", "must be a non-negative integer (got " + jr::describe(*it) + ")");
        s.seed = it->get<unsigned long long>();
    }
    if (const auto v = jr::optionalInt(j, "world_size", job_where, jr::Bound::Positive)) s.world_size = *v;
    if (const auto v = jr::optionalInt(j, "first_rank", job_where, jr::Bound::NonNegative)) s.first_rank = *v;
    if (const auto v = jr::optionalInt(j, "rank_count", job_where, jr::Bound::Positive)) s.rank_count = *v;
    if (s.first_rank >= s.world_size)
        jr::failField(job_where, "first_rank",
                      "must be below world_size " + std::to_string(s.world_size) + " (got " + std::to_string(s.first_rank) + ")");
    if (static_cast<long long>(s.first_rank) + s.rank_count > s.world_size)
        jr::failField(job_where, "rank_count",
                      "goes past the last rank: ranks " + std::to_string(s.first_rank) + ".." +
                          std::to_string(static_cast<long long>(s.first_rank) + s.rank_count - 1) + " of world_size " +
                          std::to_string(s.world_size));
    if (const auto v = jr::optionalString(j, "master_addr", job_where)) {
        if (!isValidHost(*v))
            jr::failField(job_where, "master_addr", "must be a host name or an IP address (got " + jr::describe(j.at("master_addr")) + ")");
        s.master_addr = *v;
    }
    if (const auto v = jr::optionalInt(j, "master_port", job_where, jr::Bound::NonNegative)) {
        if (*v > 65535) jr::failField(job_where, "master_port", "must be a TCP port 0..65535 (got " + std::to_string(*v) + ")");
        s.master_port = *v;
    }
    if (const auto v = jr::optionalNumber(j, "lr", job_where, jr::Bound::NonNegative)) s.lr = *v;
    if (const auto v = jr::optionalNumber(j, "op_timeout_s", job_where, jr::Bound::NonNegative)) s.op_timeout_s = *v;
    s.trace_every_step = optionalBool(j, "trace_every_step", job_where, false);
    if (const auto v = jr::optionalString(j, "dump_params", job_where)) {
        if (v->find('\0') != std::string::npos) jr::failField(job_where, "dump_params", "must not contain a NUL character");
        s.dump_params = *v;
    }
    if (const auto it = j.find("graph"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) jr::failField(job_where, "graph", "must be a Graph JSON object (got " + jr::describe(*it) + ")");
        s.graph = graphToJson(graphFromJson(*it, job_where + ": graph"));
    }
    if (const auto v = jr::optionalInt(j, "checkpoint_every", job_where, jr::Bound::NonNegative)) s.checkpoint_every = *v;
    if (const auto v = jr::optionalString(j, "checkpoint_key", job_where)) {
        if (!isValidJobId(*v))
            jr::failField(job_where, "checkpoint_key", "must be 1 to 64 letters, digits, '_' or '-' (got " + jr::describe(j.at("checkpoint_key")) + ")");
        s.checkpoint_key = *v;
    }
    s.resume = optionalBool(j, "resume", job_where, false);
    if ((s.checkpoint_every > 0 || s.resume) && s.checkpoint_key.empty())
        jr::failField(job_where, "checkpoint_key", "is needed with " + std::string(s.resume ? "resume" : "checkpoint_every") +
                                                       ": it names the checkpoints on the agent");
    if (const auto v = jr::optionalString(j, "data_file", job_where)) {
        if (v->empty() || v->find('\0') != std::string::npos)
            jr::failField(job_where, "data_file",
                          "must be a file path without NUL characters (got " + jr::describe(j.at("data_file")) + ")");
        s.data_file = *v;
    }
    if (const auto v = jr::optionalString(j, "token_dtype", job_where)) {
        if (*v != "uint16" && *v != "uint32")
            jr::failField(job_where, "token_dtype", "must be uint16 or uint32 (got " + jr::describe(j.at("token_dtype")) + ")");
        s.token_dtype = *v;
    }
    return s;
}

}  // namespace hippie::jobs
