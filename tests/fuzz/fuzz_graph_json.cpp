// Graph JSON: whatever the reader accepts can be summarised, laid out in layers and drawn as DOT.
#include "fuzz_common.h"
#include "planners/common/json_read.h"
#include "planners/model/graph_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    hippie::fuzz::expectOnlyErrors([&] {
        const hippie::Graph g = hippie::graphFromJson(hippie::json_read::parseJson(hippie::fuzz::asText(data, size), "graph"), "graph");
        (void)g.layers();
        (void)g.totalParamBytes();
        (void)g.paramCount();
        (void)hippie::graphToDot(g);
        (void)hippie::graphToJson(g).dump();
    });
    return 0;
}
