#include "core/workflow/named_links.hpp"

#include <algorithm>

#include "core/base/error.hpp"
#include "core/workflow/workflow_values.hpp"

namespace headroom::workflow {
namespace {

// The graph a flattened node sits in: its id up to the last ':' ("130:128" -> "130:", "41" -> "").
std::string scope_of(const std::string& id) { return id.substr(0, id.rfind(':') + 1); }

// `outer` holds `inner` (the top level holds every subgraph; "130:" holds "130:128:"), or is it.
bool holds(const std::string& outer, const std::string& inner) { return inner.compare(0, outer.size(), outer) == 0; }

std::string name_of(const Graph& g, const Node& n, const NamedPassThrough& rule) {
  return text(g.value(n, rule.name_widget));
}

// The setter's value input: its one input that is not the name (named after the type it carries, "MODEL",
// or "*" while unlinked, so it is found by what it is not).
const Input* value_input(const Node& setter, const NamedPassThrough& rule) {
  for (const auto& in : setter.inputs)
    if (in.name != rule.name_widget) return &in;
  return nullptr;
}

std::string described(const Node& n) {
  return n.type + " #" + n.id + (n.title.empty() ? "" : " ('" + n.title + "')");
}

}  // namespace

NamedSetters::NamedSetters(const Graph& g, std::string source) : g_(g), source_(std::move(source)) {
  for (const auto& [id, n] : g.nodes)
    if (const NamedPassThrough* rule = comfy_nodes().setter_rule(n.type))
      if (std::string name = name_of(g, n, *rule); !name.empty())  // no getter finds an empty name
        setters_[{rule, std::move(name)}].push_back({scope_of(id), &n});
  // In the order of the file (node 9 before node 10), so an error names them as the user numbered them.
  for (auto& [key, found] : setters_)
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      return std::pair(a.second->id.size(), a.second->id) < std::pair(b.second->id.size(), b.second->id);
    });
}

const Input* NamedSetters::handed_on(const Node& from, const Node* reader) const {
  const ComfyNodes& nodes = comfy_nodes();
  if (const NamedPassThrough* rule = nodes.setter_rule(from.type)) return value_input(from, *rule);
  const NamedPassThrough* rule = nodes.getter_rule(from.type);
  if (!rule || !reader) return nullptr;
  const Node* setter = setter_of(from, *rule, *reader);
  return setter ? value_input(*setter, *rule) : nullptr;
}

// Its own graph first; then, where the pack looks further (KJNodes), the graphs around it, where one setter
// of the name must be the only one: the pack refuses to pick between two ("Multiple SetNodes named ... found
// in scope"). Two in the getter's own graph are refused too: the editors never save two (each renames a copy,
// "model_0"), so which one the file means is unknown.
const Node* NamedSetters::setter_of(const Node& getter, const NamedPassThrough& rule, const Node& reader) const {
  const std::string name = name_of(g_, getter, rule);
  const std::string scope = scope_of(getter.id);
  std::vector<const Node*> own, around;
  if (auto it = setters_.find({&rule, name}); it != setters_.end())
    for (const auto& [where, setter] : it->second) {
      if (where == scope) own.push_back(setter);
      else if (rule.scope == NamedScope::GraphThenParents && holds(where, scope)) around.push_back(setter);
    }
  const std::vector<const Node*>& found = own.empty() ? around : own;
  const std::string at = getter.where.to_string() + ": " + described(getter) + ", read by " + described(reader) +
                         ", gets the name '" + name + "'";
  const char* const looked = rule.scope == NamedScope::Graph ? "in its graph" : "in its graph or the graphs around it";
  if (name.empty())
    throw FileFormatError(source_, getter.where.to_string() + ": " + described(getter) + ", read by " + described(reader) +
                                       ", gets no name (its widget '" + rule.name_widget + "' is empty or not text), so " +
                                       "the frontend hands nothing on; pick the name of a " + rule.setter + " in it");
  if (found.empty())
    throw FileFormatError(source_, at + ", which no " + rule.setter + " sets " + looked +
                                       "; ComfyUI's frontend cannot queue the workflow. Give a " + rule.setter +
                                       " that name, or pick the name of one in the " + rule.getter);
  if (found.size() > 1)
    throw FileFormatError(source_, at + ", which both " + described(*found[0]) + " and " + described(*found[1]) +
                                       " set " + (own.empty() ? "in the graphs around it" : "in its graph") +
                                       "; rename one of them so each name is set once");
  return found.front();
}

}  // namespace headroom::workflow
