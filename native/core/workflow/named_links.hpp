#pragma once
// Named pass-throughs (comfy_nodes.json named_pass_throughs: KJNodes' SetNode/GetNode, Easy-Use's): a
// getter carries whatever feeds the setter of its name. The frontend resolves them when it queues, so the
// reader does too, once per graph, looking for the setter where the getter's pack looks.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

class NamedSetters {
 public:
  // `source` names the workflow in errors. Keeps pointers into `g`: it must outlive this and keep its nodes.
  NamedSetters(const Graph& g, std::string source);

  // The input a link leaving `from` really comes from: a setter's value input, or for a getter the value
  // input of the setter of its name; nullptr for any other node. `reader` is the node that needs the value
  // (nullptr: none that runs): for it, a getter whose name no setter sets, or two do, is a workflow the
  // frontend cannot queue, and FileFormatError names the getter, its title and the name. Without a reader
  // such a getter hands on nothing, as in the frontend, which resolves only what a queued node reads.
  const Input* handed_on(const Node& from, const Node* reader) const;

 private:
  const Node* setter_of(const Node& getter, const NamedPassThrough& rule, const Node& reader) const;

  const Graph& g_;
  std::string source_;
  // (rule, name) -> every setter of that name, with the scope it sits in ("" top level, "130:" inside
  // subgraph instance 130).
  std::map<std::pair<const NamedPassThrough*, std::string>, std::vector<std::pair<std::string, const Node*>>> setters_;
};

}  // namespace headroom::workflow
