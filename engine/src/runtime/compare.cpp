// Parameter dumps compared against a reference run (no LibTorch needed).
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/src/runtime/compare.h"

namespace hippie::engine {

using nlohmann::json;

namespace {

bool readDump(const std::string& path, json& out, std::string& error) {
    std::ifstream f(path);
    if (!f) {
        error = "cannot read parameter dump '" + path + "'";
        return false;
    }
    try {
        out = json::parse(f);
    } catch (const std::exception& e) {
        error = "'" + path + "' is not JSON: " + e.what();
        return false;
    }
    if (!out.contains("params") || !out["params"].is_object()) {
        error = "'" + path + "' has no 'params' object (write it with run --dump-params)";
        return false;
    }
    return true;
}

}  // namespace

int compareParams(const std::string& reference, const std::vector<std::string>& files, double tolerance,
                  const std::vector<std::string>& loose) {
    json ref;
    std::string error;
    auto bad = [](const std::string& message) {
        std::cout << json{{"event", "error"}, {"message", message}}.dump() << std::endl;
        return 2;
    };
    if (!readDump(reference, ref, error)) return bad(error);
    std::vector<std::pair<std::string, double>> looser;
    for (const std::string& l : loose) {
        const size_t eq = l.find('=');
        try {
            if (eq == std::string::npos || eq == 0) throw std::invalid_argument(l);
            looser.emplace_back(l.substr(0, eq), std::stod(l.substr(eq + 1)));
        } catch (const std::exception&) {
            return bad("--loose '" + l + "': expected NAME=TOLERANCE");
        }
    }
    auto looseFor = [&](const std::string& name) -> const std::pair<std::string, double>* {
        for (const auto& entry : looser)
            if (name.find(entry.first) != std::string::npos) return &entry;
        return nullptr;
    };
    double max_diff = 0, max_loose_diff = 0;
    bool loose_ok = true;
    std::string worst;
    std::set<std::string> covered;
    std::vector<std::string> problems, notes;
    // LibTorch splits a CPU reduction (a convolution's, a matmul's) by thread count, so runs on
    // different threads differ in the last bits, which BatchNorm models amplify step by step.
    const json ref_threads = ref.value("threads", json(nullptr));
    for (const std::string& path : files) {
        json d;
        if (!readDump(path, d, error)) return bad(error);
        const json threads = d.value("threads", json(nullptr));
        if (!ref_threads.is_null() && !threads.is_null() && threads != ref_threads)
            notes.push_back(path + " ran with --threads " + threads.dump() + ", the reference '" + reference + "' with " +
                            ref_threads.dump() + ": LibTorch rounds reductions differently by thread count; give every run the "
                            "same --threads for a tight comparison");
        for (const auto& [name, values] : d["params"].items()) {
            if (!ref["params"].contains(name)) {
                problems.push_back(path + ": parameter '" + name + "' is not in the reference");
                continue;
            }
            const json& r = ref["params"][name];
            if (r.size() != values.size()) {
                problems.push_back(path + ": parameter '" + name + "' has " + std::to_string(values.size()) + " values, the reference " +
                                   std::to_string(r.size()));
                continue;
            }
            covered.insert(name);
            const auto* lax = looseFor(name);
            for (size_t i = 0; i < r.size(); ++i) {
                const double diff = std::fabs(values[i].get<double>() - r[i].get<double>());
                if (lax) {
                    max_loose_diff = std::max(max_loose_diff, diff);
                    loose_ok = loose_ok && diff <= lax->second;
                    continue;
                }
                if (diff > max_diff) {
                    max_diff = diff;
                    worst = name + "[" + std::to_string(i) + "]";
                }
            }
        }
    }
    for (const auto& [name, values] : ref["params"].items())
        if (!covered.count(name)) problems.push_back("reference parameter '" + name + "' is in none of the dumps");
    for (const auto& [name, tol] : looser)
        notes.push_back("parameters named *" + name + "* compared within " + json(tol).dump() + " (largest difference " +
                        json(max_loose_diff).dump() + ")");
    const bool ok = problems.empty() && max_diff <= tolerance && loose_ok;
    std::cout << json{{"event", "compare"}, {"ok", ok},          {"max_abs_diff", max_diff}, {"worst", worst},
                      {"tolerance", tolerance}, {"parameters", covered.size()}, {"problems", problems}, {"notes", notes}}
                     .dump()
              << std::endl;
    return ok ? 0 : 1;
}

}  // namespace hippie::engine
