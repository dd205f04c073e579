#include "planners/model/overrides.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "planners/common/error.h"
#include "planners/model/architecture.h"
#include "planners/model/zoo.h"
#include "planners/model/presets.h"

namespace hippie {
namespace {

std::string trim(const std::string& s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::string formatValue(double v) {
    std::ostringstream s;
    s.precision(12);
    s << v;
    return s.str();
}

bool isKeyChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

}  // namespace

void setOverride(ModelSpec& spec, const std::string& key, double value) {
    if (key != "seq_len") {
        spec.overrides[key] = value;
        return;
    }
    // A model without a sequence ignores ModelSpec::seq_len; asking for one is a mistake.
    if (const Architecture* arch = publishedArchitecture(expandPreset(spec).zoo); arch && sequenceLength(*arch) == 0) {
        std::string keys;
        for (const OverrideKey& k : overrideKeys(familyOf(*arch))) keys += (keys.empty() ? "" : ", ") + k.key;
        throw Error("override 'seq_len' is not a size of '" + spec.zoo + "' (family " + familyOf(*arch) +
                    ", without a sequence); it accepts: " + keys);
    }
    if (!(value >= 1 && value <= std::numeric_limits<int>::max()) || std::floor(value) != value)
        throw Error("override 'seq_len' is " + formatValue(value) + "; it must be a whole number of at least 1");
    spec.seq_len = static_cast<int>(value);
}

void applyOverrideText(ModelSpec& spec, const std::string& text) {
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        item = trim(item);
        if (item.empty()) continue;
        const auto eq = item.find('=');
        const std::string key = trim(item.substr(0, eq));
        const std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
        if (eq == std::string::npos || key.empty() || value.empty())
            throw Error("override '" + item + "' is not key=value (for example layers=2,seq_len=128)");
        for (char c : key)
            if (!isKeyChar(c)) throw Error("override key '" + key + "' has a character other than a-z, 0-9 and _");
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (end != value.c_str() + value.size() || !std::isfinite(v))
            throw Error("override '" + key + "' has value '" + value + "', which is not a number");
        setOverride(spec, key, v);
    }
}

std::string overrideText(const ModelSpec& spec) {
    const ZooEntry* entry = findZooModel(spec.zoo);
    const Architecture* arch = publishedArchitecture(spec.zoo);
    std::string out;
    auto append = [&out](const std::string& k, double v) { out += (out.empty() ? "" : ",") + k + "=" + formatValue(v); };
    std::map<std::string, double> rest = spec.overrides;
    const bool show_seq = spec.seq_len > 0 && (!entry || spec.seq_len != entry->default_seq_len);
    if (arch) {
        for (const OverrideKey& k : overrideKeys(familyOf(*arch))) {
            if (k.key == "seq_len") {
                if (show_seq) append("seq_len", spec.seq_len);
                continue;
            }
            const auto it = rest.find(k.key);
            if (it == rest.end()) continue;
            append(k.key, it->second);
            rest.erase(it);
        }
    } else if (show_seq) {
        append("seq_len", spec.seq_len);
    }
    for (const auto& [k, v] : rest) append(k, v);  // keys the family does not know, for error messages
    return out;
}

std::string sizeOverrideText(const ModelSpec& spec) {
    ModelSpec sizes = spec;
    sizes.seq_len = 0;
    return overrideText(sizes);
}

std::string zooGraphName(const ModelSpec& spec) {
    const std::string o = overrideText(spec);
    return o.empty() ? spec.zoo : spec.zoo + "[" + o + "]";
}

}  // namespace hippie
