// Named pass-throughs (issue 19, item 1): KJNodes' SetNode/GetNode and Easy-Use's "easy setNode"/"easy
// getNode" carry a link by name; the frontend resolves them when it queues, so they change nothing, and a
// getter whose name no setter sets is a workflow the frontend cannot queue.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow.hpp"
#include "support/input_errors.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

// FLUX.1 dev in the UI format: links 1 MODEL, 2 CLIP, 3 VAE (to the decode), 4 CONDITIONING (positive),
// 5 CONDITIONING (negative), 6 LATENT (empty latent), 7 LATENT (sampled), 8 IMAGE.
json flux_ui() {
  return json::parse(R"({
    "nodes": [
      {"id": 1, "type": "UNETLoader", "mode": 0, "widgets_values": ["flux1-dev.safetensors", "default"]},
      {"id": 2, "type": "DualCLIPLoader", "mode": 0, "widgets_values": ["t5xxl_fp16.safetensors", "clip_l.safetensors", "flux"]},
      {"id": 3, "type": "VAELoader", "mode": 0, "widgets_values": ["ae.safetensors"]},
      {"id": 4, "type": "CLIPTextEncode", "mode": 0, "widgets_values": ["a"], "inputs": [{"name": "clip", "link": 2}]},
      {"id": 5, "type": "EmptySD3LatentImage", "mode": 0, "widgets_values": [1344, 768, 2]},
      {"id": 6, "type": "KSampler", "mode": 0, "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1],
       "inputs": [{"name": "model", "link": 1}, {"name": "positive", "link": 4}, {"name": "negative", "link": 5},
                  {"name": "latent_image", "link": 6}]},
      {"id": 7, "type": "VAEDecode", "mode": 0, "inputs": [{"name": "samples", "link": 7}, {"name": "vae", "link": 3}]},
      {"id": 8, "type": "SaveImage", "mode": 0, "widgets_values": ["x"], "inputs": [{"name": "images", "link": 8}]}
    ],
    "links": [[1, 1, 0, 6, 0, "MODEL"], [2, 2, 0, 4, 0, "CLIP"], [3, 3, 0, 7, 1, "VAE"], [4, 4, 0, 6, 1, "CONDITIONING"],
              [5, 4, 0, 6, 2, "CONDITIONING"], [6, 5, 0, 6, 3, "LATENT"], [7, 6, 0, 7, 0, "LATENT"], [8, 7, 0, 8, 0, "IMAGE"]]
  })");
}

json& node_of(json& wf, int id) {
  for (auto& n : wf["nodes"])
    if (n["id"] == id) return n;
  FAIL("no node " << id);
  return wf;
}

int next_id(const json& list, bool links) {
  int top = 0;
  for (const auto& e : list) top = std::max(top, (links ? e[0] : e["id"]).get<int>());
  return top + 1;
}

// Adds a setter named `name` fed by `from` (output 0) and returns its id.
int add_setter(json& wf, const std::string& type, const std::string& name, int from, const std::string& title = "") {
  const int id = next_id(wf["nodes"], false), link = next_id(wf["links"], true);
  json n = {{"id", id}, {"type", type}, {"mode", 0}, {"widgets_values", {name}},
            {"inputs", {{{"name", "MODEL"}, {"type", "*"}, {"link", link}}}}, {"outputs", json::array()}};
  if (!title.empty()) n["title"] = title;
  wf["nodes"].push_back(n);
  wf["links"].push_back({link, from, 0, id, 0, "*"});
  return id;
}

// Adds a getter named `name` and returns its id.
int add_getter(json& wf, const std::string& type, const std::string& name, const std::string& title = "") {
  const int id = next_id(wf["nodes"], false);
  json n = {{"id", id}, {"type", type}, {"mode", 0}, {"widgets_values", {name}}, {"outputs", json::array()}};
  if (!title.empty()) n["title"] = title;
  wf["nodes"].push_back(n);
  return id;
}

// Link `link` now leaves node `from` (a getter, a setter's output), as when a user puts a pair on it.
void relink(json& wf, int link, int from) {
  for (auto& l : wf["links"])
    if (l[0] == link) {
      l[1] = from;
      l[2] = 0;
    }
}

// `wf` with link `link` carried by a setter/getter pair of `pair` ({setter, getter} types).
json through_pair(json wf, int link, const std::pair<std::string, std::string>& pair, const std::string& name) {
  int origin = 0;
  for (const auto& l : wf["links"])
    if (l[0] == link) origin = l[1].get<int>();
  add_setter(wf, pair.first, name, origin);
  relink(wf, link, add_getter(wf, pair.second, name));
  return wf;
}

const std::pair<std::string, std::string> kKJ{"SetNode", "GetNode"}, kEasy{"easy setNode", "easy getNode"};

