#include "app/cli/model_options.h"

#include "app/cli/validators.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"

namespace hippie::cli {

std::vector<CLI::Option*> addModelOptions(CLI::App& app, ModelOptions& opts) {
    return {
        app.add_option("--model,-m", opts.model, "zoo model name (see 'hippie-plan models') or graph JSON file"),
        app.add_option("--seq-len", opts.seq_len, "sequence length for sequence models (default: the model's)")
            ->check(nonNegativeInt()),
        app.add_option("--precision", opts.precision, "fp32, fp16 or bf16 (fp16/bf16: mixed precision)")
            ->capture_default_str(),
    };
}

Graph buildGraph(const ModelOptions& opts, int batch_size) {
    return loadModel(opts.model, batch_size, opts.seq_len, precisionFromString(opts.precision));
}

Graph buildGraph(const ModelSpec& spec) {
    if (!spec.zoo.empty()) return buildZooModel(spec);
    return loadModel(spec.file, spec.batch_size, spec.seq_len, spec.precision);
}

}  // namespace hippie::cli
