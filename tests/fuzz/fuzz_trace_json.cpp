// Trace JSON: whatever the reader accepts can be written back, also as a Chrome trace.
#include "fuzz_common.h"
#include "planners/common/json_read.h"
#include "planners/sim/trace_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    hippie::fuzz::expectOnlyErrors([&] {
        const hippie::Trace t = hippie::traceFromJson(hippie::json_read::parseJson(hippie::fuzz::asText(data, size), "trace"), "trace");
        (void)hippie::traceToJson(t).dump();
        (void)hippie::traceToChromeJson(t).dump();
    });
    return 0;
}