std::string error_of(const json& wf) {
  return support::error_text([&] { analyse_workflow(wf, "wf.json"); });
}

}  // namespace

TEST_CASE("named pass-throughs: the rules load as virtual nodes whose one widget is the name", "[workflow][named_links]") {
  for (const auto& [set, get] : {kKJ, kEasy}) {
    const ComfyNodes& c = comfy_nodes();
    REQUIRE(c.setter_rule(set));
    CHECK(c.setter_rule(set) == c.getter_rule(get));
    CHECK(c.setter_rule(get) == nullptr);
    for (const std::string& type : {set, get}) {
      REQUIRE(c.find(type));
      CHECK(c.find(type)->is_virtual);
      CHECK(*c.find(type)->widgets == std::vector<std::string>{"Constant"});
    }
  }
  CHECK(comfy_nodes().setter_rule("SetNode")->scope == NamedScope::GraphThenParents);
  CHECK(comfy_nodes().setter_rule("easy setNode")->scope == NamedScope::Graph);
}

TEST_CASE("named pass-throughs: a bad rule fails naming the entry and the key", "[workflow][named_links]") {
  json data = {{"weight_dtypes", {{"precisions", json::object()}}}, {"loader_roles", json::object()},
               {"nodes", {{"SaveImage", {{"output", true}}}}}};
  auto error = [&](const json& rule) {
    data["named_pass_throughs"] = json::array({rule});
    return support::error_text([&] { load_comfy_nodes(data, "nodes-test.json"); });
  };
  const json good = {{"source", "s"}, {"sets", "Set"}, {"gets", "Get"}, {"name_widget", "name"}, {"scope", "graph"}};
  CHECK(error(good).empty());
  json bad = good;
  bad["scope"] = "everywhere";
  CHECK_THAT(error(bad), Catch::Contains("named_pass_throughs[0]: 'scope' expected graph or graph_then_parents, got 'everywhere'"));
  bad = good;
  bad["sets"] = "SaveImage";
  CHECK_THAT(error(bad), Catch::Contains("'sets' names 'SaveImage', which already has a node entry"));
  bad = good;
  bad.erase("name_widget");
  CHECK_THAT(error(bad), Catch::Contains("'name_widget' is missing"));
}

TEST_CASE("named pass-throughs: a pair on every link of a Flux workflow changes nothing", "[workflow][named_links]") {
  const json plain = analyse_workflow(flux_ui(), "plain").to_json();
  REQUIRE(plain["size_known"] == true);
  for (const auto& pair : {kKJ, kEasy})
    for (int link = 1; link <= 8; ++link) {
      DYNAMIC_SECTION(pair.first << " on link " << link) {
        CHECK(analyse_workflow(through_pair(flux_ui(), link, pair, "v" + std::to_string(link)), "paired").to_json() == plain);
      }
    }
  SECTION("every link at once, one name each") {
    json wf = flux_ui();
    for (int link = 1; link <= 8; ++link) wf = through_pair(wf, link, kKJ, "v" + std::to_string(link));
    CHECK(analyse_workflow(wf, "paired").to_json() == plain);
  }
}

TEST_CASE("named pass-throughs: chains of getters, setters and Reroutes, and a setter's own output", "[workflow][named_links]") {
  const json plain = analyse_workflow(flux_ui(), "plain").to_json();
  SECTION("the VAE through Set a -> Get a -> Set b -> Reroute -> Get b") {
    json wf = flux_ui();
    add_setter(wf, "SetNode", "a", 3);
    const int get_a = add_getter(wf, "GetNode", "a");
    const int reroute = next_id(wf["nodes"], false), link = next_id(wf["links"], true);
    wf["nodes"].push_back({{"id", reroute}, {"type", "Reroute"}, {"mode", 0}, {"inputs", {{{"name", ""}, {"link", link}}}}});
    wf["links"].push_back({link, get_a, 0, reroute, 0, "VAE"});
    add_setter(wf, "SetNode", "b", reroute);
    relink(wf, 3, add_getter(wf, "GetNode", "b"));
    CHECK(analyse_workflow(wf, "chain").to_json() == plain);
  }
  SECTION("the model through a KJNodes SetNode's own output") {
    json wf = flux_ui();
    relink(wf, 1, add_setter(wf, "SetNode", "model", 1));
    CHECK(analyse_workflow(wf, "set output").to_json() == plain);
  }
  SECTION("one setter, a getter per reader (the conditioning feeds both sides)") {
    json wf = flux_ui();
    add_setter(wf, "SetNode", "cond", 4);
    relink(wf, 4, add_getter(wf, "GetNode", "cond"));
    relink(wf, 5, add_getter(wf, "GetNode", "cond"));
    CHECK(analyse_workflow(wf, "fan out").to_json() == plain);
  }
}

