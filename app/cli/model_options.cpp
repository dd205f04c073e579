#include "app/cli/model_options.h"

#include "app/cli/validators.h"
#include "planners/common/error.h"
#include "planners/model/overrides.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"

namespace hippie::cli {

std::vector<CLI::Option*> addModelOptions(CLI::App& app, ModelOptions& opts) {
    return {
        app.add_option("--model,-m", opts.model, "zoo model or preset name (see 'hippie-plan models') or graph JSON file"),
        app.add_option("--seq-len", opts.seq_len, "sequence length for sequence models (default: the model's)")
            ->check(nonNegativeInt()),
        app.add_option("--override", opts.overrides,
                       "size overrides of a zoo model, key=value,... (e.g. layers=2,seq_len=128; the keys of each "
                       "model: 'hippie-plan models --json')"),
        app.add_option("--precision", opts.precision, "fp32, fp16 or bf16 (fp16/bf16: mixed precision)")
            ->capture_default_str(),
    };
}

Graph buildGraph(const ModelOptions& opts, int batch_size) {
    ModelSpec sizes;
    sizes.zoo = opts.model;  // a file name matches no zoo model: loadModel refuses its overrides
    sizes.seq_len = opts.seq_len;
    applyOverrideText(sizes, opts.overrides);
    if (opts.seq_len > 0 && sizes.seq_len != opts.seq_len)
        throw Error("--seq-len " + std::to_string(opts.seq_len) + " and --override seq_len=" +
                    std::to_string(sizes.seq_len) + " disagree; give the sequence length once");
    return loadModel(opts.model, batch_size, sizes.seq_len, precisionFromString(opts.precision), sizes.overrides);
}

Graph buildGraph(const ModelSpec& spec) {
    if (!spec.zoo.empty()) return buildZooModel(spec);
    return loadModel(spec.file, spec.batch_size, spec.seq_len, spec.precision, spec.overrides);
}

}  // namespace hippie::cli
