#pragma once
// Graph JSON ("format":"hippie-graph","version":1, or 2 with size overrides), schema in resources/schemas/graph.schema.json.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planners/model/graph.h"

namespace hippie {

nlohmann::json graphToJson(const Graph& g);
// Validates and throws Error naming the field and op at fault (`where` prefixes the message,
// e.g. the file name): missing fields, wrong types, negative sizes, dangling edge ends,
// duplicate ids, cycles, an empty graph, an unknown format or version.
Graph graphFromJson(const nlohmann::json& j, const std::string& where = "graph");
Graph loadGraphFile(const std::string& path);  // Error names the path (unreadable, not JSON, invalid)
void saveGraphFile(const Graph& g, const std::string& path);

// Graphviz DOT of the operator graph (ops as nodes labelled name/kind, clustered by layer).
std::string graphToDot(const Graph& g);

// A zoo name or a path to a graph JSON file. Zoo models use batch_size/seq_len/precision and
// the size overrides (architecture.h); a file refuses overrides.
Graph loadModel(const std::string& zoo_name_or_file, int batch_size, int seq_len, Precision precision,
                const std::map<std::string, double>& overrides = {});

}  // namespace hippie
