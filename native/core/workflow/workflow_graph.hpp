#pragma once
// A ComfyUI workflow flattened into one graph of executable nodes, whatever format it came in:
// UI format (nodes + links + widgets_values, subgraphs expanded) or API format ({id: {class_type, inputs}}).
// Every literal value remembers where it lives in the source JSON, so a preset can rewrite it in place.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::workflow {

using nlohmann::json;
using Pointer = nlohmann::json::json_pointer;

// Limits on a workflow document, checked while it is read so a hostile one fails fast.
// Nodes after flattening (every subgraph instance expanded, instances themselves counted): ComfyUI's
// templates have well under 1,000, so 20,000 is 20x the largest real workflow; it bounds one estimate
// to about a second and a few hundred MB even for a 2 kB document whose subgraphs each instantiate
// the next one ten times (10^6 nodes and more otherwise).
constexpr std::size_t kMaxWorkflowNodes = 20000;
// Links read over all instances (a subgraph's links are read once per instance): real workflows
// have about as many links as nodes, so 5x the node limit.
constexpr std::size_t kMaxWorkflowLinks = 5 * kMaxWorkflowNodes;
// Bytes of workflow text read from a file: the route's body limit (nodes/server/routes.py MAX_BODY_BYTES);
// a large subgraph workflow is about 100 kB.
constexpr std::uint64_t kMaxWorkflowBytes = 16ull * 1024 * 1024;

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

// The type of an API-format node exported without a class_type (its backend did not know it): no
// ComfyUI class is spelt with parentheses and a space, so the catalog never matches it.
inline constexpr const char* kNoClassType = "(no class_type)";

struct Node {
  std::string id;       // "41", or "130:128" for a node inside subgraph instance 130 (ComfyUI's execution id)
  std::string type;     // class_type
  int mode = 0;
  std::vector<Input> inputs;
  Pointer where;        // the node object in the source JSON
  std::string title;    // the title the workflow gives it (UI "title", API "_meta.title"); "" = none

  const Input* input(const std::string& name) const;
};

struct Graph {
  bool api_format = false;
  std::map<std::string, Node> nodes;

  const Node* node(const std::string& id) const;
  // The node's own literal of an input (for a linked input, the widget copy it keeps); nullopt when unset.
  // `where` receives the source locations of the value (primitive and the node's own copy).
  std::optional<json> value(const Node& node, const std::string& name,
                            std::vector<Pointer>* where = nullptr) const;
};

// Builds the graph. `source` names the workflow in errors. Throws FileFormatError on JSON that is
// neither format, with the path inside the document that is wrong.
Graph build_graph(const json& workflow, const std::string& source);

// Parses workflow text (through read_json: nesting is capped at kMaxJsonDepth); errors carry the
// path, line and column.
json parse_workflow_text(const std::string& text, const std::string& source);

// Widget names of a UI-format node type in widgets_values order ("" = a frontend-only entry such as
// control_after_generate), from comfy_nodes.json. nullptr for a type whose widgets we do not read. A node with
// image_modes writes a different order per mode: `values` (its widgets_values, the mode first) picks it.
const std::vector<std::string>* widget_names(const std::string& type, const json& values = json());

}  // namespace headroom::workflow
