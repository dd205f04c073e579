// Plan JSON: whatever the reader accepts can be written back and read again unchanged, and its
// derived groups computed.
#include "fuzz_common.h"
#include "planners/common/json_read.h"
#include "planners/schedule/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    hippie::fuzz::expectOnlyErrors([&] {
        const hippie::Plan p = hippie::planFromJson(hippie::json_read::parseJson(hippie::fuzz::asText(data, size), "plan"), "plan");
        (void)p.deviceCount();
        const hippie::Plan again = hippie::planFromJson(hippie::planToJson(p), "written plan");
        if (hippie::planToJson(again) != hippie::planToJson(p)) hippie::fuzz::finding("a plan does not read back as written");
    });
    return 0;
}
