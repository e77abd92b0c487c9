// Flattening of ComfyUI workflows (UI format with subgraphs, or API format) into one Graph.
// Format facts: ../shared/real-workflows/INDEX.md, "Format notes for the parser".
#include "core/workflow/workflow_graph.hpp"

#include <set>
#include <unordered_map>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace headroom::workflow {

const Input* Node::input(const std::string& name) const {
  for (const auto& in : inputs)
    if (in.name == name) return &in;
  return nullptr;
}

const Node* Graph::node(const std::string& id) const {
  auto it = nodes.find(id);
  return it == nodes.end() ? nullptr : &it->second;
}

std::optional<json> Graph::value(const Node& n, const std::string& name, std::vector<Pointer>* where) const {
  const Input* in = n.input(name);
  // Linked inputs keep the widget copy (UI format): the best this node knows; workflow.cpp follows
  // links to nodes that pass a value on.
  if (!in || !in->value) return std::nullopt;
  if (where) *where = in->where;
  return in->value;
}

namespace {

constexpr int kMaxSubgraphDepth = 8;  // nested subgraphs deeper than this are refused (cycles)
constexpr int kSubgraphInput = -10;   // LiteGraph pseudo-node ids of a subgraph's input/output panels
constexpr int kSubgraphOutput = -20;
constexpr std::size_t kMaxTitleChars = 80;  // a title longer than a table cell is cut

// The title a node object carries (UI: "title", API: "_meta.title"), cut for notes; "" when it has none
// or it only repeats the node's type.
std::string title_of(const json& jn, const std::string& type) {
  const json* t = nullptr;
  if (jn.contains("title")) t = &jn["title"];
  else if (jn.contains("_meta") && jn["_meta"].is_object() && jn["_meta"].contains("title")) t = &jn["_meta"]["title"];
  if (!t || !t->is_string() || t->get<std::string>() == type) return "";
  return text_preview(t->get<std::string>(), kMaxTitleChars);
}

// `where` is only rendered when the id is bad: error text is never built on the happy path.
std::string id_text(const json& id, const std::string& source, const Pointer& where) {
  if (id.is_number_integer()) return std::to_string(id.get<long long>());
  if (id.is_string()) return id.get<std::string>();
  throw FileFormatError(source, where.to_string() + ": expected a node id (number or string), got " + json_preview(id));
}

struct Link {
  std::string origin;  // raw id in its scope
  int origin_slot = 0;
  std::string target;
  int target_slot = 0;
};

// A subgraph input as seen from inside: fed by an outer link, or holding the instance's widget value.
struct Binding {
  std::optional<std::string> from_node;  // flat id
  int from_slot = 0;
  std::optional<json> value;
  std::vector<Pointer> where;
};

// A scope's links by id; `links_seen` counts them over the whole workflow, each instance again.
std::map<std::string, Link> read_links(const json& scope, const Pointer& at, const std::string& source,
                                      std::size_t& links_seen) {
  std::map<std::string, Link> links;
  if (!scope.contains("links")) return links;
  const json& ls = scope["links"];
  if (!ls.is_array()) throw FileFormatError(source, (at / "links").to_string() + ": expected an array");
  links_seen += ls.size();
  if (links_seen > kMaxWorkflowLinks)
    throw FileFormatError(source, (at / "links").to_string() + ": the workflow has more than " +
                                       std::to_string(kMaxWorkflowLinks) +
                                       " links once subgraphs are expanded (each instance counted); real workflows have a few hundred");
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const json& l = ls[i];
    auto here_ptr = [&] { return at / "links" / i; };
    auto here = [&] { return here_ptr().to_string(); };
    Link k;
    std::string id;
    if (l.is_array()) {  // top level: [id, origin_id, origin_slot, target_id, target_slot, type]
      if (l.size() < 5 || !l[2].is_number_integer() || !l[4].is_number_integer())
        throw FileFormatError(source, here() + ": expected [id, origin_id, origin_slot, target_id, target_slot, type]");
      id = id_text(l[0], source, here_ptr());
      k = {id_text(l[1], source, here_ptr()), l[2].get<int>(), id_text(l[3], source, here_ptr()), l[4].get<int>()};
    } else if (l.is_object()) {  // inside subgraphs: {id, origin_id, origin_slot, target_id, target_slot}
      for (const char* f : {"id", "origin_id", "origin_slot", "target_id", "target_slot"})
        if (!l.contains(f)) throw FileFormatError(source, here() + ": link object without '" + f + "'");
      if (!l["origin_slot"].is_number_integer() || !l["target_slot"].is_number_integer())
        throw FileFormatError(source, here() + ": link slots must be integers");
      id = id_text(l["id"], source, here_ptr());
      k = {id_text(l["origin_id"], source, here_ptr()), l["origin_slot"].get<int>(),
           id_text(l["target_id"], source, here_ptr()), l["target_slot"].get<int>()};
    } else {
      throw FileFormatError(source, here() + ": expected a link array or object");
    }
    links[id] = k;
  }
  return links;
}

