#pragma once
// The subcommands of hippie-plan. Each add*Command registers its subcommand and options on
// the app and returns what to run when the user picked it.
#include <functional>

#include <CLI/CLI.hpp>

namespace hippie::cli {

// Exit codes: 0 done, 1 an internal error (a bug), 2 the user's input is wrong.
constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitUsage = 2;

struct Command {
    CLI::App* subcommand = nullptr;
    std::function<int()> run;  // called after parsing when `subcommand` was given
};

Command addModelsCommand(CLI::App& app);
Command addClustersCommand(CLI::App& app);
Command addShowGraphCommand(CLI::App& app);
Command addSimulateCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);

}  // namespace hippie::cli
