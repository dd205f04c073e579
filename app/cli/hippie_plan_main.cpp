// hippie-plan: the planning core from a shell. Every user error ends with exit code 2 and
// one line on stderr; anything else that escapes a command is a bug, reported as such.
#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/commands.h"
#ifdef HIPPIE_WITH_DISPATCH
#include "app/cli/dispatch/cmd_calibrate.h"
#include "app/cli/dispatch/cmd_dispatch.h"
#include "app/cli/dispatch/cmd_runs.h"
#endif
#include "app/cli/format.h"
#include "planners/common/allocator.h"
#include "planners/common/error.h"

namespace {

using namespace hippie::cli;

// One line, whatever the message holds, so scripts can read it.
void printError(std::string message) {
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::cerr << "hippie-plan: " << message << '\n';
}

// CLI11 says only "A subcommand is required"; name what was given and what exists.
std::string missingCommand(const CLI::App& app, const std::vector<Command>& commands) {
    std::vector<std::string> names;
    for (const Command& c : commands) names.push_back(c.subcommand->get_name());
    const std::vector<std::string> given = app.remaining();
    const std::string known = "(use " + joined(names, ", ") + "; see --help)";
    if (given.empty()) return "no command given " + known;
    const bool option = given.front().starts_with('-');
    return std::string(option ? "unknown option '" : "unknown command '") + given.front() + "' " + known;
}

int run(int argc, char** argv) {
    CLI::App app{"Plan and simulate parallel DNN training (Hippie Studio)", "hippie-plan"};
    app.set_version_flag("--version", "hippie-plan " HIPPIE_VERSION);
    app.require_subcommand(1);
    app.footer("Exit status: 0 done, 1 internal error, 2 bad arguments or input (one line on stderr says which).\n");
    std::vector<Command> commands = {addModelsCommand(app), addClustersCommand(app), addShowGraphCommand(app),
                                     addSimulateCommand(app), addCompareCommand(app)};
#ifdef HIPPIE_WITH_DISPATCH
    commands.push_back(addDispatchCommand(app));
    commands.push_back(addRunsCommand(app));
    commands.push_back(addCalibrateCommand(app));
#endif
    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {  // --help, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        printError(app.get_subcommands().empty() ? missingCommand(app, commands) : e.what());
        return kExitUsage;
    }
    for (const Command& c : commands)
        if (c.subcommand->parsed()) return c.run();
    return kExitUsage;  // unreachable: require_subcommand(1)
}

}  // namespace

int main(int argc, char** argv) {
    hippie::keepFreedMemoryForReuse();  // planning churns through large Programs
    try {
        return run(argc, argv);
    } catch (const hippie::Error& e) {
        printError(e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        printError(std::string("internal error: ") + e.what());
        return kExitInternal;
    } catch (...) {
        printError("internal error: unknown exception");
        return kExitInternal;
    }
}