// The node's widget values by name (comfy_nodes.json widget order), each with where it sits.
void read_widgets(const json& jn, const Pointer& np, Node& n) {
  if (!jn.contains("widgets_values")) return;
  const json& wv = jn["widgets_values"];
  auto set = [&](const std::string& name, const json& v, const Pointer& p) {
    for (auto& in : n.inputs) {
      if (in.name != name) continue;
      if (!in.value) in.value = v;  // a bound subgraph input value wins over the inner copy
      in.where.push_back(p);
      return;
    }
    Input in;
    in.name = name;
    in.value = v;
    in.where.push_back(p);
    n.inputs.push_back(std::move(in));
  };
  if (wv.is_object()) {  // some custom nodes store widgets by name
    for (auto it = wv.begin(); it != wv.end(); ++it) set(it.key(), it.value(), np / "widgets_values" / it.key());
    return;
  }
  if (!wv.is_array()) return;
  const auto* names = widget_names(n.type, wv);
  if (!names) return;
  for (std::size_t k = 0; k < wv.size() && k < names->size(); ++k)
    if (!(*names)[k].empty()) set((*names)[k], wv[k], np / "widgets_values" / k);
}

// Without proxyWidgets the frontend writes the instance's widget values in the order of the subgraph's
// widget-typed inputs (INT, FLOAT, STRING, BOOLEAN, COMBO): the Qwen-Image 2.1 edit templates keep their
// resolution 0 there while the inner node still shows 1024. Read only when the counts agree, since any
// other layout would bind values to the wrong inputs.
void promote_by_position(const json& jn, const Pointer& np, const json& sg,
                         std::map<std::string, std::pair<json, Pointer>>& promoted) {
  if (!jn.contains("widgets_values") || !jn["widgets_values"].is_array() || !sg.contains("inputs") ||
      !sg["inputs"].is_array())
    return;
  static const std::set<std::string> widget_types = {"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"};
  std::vector<std::string> names;
  for (const auto& si : sg["inputs"]) {
    if (!si.is_object() || !si.contains("name") || !si["name"].is_string() || !si.contains("type") ||
        !si["type"].is_string())
      return;
    if (widget_types.count(si["type"].get<std::string>())) names.push_back(si["name"].get<std::string>());
  }
  const json& wv = jn["widgets_values"];
  if (names.empty() || names.size() != wv.size()) return;
  for (std::size_t k = 0; k < names.size(); ++k) promoted[names[k]] = {wv[k], np / "widgets_values" / k};
}

