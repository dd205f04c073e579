#pragma once
// hippie-plan calibrate: fits a stored run's cluster to its measured trace (the studio's "Fit cost
// model", planners/cost/calibration.h), prints the factors and the errors before and after, checks
// the calibrated cluster on other stored runs, and writes it as a cluster file. Built only with Qt
// (HIPPIE_WITH_DISPATCH).
#include "app/cli/commands.h"

namespace hippie::cli {

// Exit status when the fit is computed but not kept (it predicts the run's step worse).
constexpr int kExitFitNotKept = 3;

Command addCalibrateCommand(CLI::App& app);

}  // namespace hippie::cli
