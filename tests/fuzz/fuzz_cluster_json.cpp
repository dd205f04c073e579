// Cluster JSON: whatever the reader accepts can be written back and read again unchanged.
#include "fuzz_common.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/json_read.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    hippie::fuzz::expectOnlyErrors([&] {
        const hippie::Cluster c = hippie::clusterFromJson(hippie::json_read::parseJson(hippie::fuzz::asText(data, size), "cluster"), "cluster");
        for (int d = 0; d < c.deviceCount(); d += std::max(1, c.deviceCount() / 8)) (void)c.nodeOf(d);
        const hippie::Cluster again = hippie::clusterFromJson(hippie::clusterToJson(c), "written cluster");
        if (!(again == c)) hippie::fuzz::finding("a cluster does not read back as written");
    });
    return 0;
}
