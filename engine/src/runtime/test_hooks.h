#pragma once
// Faults the engine tests inject through the environment, each named by a variable whose value
// "RANK:STEP" picks one rank's step (HIPPIE_ENGINE_TEST_KILL, HIPPIE_ENGINE_TEST_OVERFLOW).
#include <cstdio>
#include <cstdlib>

namespace hippie::engine {

// Whether `variable` is set to "RANK:STEP" for this rank and step.
inline bool testHookAt(const char* variable, int rank, int step) {
    const char* v = std::getenv(variable);
    int r = -1, s = -1;
    return v && std::sscanf(v, "%d:%d", &r, &s) == 2 && r == rank && s == step;
}

}  // namespace hippie::engine
