#include "planners/common/json_read.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "planners/common/error.h"

namespace hippie::json_read {

namespace {

// Longest value echoed back in a message; longer ones are cut so a message stays one line.
constexpr size_t kMaxEchoChars = 40;

const char* integerWord(Bound bound) {
    switch (bound) {
    case Bound::Any: return "an integer";
    case Bound::NonNegative: return "a non-negative integer";
    case Bound::Positive: return "a positive integer";
    }
    return "an integer";
}

const char* numberWord(Bound bound) {
    switch (bound) {
    case Bound::Any: return "a number";
    case Bound::NonNegative: return "a non-negative number";
    case Bound::Positive: return "a positive number";
    }
    return "a number";
}

template <typename T>
bool inBound(T v, Bound bound) {
    switch (bound) {
    case Bound::Any: return true;
    case Bound::NonNegative: return v >= 0;
    case Bound::Positive: return v > 0;
    }
    return true;
}

// The value as int64 if it is an integer (or an integral float) that fits.
std::optional<int64_t> asInt64(const json& v) {
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        // 2^63 is exactly representable; anything at or above it does not fit.
        constexpr double kTwoPow63 = 9223372036854775808.0;
        if (!std::isfinite(d) || std::trunc(d) != d || d >= kTwoPow63 || d < -kTwoPow63) return std::nullopt;
        return static_cast<int64_t>(d);
    }
    return std::nullopt;
}

// Reads an int64 value; `what` is the text after "must be" context (a field or an element).
int64_t readInt64(const json& v, Bound bound, const std::string& where, std::string_view key) {
    const std::optional<int64_t> i = asInt64(v);
    if (!i || !inBound(*i, bound)) {
        const std::string msg = std::string("must be ") + integerWord(bound) + " (got " + describe(v) + ")";
        if (key.empty()) fail(where, msg);
        failField(where, key, msg);
    }
    return *i;
}

int narrowToInt(int64_t v, const std::string& where, std::string_view key) {
    if (v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min()) {
        const std::string msg = "is out of range (got " + std::to_string(v) + ")";
        if (key.empty()) fail(where, msg);
        failField(where, key, msg);
    }
    return static_cast<int>(v);
}

double readNumber(const json& v, Bound bound, const std::string& where, std::string_view key) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !inBound(v.get<double>(), bound)) {
        const std::string msg = std::string("must be ") + numberWord(bound) + " (got " + describe(v) + ")";
        if (key.empty()) fail(where, msg);
        failField(where, key, msg);
    }
    return v.get<double>();
}

const json& requireMember(const json& j, std::string_view key, const std::string& where) {
    const auto it = j.find(key);
    if (it == j.end()) failField(where, key, "is missing");
    return *it;
}

const json* findMember(const json& j, std::string_view key) {
    const auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
}

}  // namespace

void fail(const std::string& where, const std::string& what) { throw Error(where + ": " + what); }

void failField(const std::string& where, std::string_view key, const std::string& what) {
    fail(where, "field '" + std::string(key) + "' " + what);
}

std::string describe(const json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array";
    std::string s = v.dump();
    if (s.size() > kMaxEchoChars) s = s.substr(0, kMaxEchoChars) + "...";
    return s;
}

std::string at(const std::string& where, const std::string& child) {
    // The first step after the file name follows ": ", deeper steps follow ".".
    return where + (where.find(": ") == std::string::npos ? ": " : ".") + child;
}

std::string at(const std::string& where, std::string_view array, size_t index) {
    return at(where, std::string(array) + "[" + std::to_string(index) + "]");
}

void requireObjectRoot(const json& j, const std::string& where) {
    if (!j.is_object()) fail(where, "the document must be a JSON object (got " + describe(j) + ")");
}

