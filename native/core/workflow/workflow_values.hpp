#pragma once
// Reading a node's values as ComfyUI will run them: literals at the end of chains of value nodes, a
// linked input's source past frontend-only nodes, and the comfy_nodes.json facts of a node type.
#include <optional>
#include <string>
#include <vector>

#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

inline const ComfyNode* node_info(const std::string& type) { return comfy_nodes().find(type); }
inline bool is_output(const std::string& t) { const auto* n = node_info(t); return n && n->output; }
inline bool is_virtual(const std::string& t) { const auto* n = node_info(t); return n && n->is_virtual; }

// The string a value holds, "" for anything else.
std::string text(const std::optional<json>& v);

// A whole number (a float only when it is whole and representable), nullopt for anything else.
std::optional<long long> integer(const std::optional<json>& v);

// The value of input `name` as it runs, through value nodes (comfy_nodes.json value_outputs); `where`
// receives every copy of it, the source first.
std::optional<json> resolved_value(const Graph& g, const Node& n, const std::string& name,
                                   std::vector<Pointer>* where = nullptr, int depth = 0);

// The node feeding input `name`, through Reroutes and other frontend-only nodes; nullptr when unlinked.
const Node* source_of(const Graph& g, const Node& n, const std::string& name);

// The input a frontend-only node hands on (comfy_nodes.json "passes"); nullptr for any other node.
const Input* passed_input(const Node& n);

}  // namespace headroom::workflow
