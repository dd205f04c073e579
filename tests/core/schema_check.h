#pragma once
// Test helpers for the JSON schemas under resources/schemas: every key a writer emits must be
// declared (and described) in the schema. Handles the subset of JSON Schema our schemas use:
// "$ref" to "#/$defs/...", "properties", "items", "prefixItems" and "additionalProperties".
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schema_check {

using nlohmann::json;

inline std::string schemaPath(const std::string& name) {
    return std::string(HIPPIE_SOURCE_DIR) + "/resources/schemas/" + name;
}

inline json loadJson(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    return json::parse(in);
}

// Follows "$ref": "#/$defs/name" (local references only).
inline const json& resolve(const json& root, const json& schema) {
    const json* s = &schema;
    while (s->is_object() && s->contains("$ref")) {
        const std::string ref = (*s)["$ref"].get<std::string>();
        const std::string prefix = "#/";
        if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("non-local $ref " + ref);
        s = &root.at(json::json_pointer(ref.substr(1)));
    }
    return *s;
}

// Appends "path.key" for every key of `doc` that `schema` does not declare.
inline void undeclaredKeys(const json& root, const json& schema_in, const json& doc, const std::string& path,
                           std::vector<std::string>& out) {
    const json& schema = resolve(root, schema_in);
    if (doc.is_object()) {
        const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
        for (const auto& [key, value] : doc.items()) {
            const std::string p = path + "." + key;
            if (props && props->contains(key))
                undeclaredKeys(root, (*props)[key], value, p, out);
            else if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
                undeclaredKeys(root, schema["additionalProperties"], value, p, out);
            else
                out.push_back(p);
        }
    } else if (doc.is_array()) {
        for (size_t i = 0; i < doc.size(); ++i) {
            const std::string p = path + "[" + std::to_string(i) + "]";
            if (schema.contains("prefixItems") && i < schema["prefixItems"].size())
                undeclaredKeys(root, schema["prefixItems"][i], doc[i], p, out);
            else if (schema.contains("items") && schema["items"].is_object())
                undeclaredKeys(root, schema["items"], doc[i], p, out);
            else if (doc[i].is_object() || doc[i].is_array())
                out.push_back(p + " (no item schema)");
        }
    }
}

// Appends the path of every property schema that lacks a "description", and of every
// "required" key that "properties" does not declare. Combinators (anyOf, ...) only restate
// constraints on declared fields, so they are not searched.
inline void undescribedProperties(const json& schema, const std::string& path, std::vector<std::string>& out) {
    if (schema.is_array()) {
        for (size_t i = 0; i < schema.size(); ++i) undescribedProperties(schema[i], path + "[" + std::to_string(i) + "]", out);
        return;
    }
    if (!schema.is_object()) return;
    if (schema.contains("properties")) {
        for (const auto& [key, sub] : schema["properties"].items()) {
            const bool described = sub.contains("description") || sub.contains("$ref");
            if (!described) out.push_back(path + ".properties." + key);
        }
        if (schema.contains("required"))
            for (const json& k : schema["required"])
                if (!schema["properties"].contains(k.get<std::string>()))
                    out.push_back(path + ".required." + k.get<std::string>() + " (not in properties)");
    }
    for (const auto& [key, sub] : schema.items())
        if (key != "enum" && key != "const" && key != "examples" && key != "default" && key != "anyOf" &&
            key != "oneOf" && key != "allOf" && key != "not")
            undescribedProperties(sub, path + "." + key, out);
}

inline std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

}  // namespace schema_check