TEST_CASE("named pass-throughs: a width from a PrimitiveInt through a pair is the value that runs", "[workflow][named_links]") {
  json wf = flux_ui();
  wf["nodes"].push_back({{"id", 30}, {"type", "PrimitiveInt"}, {"mode", 0}, {"widgets_values", {1600, "fixed"}}});
  add_setter(wf, "SetNode", "width", 30);
  const int get = add_getter(wf, "GetNode", "width");
  wf["links"].push_back({40, get, 0, 5, 0, "INT"});
  node_of(wf, 5)["inputs"] = {{{"name", "width"}, {"widget", {{"name", "width"}}}, {"link", 40}}};
  const WorkflowInfo info = analyse_workflow(wf, "width by name");
  CHECK(info.job.width == 1600);  // not the 1344 the latent node still stores
  CHECK(info.job.height == 768);
}

TEST_CASE("named pass-throughs: a getter whose name no setter sets is bad input, unless nothing reads it",
          "[workflow][named_links]") {
  for (const auto& pair : {kKJ, kEasy}) {
    DYNAMIC_SECTION(pair.second) {
      json wf = flux_ui();
      add_setter(wf, pair.first, "vae", 3);
      const int get = add_getter(wf, pair.second, "vea", "Get_vea");
      relink(wf, 3, get);
      const std::string e = error_of(wf);
      CHECK_THAT(e, Catch::Contains(pair.second + " #" + std::to_string(get) + " ('Get_vea')"));
      CHECK_THAT(e, Catch::Contains("read by VAEDecode #7"));
      CHECK_THAT(e, Catch::Contains("gets the name 'vea', which no " + pair.first + " sets"));
      CHECK_THAT(e, Catch::Contains("ComfyUI's frontend cannot queue the workflow"));
      CHECK_THAT(e, Catch::StartsWith("wf.json: /nodes/"));
      // No name at all: the packs resolve an empty name to nothing, even where a setter has none either.
      json nameless = flux_ui();
      add_setter(nameless, pair.first, "", 3);
      relink(nameless, 3, add_getter(nameless, pair.second, ""));
      CHECK_THAT(error_of(nameless), Catch::Contains("gets no name (its widget 'Constant' is empty or not text)"));
      node_of(nameless, 10)["widgets_values"] = {7};
      CHECK_THAT(error_of(nameless), Catch::Contains("gets no name"));
      // Read by nothing, or by a muted node only: the frontend never resolves it.
      json unused = flux_ui();
      add_getter(unused, pair.second, "nothing");
      CHECK(error_of(unused).empty());
      node_of(wf, 7)["mode"] = 2;
      CHECK(error_of(wf).empty());
      node_of(wf, 7)["mode"] = 4;  // bypassed: it hands its inputs on, so they are resolved
      CHECK_THAT(error_of(wf), Catch::Contains("'vea'"));
    }
  }
}

TEST_CASE("named pass-throughs: two setters of one name in a getter's graph are bad input naming both",
          "[workflow][named_links]") {
  json wf = flux_ui();
  const int first = add_setter(wf, "SetNode", "vae", 3, "Set_vae");
  const int second = add_setter(wf, "SetNode", "vae", 1);
  relink(wf, 3, add_getter(wf, "GetNode", "vae"));
  CHECK_THAT(error_of(wf), Catch::Contains("which both SetNode #" + std::to_string(first) + " ('Set_vae') and SetNode #" +
                                           std::to_string(second) + " set in its graph"));
  // Different packs keep different names: an Easy-Use setter of the same name is no rival.
  json mixed = flux_ui();
  add_setter(mixed, "SetNode", "vae", 3);
  add_setter(mixed, "easy setNode", "vae", 1);
  relink(mixed, 3, add_getter(mixed, "GetNode", "vae"));
  CHECK(analyse_workflow(mixed, "mixed").to_json() == analyse_workflow(flux_ui(), "plain").to_json());
}

