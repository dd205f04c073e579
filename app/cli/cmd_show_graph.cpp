// hippie-plan show-graph: a model's operator graph as a summary, its layers, JSON or DOT.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/format.h"
#include "app/cli/model_options.h"
#include "app/cli/table.h"
#include "app/cli/validators.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"

namespace hippie::cli {

namespace {

struct ShowGraphOptions {
    ModelOptions model;
    int batch_size = 1;
    std::string format = "summary";
    bool layers = false;
};

void printSummary(const Graph& g) {
    printFields(std::cout, {{"model", g.name},
                            {"batch size", std::to_string(g.batch_size)},
                            {"seq len", g.source.seq_len > 0 ? std::to_string(g.source.seq_len) : "-"},
                            {"precision", toString(g.source.precision)},
                            {"ops", std::to_string(g.ops.size())},
                            {"edges", std::to_string(g.edges.size())},
                            {"layers", std::to_string(g.layerCount())},
                            {"parameters", millions(static_cast<double>(g.paramCount())) + " M"},
                            {"forward", flops(g.totalFwdFlops())},
                            {"backward", flops(g.totalBwdFlops())},
                            {"total", flops(g.totalFwdFlops() + g.totalBwdFlops())}});
}

void printLayers(const Graph& g) {
    constexpr double kGiga = 1e9;
    Table t({{"index", Align::Right},
             {"name"},
             {"ops", Align::Right},
             {"params (M)", Align::Right},
             {"fwd GFLOPs", Align::Right},
             {"activation MiB", Align::Right}});
    const int64_t bytes_per_param = activationElementBytes(g.source.precision);  // as Graph::paramCount counts
    for (const Layer& l : g.layers())
        t.addRow({std::to_string(l.index), l.name, std::to_string(l.ops.size()),
                  millions(static_cast<double>(l.param_bytes / bytes_per_param)), fixed(l.fwd_flops / kGiga, 2),
                  mib(l.activation_bytes)});
    printHeading(std::cout, "Layers (batch size " + std::to_string(g.batch_size) + ")");
    t.print(std::cout);
}

int run(const ShowGraphOptions& opts) {
    if (opts.layers && opts.format != "summary")
        throw Error("--layers prints a table; it goes with --format summary, not --format " + opts.format);
    const Graph g = buildGraph(opts.model, opts.batch_size);
    if (opts.format == "json") {
        std::cout << graphToJson(g).dump(2) << '\n';
    } else if (opts.format == "dot") {
        std::cout << graphToDot(g);
    } else {
        printSummary(g);
        if (opts.layers) printLayers(g);
    }
    return kExitOk;
}

}  // namespace

Command addShowGraphCommand(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("show-graph", "Show a model's operator graph");
    auto opts = std::make_shared<ShowGraphOptions>();
    addModelOptions(*sub, opts->model).front()->required();
    sub->add_option("--batch-size,-b", opts->batch_size, "samples the costs are given for")
        ->check(positiveInt())
        ->capture_default_str();
    sub->add_option("--format", opts->format, "summary, json or dot")
        ->check(CLI::IsMember({"summary", "json", "dot"}))
        ->capture_default_str();
    sub->add_flag("--layers", opts->layers, "also print the layer table (index, name, ops, params, FLOPs, activations)");
    return {sub, [opts] { return run(*opts); }};
}

}  // namespace hippie::cli
