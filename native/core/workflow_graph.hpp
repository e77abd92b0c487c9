#pragma once
// A ComfyUI workflow flattened into one graph of executable nodes, whatever format it came in:
// UI format (nodes + links + widgets_values, subgraphs expanded) or API format ({id: {class_type, inputs}}).
// Every literal value remembers where it lives in the source JSON, so a preset can rewrite it in place.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::workflow {

using nlohmann::json;
using Pointer = nlohmann::json::json_pointer;

// ComfyUI node modes (LiteGraph): 0 always, 2 never (muted), 4 bypass.
constexpr int kModeMuted = 2;
constexpr int kModeBypass = 4;

struct Input {
  std::string name;
  // A link to another node's output...
  std::optional<std::string> from_node;
  int from_slot = 0;
  // ...and/or a literal (UI widgets keep a copy even when converted to a linked input).
  std::optional<json> value;
  std::vector<Pointer> where;  // every place in the source JSON holding this literal
};

struct Node {
  std::string id;       // "41", or "130:128" for a node inside subgraph instance 130 (ComfyUI's execution id)
  std::string type;     // class_type
  int mode = 0;
  std::vector<Input> inputs;
  Pointer where;        // the node object in the source JSON

  const Input* input(const std::string& name) const;
};

struct Graph {
  bool api_format = false;
  std::map<std::string, Node> nodes;

  const Node* node(const std::string& id) const;
  // The literal of an input, following a link to a PrimitiveNode; nullopt when unset or computed.
  // `where` receives the source locations of the value (primitive and the node's own copy).
  std::optional<json> value(const Node& node, const std::string& name,
                            std::vector<Pointer>* where = nullptr) const;
  // The node feeding `name`, skipping bypassed nodes and passthrough nodes (Reroute, HeadroomPreflight...).
  const Node* source(const Node& node, const std::string& name) const;
};

// Builds the graph. `source` names the workflow in errors. Throws FileFormatError on JSON that is
// neither format, with the path inside the document that is wrong.
Graph build_graph(const json& workflow, const std::string& source);

// Parses workflow text; errors carry the path, line and column.
json parse_workflow_text(const std::string& text, const std::string& source);

// Widget names of a UI-format node type in widgets_values order ("" = a frontend-only entry such as
// control_after_generate). nullptr for a type we do not know.
const std::vector<std::string>* widget_names(const std::string& type);

}  // namespace headroom::workflow
