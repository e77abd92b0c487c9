#include "core/workflow/executed_nodes.hpp"

#include <optional>
#include <vector>

#include "core/workflow/named_links.hpp"
#include "core/workflow/workflow_values.hpp"

namespace headroom::workflow {

void link_past_virtual_nodes(Graph& g, const std::string& source) {
  const NamedSetters named(g, source);
  for (auto& [id, n] : g.nodes) {
    // A node that runs, or is bypassed and hands its inputs on, needs what a getter carries; a muted or
    // frontend-only one is left out of the prompt, so the frontend never asks.
    const Node* reader = n.mode != kModeMuted && !is_virtual(n.type) ? &n : nullptr;
    for (auto& in : n.inputs)
      for (int hops = 0; in.from_node && hops < 64; ++hops) {
        const Node* from = g.node(*in.from_node);
        if (!from) break;
        const Input* through = passed_input(*from);
        if (!through) through = named.handed_on(*from, reader);
        if (!through || !through->from_node) break;
        in.from_slot = through->from_slot;
        in.from_node = through->from_node;
      }
  }
}

std::set<std::string> executed_nodes(const Graph& g) {
  std::set<std::string> consumed;
  for (const auto& [id, n] : g.nodes)
    for (const auto& in : n.inputs)
      if (in.from_node) consumed.insert(*in.from_node);
  std::vector<std::string> stack;
  bool has_outputs = false;  // even muted ones: then the user silenced the run on purpose
  for (const auto& [id, n] : g.nodes) {
    if (is_output(n.type)) has_outputs = true;
    if (n.mode != 0 || is_virtual(n.type)) continue;
    // A node comfy_nodes.json does not know, whose result nothing consumes, may be an output too.
    bool unknown_leaf = !node_info(n.type) && !consumed.count(id);
    if (is_output(n.type) || unknown_leaf) stack.push_back(id);
  }
  std::set<std::string> run, seen;
  if (stack.empty() && !has_outputs) {  // no recognisable output (an API fragment): everything active counts
    for (const auto& [id, n] : g.nodes)
      if (n.mode == 0 && !is_virtual(n.type)) run.insert(id);
    return run;
  }
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Node* n = g.node(id);
    if (!n || n->mode == kModeMuted) continue;
    if (n->mode == 0 && !is_virtual(n->type)) run.insert(id);
    const ComfyNode* info = node_info(n->type);
    // A switch runs only the branch it selects. Optional, not "": a Reroute's one input is named "",
    // and an empty default skipped it, so nothing behind a Reroute ran (no VAE, no text encoder).
    std::optional<std::string> skipped;
    if (info && !info->switch_widget.empty()) {
      auto v = resolved_value(g, *n, info->switch_widget, nullptr);
      if (v && v->is_boolean()) skipped = v->get<bool>() ? info->on_false : info->on_true;
    }
    for (const auto& in : n->inputs)
      if (in.from_node && in.name != skipped) stack.push_back(*in.from_node);
  }
  return run;
}

std::vector<std::string> unfed_input_notes(const Graph& g, const std::set<std::string>& run) {
  std::vector<std::string> out;
  for (const auto& id : run) {
    const Node* n = g.node(id);
    if (!n) continue;
    for (const auto& in : n->inputs)
      if (in.from_node && !g.node(*in.from_node))
        out.push_back(n->type + " #" + n->id + ": input '" + in.name + "' is linked to output " +
                      std::to_string(in.from_slot) + " of #" + *in.from_node +
                      ", which nothing feeds (a subgraph output left unconnected); ComfyUI refuses the prompt, "
                      "so nothing behind it runs");
  }
  return out;
}

}  // namespace headroom::workflow