int requireFormat(const json& j, std::string_view format, int max_version, const std::string& where) {
    requireObjectRoot(j, where);
    const std::string f = requireString(j, "format", where);
    if (f != format)
        failField(where, "format", "must be \"" + std::string(format) + "\" (got \"" + f + "\"); is this the right kind of file?");
    const int version = requireInt(j, "version", where, Bound::Positive);
    if (version > max_version)
        failField(where, "version", "is " + std::to_string(version) + ", but this build reads " + std::string(format) +
                                        " up to version " + std::to_string(max_version) + "; update Hippie Studio");
    return version;
}

bool has(const json& j, std::string_view key) { return j.is_object() && j.contains(key); }

void requireKnownFields(const json& j, std::initializer_list<std::string_view> known, const std::string& where) {
    if (!j.is_object()) return;  // the caller's type check names what it should be
    for (const auto& item : j.items()) {
        bool found = false;
        for (const std::string_view k : known) found = found || item.key() == k;
        if (found) continue;
        std::string list;
        for (const std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        // describe() quotes, escapes control characters and shortens the key as it was sent.
        fail(where, "unknown field " + describe(json(item.key())) + " (known fields: " + list +
                        "); is it misspelt, or from a newer version?");
    }
}

const json& requireObject(const json& j, std::string_view key, const std::string& where) {
    const json& v = requireMember(j, key, where);
    if (!v.is_object()) failField(where, key, "must be an object (got " + describe(v) + ")");
    return v;
}

const json& requireArray(const json& j, std::string_view key, const std::string& where) {
    const json& v = requireMember(j, key, where);
    if (!v.is_array()) failField(where, key, "must be an array (got " + describe(v) + ")");
    return v;
}

const json* optionalObject(const json& j, std::string_view key, const std::string& where) {
    return findMember(j, key) ? &requireObject(j, key, where) : nullptr;
}

const json* optionalArray(const json& j, std::string_view key, const std::string& where) {
    return findMember(j, key) ? &requireArray(j, key, where) : nullptr;
}

std::string requireString(const json& j, std::string_view key, const std::string& where) {
    const json& v = requireMember(j, key, where);
    if (!v.is_string()) failField(where, key, "must be a string (got " + describe(v) + ")");
    return v.get<std::string>();
}

std::optional<std::string> optionalString(const json& j, std::string_view key, const std::string& where) {
    if (!findMember(j, key)) return std::nullopt;
    return requireString(j, key, where);
}

bool requireBool(const json& j, std::string_view key, const std::string& where) {
    const json& v = requireMember(j, key, where);
    if (!v.is_boolean()) failField(where, key, "must be true or false (got " + describe(v) + ")");
    return v.get<bool>();
}

std::optional<bool> optionalBool(const json& j, std::string_view key, const std::string& where) {
    if (!findMember(j, key)) return std::nullopt;
    return requireBool(j, key, where);
}

int64_t requireInt64(const json& j, std::string_view key, const std::string& where, Bound bound) {
    return readInt64(requireMember(j, key, where), bound, where, key);
}

std::optional<int64_t> optionalInt64(const json& j, std::string_view key, const std::string& where, Bound bound) {
    if (!findMember(j, key)) return std::nullopt;
    return requireInt64(j, key, where, bound);
}

int requireInt(const json& j, std::string_view key, const std::string& where, Bound bound) {
    return narrowToInt(requireInt64(j, key, where, bound), where, key);
}

std::optional<int> optionalInt(const json& j, std::string_view key, const std::string& where, Bound bound) {
    if (!findMember(j, key)) return std::nullopt;
    return requireInt(j, key, where, bound);
}

double requireNumber(const json& j, std::string_view key, const std::string& where, Bound bound) {
    return readNumber(requireMember(j, key, where), bound, where, key);
}

std::optional<double> optionalNumber(const json& j, std::string_view key, const std::string& where, Bound bound) {
    if (!findMember(j, key)) return std::nullopt;
    return requireNumber(j, key, where, bound);
}

int elementInt(const json& v, const std::string& where, Bound bound) {
    return narrowToInt(readInt64(v, bound, where, {}), where, {});
}

int64_t elementInt64(const json& v, const std::string& where, Bound bound) { return readInt64(v, bound, where, {}); }

double elementNumber(const json& v, const std::string& where, Bound bound) { return readNumber(v, bound, where, {}); }

namespace {

// Builds the document in one pass, refusing nesting deeper than kMaxJsonDepth when the container
// opens, before anything under it is read. Neither nlohmann's parser callback (its end_object
// scans every sibling already read for a discarded value, so an array of n objects costs n^2: a
// 200,000-node cluster file took 9 s) nor a depth-counting pass before json::parse (lexing the
// text twice: half of reading that file, 3.3 s then, and over 16 s under AddressSanitizer).
class DepthLimitedBuilder : public nlohmann::json_sax<json> {
public:
    DepthLimitedBuilder(json& root, const std::string& where) : root_(root), where_(where) {}
    bool null() override { return put(nullptr); }
    bool boolean(bool v) override { return put(v); }
    bool number_integer(number_integer_t v) override { return put(v); }
    bool number_unsigned(number_unsigned_t v) override { return put(v); }
    bool number_float(number_float_t v, const string_t&) override { return put(v); }
    bool string(string_t& v) override { return put(std::move(v)); }
    bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t) override { return open(json::object()); }
    bool key(string_t& k) override {
        member_ = &(*open_.back())[std::move(k)];
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_array() override { return close(); }
    // parse_error for bad syntax, out_of_range for numbers such as 1e400: parseJson reports both.
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        throw e;
    }

private:
    // Where the next value goes: the root, the member whose key came last, or the end of the
    // innermost open array. Pointers stay valid: a container grows only while it is innermost.
    json* slot() {
        if (open_.empty()) return &root_;
        json& parent = *open_.back();
        if (parent.is_object()) return member_;
        parent.emplace_back();
        return &parent.back();
    }
    template <typename V>
    bool put(V&& v) {
        *slot() = std::forward<V>(v);
        return true;
    }
    bool open(json empty) {
        if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
            throw Error(where_ + ": nested more than " + std::to_string(kMaxJsonDepth) + " levels deep; not a Hippie Studio document");
        json* s = slot();
        *s = std::move(empty);
        open_.push_back(s);
        return true;
    }
    bool close() {
        open_.pop_back();
        return true;
    }
    json& root_;
    const std::string& where_;
    std::vector<json*> open_;
    json* member_ = nullptr;
};

}  // namespace

