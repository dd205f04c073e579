#pragma once
// hippie-plan runs: the run history kept in the run store (app/store/run_store.h), as a table or
// JSON, or one run in detail. Built only with Qt (HIPPIE_WITH_DISPATCH).
#include "app/cli/commands.h"

namespace hippie::cli {

Command addRunsCommand(CLI::App& app);

}  // namespace hippie::cli