// Values of promoted widgets ["-1", name] sit on the instance in proxyWidgets order.
std::map<std::string, std::pair<json, Pointer>> promoted_widgets(const json& jn, const Pointer& np, const json& sg) {
  std::map<std::string, std::pair<json, Pointer>> promoted;
  if (jn.contains("properties") && jn["properties"].is_object() && jn["properties"].contains("proxyWidgets") &&
      jn["properties"]["proxyWidgets"].is_array() && jn.contains("widgets_values") &&
      jn["widgets_values"].is_array()) {
    const json& pw = jn["properties"]["proxyWidgets"];
    const json& wv = jn["widgets_values"];
    for (std::size_t k = 0; k < pw.size() && k < wv.size(); ++k)
      if (pw[k].is_array() && pw[k].size() == 2 && pw[k][0] == "-1" && pw[k][1].is_string())
        promoted[pw[k][1].get<std::string>()] = {wv[k], np / "widgets_values" / k};
  } else {
    promote_by_position(jn, np, sg, promoted);
  }
  return promoted;
}

class Flattener {
 public:
  Flattener(const json& root, const std::string& source) : root_(root), source_(source) {
    const json* defs = root.contains("definitions") ? &root["definitions"] : nullptr;
    if (defs && defs->is_object() && defs->contains("subgraphs") && (*defs)["subgraphs"].is_array()) {
      const json& sgs = (*defs)["subgraphs"];
      for (std::size_t i = 0; i < sgs.size(); ++i)
        if (sgs[i].is_object() && sgs[i].contains("id") && sgs[i]["id"].is_string())
          subgraphs_[sgs[i]["id"].get<std::string>()] = i;
    }
  }

  Graph run() {
    flatten(root_, Pointer(), "", {}, 0, 0);
    resolve_instance_outputs();
    return std::move(graph_);
  }

 private:
  const json& root_;
  std::string source_;
  std::unordered_map<std::string, std::size_t> subgraphs_;
  Graph graph_;
  // (instance flat id, output slot) -> what feeds it inside the subgraph
  std::map<std::pair<std::string, int>, Binding> outputs_;
  std::size_t nodes_seen_ = 0;  // every node entry flattened, instances included
  std::size_t links_seen_ = 0;

  // The flat source of a link inside a scope: another node, or a subgraph input binding.
  Binding origin_of(const Link& l, const std::string& prefix, const std::vector<Binding>& bindings) {
    if (l.origin == std::to_string(kSubgraphInput)) {
      if (l.origin_slot >= 0 && static_cast<std::size_t>(l.origin_slot) < bindings.size())
        return bindings[static_cast<std::size_t>(l.origin_slot)];
      return {};
    }
    Binding b;
    b.from_node = prefix + l.origin;
    b.from_slot = l.origin_slot;
    return b;
  }

