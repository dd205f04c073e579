#pragma once
// hippie-plan dispatch: runs a plan file on local and remote workers (app/dispatch/run_controller.h),
// prints the events as JSON lines (or one progress line per step) and records the run in the run
// store. Built only with Qt (HIPPIE_WITH_DISPATCH).
#include "app/cli/commands.h"

namespace hippie::cli {

// Exit status of a run that was started but did not succeed (failed, cancelled, lost).
constexpr int kExitRunFailed = 3;

Command addDispatchCommand(CLI::App& app);

}  // namespace hippie::cli
