#pragma once
// Qt SQL loads its SQLite driver as a plugin, which needs an application object: the commands that
// read the run store without an event loop make one for as long as they run.
#include <QCoreApplication>

#include <memory>

namespace hippie::cli {

// A QCoreApplication unless one exists; keep the result alive while the store is used.
inline std::unique_ptr<QCoreApplication> ensureCoreApplication() {
    static int argc = 1;
    static char name[] = "hippie-plan";
    static char* argv[] = {name, nullptr};
    if (QCoreApplication::instance()) return nullptr;
    return std::make_unique<QCoreApplication>(argc, argv);
}

}  // namespace hippie::cli