  void flatten(const json& scope, const Pointer& at, const std::string& prefix, const std::vector<Binding>& bindings,
               int inherited_mode, int depth) {
    if (!scope.contains("nodes") || !scope["nodes"].is_array())
      throw FileFormatError(source_, (at / "nodes").to_string() + ": expected an array of nodes");
    auto links = read_links(scope, at, source_, links_seen_);
    const json& nodes = scope["nodes"];
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const json& jn = nodes[i];
      Pointer np = at / "nodes" / i;
      if (++nodes_seen_ > kMaxWorkflowNodes)
        throw FileFormatError(source_, np.to_string() + ": the workflow has more than " +
                                           std::to_string(kMaxWorkflowNodes) +
                                           " nodes once subgraphs are expanded (each instance counted); real workflows have under 1,000");
      if (!jn.is_object() || !jn.contains("id") || !jn.contains("type") || !jn["type"].is_string())
        throw FileFormatError(source_, np.to_string() + ": a node needs an 'id' and a string 'type'");
      std::string raw_id = id_text(jn["id"], source_, np);
      std::string flat = prefix + raw_id;
      int mode = jn.contains("mode") && jn["mode"].is_number_integer() ? jn["mode"].get<int>() : 0;
      if (inherited_mode != 0) mode = inherited_mode;  // a muted/bypassed instance silences its inside
      std::string type = jn["type"].get<std::string>();

      // Linked inputs and their widget copies.
      std::vector<Input> inputs;
      if (jn.contains("inputs") && jn["inputs"].is_array()) {
        for (const auto& ji : jn["inputs"]) {
          if (!ji.is_object() || !ji.contains("name") || !ji["name"].is_string()) continue;
          Input in;
          in.name = ji["name"].get<std::string>();
          if (ji.contains("link") && !ji["link"].is_null()) {
            std::string lid = id_text(ji["link"], source_, np / "inputs");
            auto it = links.find(lid);
            if (it != links.end()) {
              Binding b = origin_of(it->second, prefix, bindings);
              in.from_node = b.from_node;
              in.from_slot = b.from_slot;
              if (b.value) {
                in.value = b.value;
                in.where = b.where;
              }
            }
          }
          inputs.push_back(std::move(in));
        }
      }

      auto subgraph = subgraphs_.find(type);
      if (subgraph != subgraphs_.end()) {
        if (depth >= kMaxSubgraphDepth)
          throw FileFormatError(source_, np.to_string() + ": subgraphs nested deeper than " +
                                             std::to_string(kMaxSubgraphDepth) + " levels (a cycle?)");
        expand_instance(jn, np, flat, mode, inputs, subgraph->second, depth);
        continue;
      }

      Node n;
      n.id = flat;
      n.type = type;
      n.mode = mode;
      n.where = np;
      n.title = title_of(jn, type);
      n.inputs = std::move(inputs);
      read_widgets(jn, np, n);
      graph_.nodes[flat] = std::move(n);
    }
    (void)bindings;
  }

  void expand_instance(const json& jn, const Pointer& np, const std::string& flat, int mode,
                       const std::vector<Input>& outer_inputs, std::size_t sg_index, int depth) {
    const json& sg = root_["definitions"]["subgraphs"][sg_index];
    Pointer sp = Pointer("/definitions/subgraphs") / sg_index;
    const std::map<std::string, std::pair<json, Pointer>> promoted = promoted_widgets(jn, np, sg);
    std::vector<Binding> bindings;
    if (sg.contains("inputs") && sg["inputs"].is_array()) {
      for (const auto& si : sg["inputs"]) {
        Binding b;
        std::string name = si.is_object() && si.contains("name") && si["name"].is_string()
                               ? si["name"].get<std::string>() : "";
        for (const auto& oi : outer_inputs)
          if (oi.name == name) {
            b.from_node = oi.from_node;
            b.from_slot = oi.from_slot;
            if (oi.value) {
              b.value = oi.value;
              b.where = oi.where;
            }
          }
        auto p = promoted.find(name);
        if (!b.from_node && !b.value && p != promoted.end()) {
          b.value = p->second.first;
          b.where.push_back(p->second.second);
        }
        bindings.push_back(std::move(b));
      }
    }
    std::string prefix = flat + ":";
    flatten(sg, sp, prefix, bindings, mode == 0 ? 0 : mode, depth + 1);
    // What feeds each output of the instance.
    for (const auto& [id, l] : read_links(sg, sp, source_, links_seen_)) {
      (void)id;
      if (l.target != std::to_string(kSubgraphOutput)) continue;
      outputs_[{flat, l.target_slot}] = origin_of(l, prefix, bindings);
    }
  }

  void resolve_instance_outputs() {
    for (auto& [id, n] : graph_.nodes) {
      (void)id;
      for (auto& in : n.inputs) {
        for (int hop = 0; in.from_node && hop <= kMaxSubgraphDepth; ++hop) {
          auto it = outputs_.find({*in.from_node, in.from_slot});
          if (it == outputs_.end()) break;
          in.from_node = it->second.from_node;
          in.from_slot = it->second.from_slot;
        }
      }
    }
  }
};

// An API prompt is an object of node objects. A node the browser's backend does not know is exported
// without its class_type (it has inputs and _meta only), so one such node must not turn the whole prompt
// into "not a workflow": it is read as a node of no known type and reported as not covered.
bool looks_like_api(const json& wf) {
  if (!wf.is_object() || wf.empty()) return false;
  bool typed = false;
  for (auto it = wf.begin(); it != wf.end(); ++it) {
    if (!it.value().is_object()) return false;
    typed = typed || it.value().contains("class_type");
  }
  return typed;
}

