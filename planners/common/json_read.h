#pragma once
// Field readers shared by every versioned JSON format (graph, cluster, plan, trace). Each one
// checks presence, type and range and throws Error with a message that locates the value:
//   "model.json: ops[3] (id 7, 'fc1'): field 'param_bytes' must be a non-negative integer (got -4)"
// `where` is everything before the field: the file and the object inside it.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hippie::json_read {

using nlohmann::json;

enum class Bound {
    Any,          // any value of the type
    NonNegative,  // >= 0
    Positive      // > 0
};

// Throws Error("<where>: <what>").
[[noreturn]] void fail(const std::string& where, const std::string& what);
// Throws Error("<where>: field '<key>' <what>").
[[noreturn]] void failField(const std::string& where, std::string_view key, const std::string& what);

// A short rendering of a JSON value for messages ("-4", "\"abc\"", "an object").
std::string describe(const json& v);

// "<where>: <child>" with the separator chosen so nested locations read naturally.
std::string at(const std::string& where, const std::string& child);
// "<where>: <array>[<index>]"
std::string at(const std::string& where, std::string_view array, size_t index);

// The document itself must be an object.
void requireObjectRoot(const json& j, const std::string& where);
// Checks "format" and "version" (1 .. max_version); returns the version read.
int requireFormat(const json& j, std::string_view format, int max_version, const std::string& where);

bool has(const json& j, std::string_view key);

// Refuses a key of the object `j` that is not in `known`, naming it and listing the known ones.
// Every schema says "additionalProperties": false, and readers hold to it: a misspelt optional
// field would otherwise be ignored without a word, and an unknown one, however large, would
// travel with the document to whatever copies, stores or writes it next (an agent's job, a run
// in the store).
void requireKnownFields(const json& j, std::initializer_list<std::string_view> known, const std::string& where);

const json& requireObject(const json& j, std::string_view key, const std::string& where);
const json& requireArray(const json& j, std::string_view key, const std::string& where);
// nullptr when absent; throws when present with another type.
const json* optionalObject(const json& j, std::string_view key, const std::string& where);
const json* optionalArray(const json& j, std::string_view key, const std::string& where);

std::string requireString(const json& j, std::string_view key, const std::string& where);
std::optional<std::string> optionalString(const json& j, std::string_view key, const std::string& where);

bool requireBool(const json& j, std::string_view key, const std::string& where);
std::optional<bool> optionalBool(const json& j, std::string_view key, const std::string& where);

// Integers: JSON integers, or numbers with no fractional part (as JSON Schema counts them).
int64_t requireInt64(const json& j, std::string_view key, const std::string& where, Bound bound = Bound::Any);
std::optional<int64_t> optionalInt64(const json& j, std::string_view key, const std::string& where,
                                     Bound bound = Bound::Any);
// Same, and the value must fit an int.
int requireInt(const json& j, std::string_view key, const std::string& where, Bound bound = Bound::Any);
std::optional<int> optionalInt(const json& j, std::string_view key, const std::string& where,
                               Bound bound = Bound::Any);

// Finite numbers (integers accepted).
double requireNumber(const json& j, std::string_view key, const std::string& where, Bound bound = Bound::Any);
std::optional<double> optionalNumber(const json& j, std::string_view key, const std::string& where,
                                     Bound bound = Bound::Any);

// Array elements, located as "<where>: <array>[<i>]" in messages.
int elementInt(const json& v, const std::string& where, Bound bound = Bound::Any);
int64_t elementInt64(const json& v, const std::string& where, Bound bound = Bound::Any);
double elementNumber(const json& v, const std::string& where, Bound bound = Bound::Any);

// Deepest nesting of arrays and objects any reader accepts. Our formats nest a few levels; a
// limit keeps a hostile document from exhausting the stack when it is copied, compared or freed
// (which recurse) and from inflating when it is written back indented.
inline constexpr int kMaxJsonDepth = 64;

// Parses one JSON document. Every failure is an Error starting with `where`: malformed text,
// nesting deeper than kMaxJsonDepth, or a number out of range (1e400). Nothing else escapes.
json parseJson(std::string_view text, const std::string& where);

// Reads a whole file as JSON; Error names the path when it cannot be read or parsed, or when it
// is not a regular file (a directory, or a FIFO that would block the reader).
json readJsonFile(const std::string& path);
// Writes `j` indented; Error names the path when it cannot be written.
void writeJsonFile(const json& j, const std::string& path);

}  // namespace hippie::json_read