json parseJson(std::string_view text, const std::string& where) {
    try {
        json root;
        DepthLimitedBuilder builder(root, where);
        json::sax_parse(text.begin(), text.end(), &builder);
        return root;
    } catch (const json::exception& e) {
        // parse_error for bad syntax, out_of_range for numbers such as 1e400.
        std::string what = e.what();
        if (const size_t at = what.find("] "); what.starts_with("[json.exception") && at != std::string::npos)
            what = what.substr(at + 2);
        throw Error(where + ": not valid JSON: " + what);
    }
}

json readJsonFile(const std::string& path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (ec) throw Error(path + ": cannot open for reading (" + ec.message() + ")");
    if (!std::filesystem::is_regular_file(st))
        throw Error(path + ": is not a regular file (" +
                    (std::filesystem::is_directory(st) ? std::string("a directory") : std::string("a FIFO, socket or device")) +
                    "); give a JSON file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open for reading (" + std::strerror(errno) + ")");
    // Read whole into a string sized from the file (a stringstream copied it twice more); what
    // the file gained since its size was taken is read after.
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    std::string text(ec ? 0 : static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (in) text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(path + ": read failed (" + std::strerror(errno) + ")");
    return parseJson(text, path);
}

void writeJsonFile(const json& j, const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
    out << j.dump(2) << '\n';
    out.flush();
    if (!out) throw Error(path + ": write failed (disk full or permissions?)");
}

}  // namespace hippie::json_read