// An API prompt links by node id: a link to an id the prompt lacks is a broken prompt (ComfyUI refuses
// it), never a missing input the figures quietly do without.
void refuse_dangling_links(const Graph& g, const Pointer& at, const std::string& source) {
  for (const auto& [id, n] : g.nodes)
    for (const auto& in : n.inputs)
      if (in.from_node && !g.node(*in.from_node))
        throw FileFormatError(source, (at / id / "inputs" / in.name).to_string() + ": " + n.type + " #" + id +
                                          "'s input '" + in.name + "' links to output " + std::to_string(in.from_slot) +
                                          " of node '" + text_preview(*in.from_node) + "', which is not in the prompt; "
                                          "link it to a node of the prompt (export it again from ComfyUI)");
}

Graph build_api(const json& wf, const Pointer& at, const std::string& source) {
  if (wf.size() > kMaxWorkflowNodes)
    throw FileFormatError(source, (at.empty() ? std::string("the prompt") : at.to_string()) + ": " +
                                      std::to_string(wf.size()) + " nodes, more than the " +
                                      std::to_string(kMaxWorkflowNodes) + " a workflow may have (real ones have under 1,000)");
  Graph g;
  g.api_format = true;
  for (auto it = wf.begin(); it != wf.end(); ++it) {
    const json& jn = it.value();
    Pointer np = at / it.key();
    const bool untyped = !jn.contains("class_type");
    if (!untyped && !jn["class_type"].is_string())
      throw FileFormatError(source, np.to_string() + "/class_type: expected a string");
    Node n;
    n.id = it.key();
    n.type = untyped ? std::string(kNoClassType) : jn["class_type"].get<std::string>();
    n.where = np;
    n.title = title_of(jn, n.type);
    if (jn.contains("inputs")) {
      if (!jn["inputs"].is_object()) throw FileFormatError(source, np.to_string() + "/inputs: expected an object");
      for (auto ii = jn["inputs"].begin(); ii != jn["inputs"].end(); ++ii) {
        Input in;
        in.name = ii.key();
        const json& v = ii.value();
        // A link is [upstream id (string), output slot]; anything else is a literal.
        if (v.is_array() && v.size() == 2 && (v[0].is_string() || v[0].is_number_integer()) && v[1].is_number_integer()) {
          in.from_node = id_text(v[0], source, np);
          in.from_slot = v[1].get<int>();
        } else {
          in.value = v;
          in.where.push_back(np / "inputs" / ii.key());
        }
        n.inputs.push_back(std::move(in));
      }
    }
    g.nodes[n.id] = std::move(n);
  }
  refuse_dangling_links(g, at, source);
  return g;
}

}  // namespace

Graph build_graph(const json& wf, const std::string& source) {
  if (wf.is_object() && wf.contains("nodes")) return Flattener(wf, source).run();
  if (looks_like_api(wf)) return build_api(wf, Pointer(), source);
  // The body of ComfyUI's POST /prompt wraps the API prompt.
  if (wf.is_object() && wf.contains("prompt") && looks_like_api(wf["prompt"]))
    return build_api(wf["prompt"], Pointer("/prompt"), source);
  throw FileFormatError(source,
                        "not a ComfyUI workflow: expected the UI format (an object with a 'nodes' array, as saved by "
                        "Workflow > Save) or the API format ({\"<id>\": {\"class_type\": ..., \"inputs\": {...}}}, "
                        "as saved by Export (API))");
}

json parse_workflow_text(const std::string& text, const std::string& source) {
  JsonLimits limits;
  limits.expected = "a ComfyUI workflow nests about 8 levels";
  return read_json(text, source, limits);
}

}  // namespace headroom::workflow
