#pragma once
// Two stored runs side by side (History ▸ Compare two): the summary under readable names, then
// every other metric either run stored, each once, and the workers as "host:port ranks 0–3".
// Plain functions, tested without a window.
#include <QString>

#include <vector>

#include <nlohmann/json.hpp>

#include "app/dispatch/stored_run.h"

namespace hippie::studio {

struct ComparedRow {
    QString name;
    QString first, second;  // "–" where a run has no value
};

std::vector<ComparedRow> compareRuns(const dispatch::StoredRun& a, const dispatch::StoredRun& b);

// "gpu1:7469 ranks 0–3, this machine ranks 4–7" from the stored
// [{"host","port","first_rank","rank_count"}]; anything else as its JSON text.
QString workersText(const nlohmann::json& workers);

}  // namespace hippie::studio