namespace {

// flux_ui() with its VAEDecode and SaveImage moved into a subgraph instance (#20) whose one input is the
// VAE, fed from outside unless `vae_from_outside` is false; inside, a getter of `getter` type named "vae"
// feeds the decode's VAE (so the VAE comes only through the name).
json decode_in_subgraph(const std::string& getter, bool vae_from_outside = false) {
  json wf = flux_ui();
  json& nodes = wf["nodes"];
  for (std::size_t i = nodes.size(); i-- > 0;)
    if (nodes[i]["id"] == 7 || nodes[i]["id"] == 8) nodes.erase(i);
  json links = json::array();
  for (const auto& l : wf["links"])
    if (l[0] != 3 && l[0] != 7 && l[0] != 8) links.push_back(l);
  links.push_back({7, 6, 0, 20, 0, "LATENT"});
  if (vae_from_outside) links.push_back({3, 3, 0, 20, 1, "VAE"});
  wf["links"] = links;
  json instance_inputs = {{{"name", "samples"}, {"link", 7}}};
  if (vae_from_outside) instance_inputs.push_back({{"name", "vae"}, {"link", 3}});
  nodes.push_back({{"id", 20}, {"type", "sg"}, {"mode", 0}, {"inputs", instance_inputs}});
  wf["definitions"]["subgraphs"] = json::array({{
      {"id", "sg"}, {"inputs", {{{"name", "samples"}}, {{"name", "vae"}}}}, {"outputs", json::array()},
      {"nodes", {{{"id", 1}, {"type", "VAEDecode"}, {"mode", 0}, {"inputs", {{{"name", "samples"}, {"link", 1}}, {{"name", "vae"}, {"link", 2}}}}},
                 {{"id", 2}, {"type", "SaveImage"}, {"mode", 0}, {"widgets_values", {"x"}}, {"inputs", {{{"name", "images"}, {"link", 3}}}}},
                 {{"id", 3}, {"type", getter}, {"mode", 0}, {"widgets_values", {"vae"}}, {"title", "Get_vae"}}}},
      {"links", {{{"id", 1}, {"origin_id", -10}, {"origin_slot", 0}, {"target_id", 1}, {"target_slot", 0}},
                 {{"id", 2}, {"origin_id", 3}, {"origin_slot", 0}, {"target_id", 1}, {"target_slot", 1}},
                 {{"id", 3}, {"origin_id", 1}, {"origin_slot", 0}, {"target_id", 2}, {"target_slot", 0}}}}}});
  return wf;
}

// A setter of `type` named "vae" fed by the VAELoader, put into the subgraph definition (inside) or the top graph.
void add_vae_setter(json& wf, const std::string& type, bool inside) {
  if (!inside) {
    add_setter(wf, type, "vae", 3);
    return;
  }
  json& sg = wf["definitions"]["subgraphs"][0];
  sg["nodes"].push_back({{"id", 4}, {"type", type}, {"mode", 0}, {"widgets_values", {"vae"}}, {"inputs", {{{"name", "VAE"}, {"link", 4}}}}});
  sg["links"].push_back({{"id", 4}, {"origin_id", -10}, {"origin_slot", 1}, {"target_id", 4}, {"target_slot", 0}});
}

}  // namespace

TEST_CASE("named pass-throughs: the scope each pack looks in", "[workflow][named_links]") {
  const json plain = analyse_workflow(flux_ui(), "plain").to_json();
  auto same_job = [&](const json& wf) {
    const WorkflowInfo info = analyse_workflow(wf, "scoped");
    REQUIRE(info.job.vae);
    CHECK(info.job.vae->model == analyse_workflow(flux_ui(), "plain").job.vae->model);
    CHECK(info.decoders.size() == 1);
    CHECK(info.to_json()["samplers"] == plain["samplers"]);
  };
  SECTION("KJNodes: a SetNode at the top level serves a GetNode inside a subgraph") {
    json wf = decode_in_subgraph("GetNode");
    add_vae_setter(wf, "SetNode", false);
    same_job(wf);
  }
  SECTION("Easy-Use looks in the getter's own graph only") {
    json wf = decode_in_subgraph("easy getNode");
    add_vae_setter(wf, "easy setNode", false);
    CHECK_THAT(error_of(wf), Catch::Contains("easy getNode #20:3 ('Get_vae'), read by VAEDecode #20:1, gets the name 'vae', "
                                             "which no easy setNode sets in its graph;"));
    json inside = decode_in_subgraph("easy getNode", true);
    add_vae_setter(inside, "easy setNode", true);
    same_job(inside);
  }
  SECTION("a setter inside a subgraph is not seen from the top level") {
    json wf = decode_in_subgraph("GetNode", true);
    add_vae_setter(wf, "SetNode", true);
    relink(wf, 6, add_getter(wf, "GetNode", "vae"));  // the sampler's latent from a name only the subgraph sets
    CHECK_THAT(error_of(wf), Catch::Contains("which no SetNode sets in its graph or the graphs around it"));
  }
  SECTION("KJNodes: two SetNodes of the name around the subgraph, none inside: the pack refuses to pick") {
    json wf = decode_in_subgraph("GetNode");
    add_vae_setter(wf, "SetNode", false);
    add_vae_setter(wf, "SetNode", false);
    CHECK_THAT(error_of(wf), Catch::Contains("which both SetNode #21 and SetNode #22 set in the graphs around it"));
  }
  SECTION("KJNodes: the getter's own graph first, so a SetNode inside shadows the top level's") {
    json wf = decode_in_subgraph("GetNode", true);
    add_vae_setter(wf, "SetNode", true);
    add_setter(wf, "SetNode", "vae", 1);  // the model under the same name outside: not what the decode gets
    same_job(wf);
  }
}
