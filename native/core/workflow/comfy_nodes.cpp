// comfy_nodes.json -> ComfyNodes. Every key is checked: a typo in the data fails the first use with
// the file, the node type and the key, instead of silently dropping a node from the estimate.
#include "core/workflow/comfy_nodes.hpp"

#include <algorithm>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/data_reader.hpp"
#include "core/estimate/kv_cache_sampling.hpp"
#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {
namespace {

using nlohmann::json;

using Reader = DataReader;

LoaderRole read_role(const json& j, const Reader& r) {
  if (!j.is_object()) r.fail("role", "expected an object");
  r.known(j, {"folders", "file_widgets"});
  LoaderRole role;
  if (!j.contains("folders")) r.fail("folders", "is missing");
  role.folders = r.words(j["folders"], "folders");
  if (!j.contains("file_widgets") || !j["file_widgets"].is_array() || j["file_widgets"].empty())
    r.fail("file_widgets", "expected a non-empty array of widget lists");
  for (const auto& alt : j["file_widgets"]) {
    role.file_widgets.push_back(r.words(alt, "file_widgets"));
    if (role.file_widgets.back().empty()) r.fail("file_widgets", "expected non-empty widget lists");
  }
  return role;
}

// {aspect_ratio, megapixels, multiple, minimum: widget names; ratios: {choice: [w, h]}} (ResolutionSelector).
ResolutionRule read_resolution(const json& j, const Reader& r) {
  if (!j.is_object()) r.fail("(entry)", "expected {aspect_ratio, megapixels, multiple, minimum, ratios}");
  r.known(j, {"aspect_ratio", "megapixels", "multiple", "minimum", "ratios"});
  ResolutionRule rule{r.text(j, "aspect_ratio", true), r.text(j, "megapixels", true), r.text(j, "multiple"),
                      r.text(j, "minimum"), {}};
  const auto it = j.find("ratios");
  if (it == j.end() || !it->is_object() || it->empty())
    r.fail("ratios", "expected {\"1:1 (Square)\": [1, 1], ...}: each aspect choice with its width and height ratio");
  for (const auto& [choice, pair] : it->items()) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer() ||
        pair[0].get<long long>() < 1 || pair[1].get<long long>() < 1 || pair[0].get<long long>() > 64 ||
        pair[1].get<long long>() > 64)
      r.fail("ratios." + choice, "expected [width, height], two whole numbers from 1 to 64");
    rule.ratios[choice] = {pair[0].get<int>(), pair[1].get<int>()};
  }
  return rule;
}

// latent / audio_latent / note: the widgets that carry the latent's size, the note shown with it, and
// a node that computes a latent's sides (resolution).
void read_latent_rules(const json& j, const Reader& r, ComfyNode& n) {
  if (auto it = j.find("latent"); it != j.end()) {
    if (!it->is_object()) r.fail("latent", "expected {width, height, batch[, length or layers]}");
    Reader lr{r.file, r.where + ".latent"};
    lr.known(*it, {"width", "height", "batch", "length", "layers"});
    n.latent = LatentSize{lr.text(*it, "width", true), lr.text(*it, "height", true), lr.text(*it, "batch"),
                          lr.text(*it, "length"), lr.text(*it, "layers")};
    if (!n.latent->length.empty() && !n.latent->layers.empty())
      lr.fail("layers", "a latent counts either video frames (length) or image layers (layers), not both");
  }
  if (auto it = j.find("audio_latent"); it != j.end()) {
    if (!it->is_object()) r.fail("audio_latent", "expected {seconds, batch}");
    if (n.latent) r.fail("audio_latent", "a node sets either a latent or an audio_latent, not both");
    Reader ar{r.file, r.where + ".audio_latent"};
    ar.known(*it, {"seconds", "batch"});
    n.audio_latent = AudioLatentSize{ar.text(*it, "seconds", true), ar.text(*it, "batch")};
  }
  if (auto it = j.find("token_latent"); it != j.end()) {
    if (!it->is_object()) r.fail("token_latent", "expected {tokens, batch}");
    if (n.latent || n.audio_latent) r.fail("token_latent", "a node sets one kind of latent: latent, audio_latent or token_latent");
    Reader tr{r.file, r.where + ".token_latent"};
    tr.known(*it, {"tokens", "batch"});
    n.token_latent = TokenLatentSize{tr.text(*it, "tokens", true), tr.text(*it, "batch")};
  }
  n.latent_note = r.text(j, "note");
  if (!n.latent_note.empty() && !n.latent && !n.audio_latent && !n.token_latent) r.fail("note", "is only read for latent nodes");
  if (auto it = j.find("resolution"); it != j.end()) n.resolution = read_resolution(*it, Reader{r.file, r.where + ".resolution"});
}

// The node's image size rules: one kind for the node, or one per mode of its mode widget (whose widget must be
// the first of the node's own widgets, so the reader finds the mode before it knows the order of the rest).
void read_image_rules(const json& j, const Reader& r, ComfyNode& n) {
  read_size_rules(j, r, n.image);
  if (auto it = j.find("image_modes"); it != j.end()) {
    if (n.image.any()) r.fail("image_modes", "and a size rule of the whole node both set the size: keep one");
    n.image_modes = read_image_modes(*it, Reader{r.file, r.where + ".image_modes"});
    if (!n.widgets || n.widgets->empty() || n.widgets->front() != n.image_modes->widget)
      r.fail("widgets", "expected the image_modes widget '" + n.image_modes->widget + "' first");
  }
  n.upscale_model_file = r.text(j, "upscale_model_file");
}

void read_decode(const json& j, const Reader& r, ComfyNode& n) {
  static const std::pair<const char*, DecodeKind> kDecodes[] = {
      {"full", DecodeKind::Full}, {"tiled", DecodeKind::Tiled}, {"headroom", DecodeKind::Headroom}};
  const std::string decode = r.text(j, "decode");
  for (const auto& [name, kind] : kDecodes)
    if (decode == name) n.decode = kind;
  if (!decode.empty() && n.decode == DecodeKind::None)
    r.fail("decode", "expected full, tiled or headroom, got '" + decode + "'");
}

// switch and generates: the sub-objects that name widgets and inputs of their own.
void read_switch_and_generator(const json& j, const Reader& r, ComfyNode& n) {
  if (auto it = j.find("switch"); it != j.end()) {
    if (!it->is_object()) r.fail("switch", "expected {widget, on_true, on_false}");
    Reader sr{r.file, r.where + ".switch"};
    sr.known(*it, {"widget", "on_true", "on_false"});
    n.switch_widget = sr.text(*it, "widget", true);
    n.on_true = sr.text(*it, "on_true", true);
    n.on_false = sr.text(*it, "on_false", true);
  }
  if (auto it = j.find("generates"); it != j.end()) {
    if (!it->is_object()) r.fail("generates", "expected {input, max_tokens}");
    Reader gr{r.file, r.where + ".generates"};
    gr.known(*it, {"input", "max_tokens", "tokens_per_unit"});
    n.generator_input = gr.text(*it, "input", true);
    n.new_tokens_widget = gr.text(*it, "max_tokens", true);
    if (auto per = it->find("tokens_per_unit"); per != it->end()) {
      if (!per->is_number() || !(per->get<double>() > 0) || per->get<double>() > 1000)
        gr.fail("tokens_per_unit", "expected the tokens written per unit of max_tokens, above 0 and at most 1000, got " +
                                       per->dump());
      n.new_tokens_per_unit = per->get<double>();
    }
  }
}

void read_stage(const json& j, const Reader& r, ComfyNode& n) {
  n.stage = r.text(j, "stage");
  // The stage names the estimator reports (memory_model.cpp); a typo would file every such node nowhere.
  static const char* const kStages[] = {"text_generate", "text_encode", "clip_vision_encode", "audio_encode",
                                       "vae_encode", "sample", "vae_decode"};
  if (!n.stage.empty() && std::find(std::begin(kStages), std::end(kStages), n.stage) == std::end(kStages))
    r.fail("stage", "expected text_generate, text_encode, clip_vision_encode, audio_encode, vae_encode, sample or vae_decode, "
                    "got '" + n.stage + "'");
  if (n.decode != DecodeKind::None && n.stage.empty()) n.stage = "vae_decode";
}

// "sampler": a sampler_kinds name, with "block_frames": the widget of its frames per block.
void read_sampler(const json& j, const Reader& r, ComfyNode& n, const ComfyNodes& so_far) {
  n.sampler = r.text(j, "sampler");
  n.block_frames_widget = r.text(j, "block_frames");
  if (n.sampler.empty()) {
    if (!n.block_frames_widget.empty()) r.fail("block_frames", "is only read with 'sampler'");
    return;
  }
  auto kind = so_far.sampler_kinds.find(n.sampler);
  if (kind == so_far.sampler_kinds.end()) r.fail("sampler", "names '" + n.sampler + "', which is not a sampler_kinds entry");
  n.sampling = kind->second;
}

// sampler_kinds: {"source": ..., "kinds": {sampler name: cost kind}}; optional (every sampler is standard).
void read_sampler_kinds(const json& data, const std::string& file, ComfyNodes& out) {
  auto section = data.find("sampler_kinds");
  if (section == data.end()) return;
  const Reader r{file, "sampler_kinds"};
  if (!section->is_object()) r.fail("(section)", "expected {\"source\": ..., \"kinds\": {sampler name: cost kind}}");
  r.known(*section, {"source", "kinds"});
  r.text(*section, "source", true);
  auto kinds = section->find("kinds");
  if (kinds == section->end() || !kinds->is_object()) r.fail("kinds", "expected an object {sampler name: cost kind}");
  for (const auto& [name, cost] : kinds->items()) {
    const auto kind = cost.is_string() ? sampling_kind_of(cost.get<std::string>()) : std::nullopt;
    if (!kind) Reader{file, "sampler_kinds.kinds"}.fail(name, "expected a cost kind (standard or kv_cache_blocks), got " + cost.dump());
    out.sampler_kinds[name] = *kind;
  }
}

// frames_concat: {input, widget, values}, the input whose sides the joined latent keeps along the frame axis.
ComfyNode::FramesConcat read_frames_concat(const json& f, const Reader& r) {
  const Reader fr{r.file, r.where + ".frames_concat"};
  if (!f.is_object()) fr.fail("(entry)", "expected {input, widget, values}");
  fr.known(f, {"input", "widget", "values"});
  if (!f.contains("values")) fr.fail("values", "is missing");
  return {fr.text(f, "input", true), fr.text(f, "widget", true), fr.words(f["values"], "values")};
}

ComfyNode read_node(const std::string& type, const json& j, const Reader& r, const ComfyNodes& so_far) {
  if (!j.is_object()) r.fail("(entry)", "expected an object");
  r.known(j, {"source", "widgets", "loads", "latent", "note", "latent_from_image", "reference_image", "cfg",
              "cfg_at_least", "decode", "tile_widget", "mode_widget", "output", "neutral", "virtual",
              "value_outputs", "size_from_image", "switch", "run_note", "generates", "stage", "image_input",
              "image_through", "image_size", "image_size_unknown", "latent_scale", "image_total_pixels", "image_scale_by",
              "audio_latent", "token_latent", "image_file", "resolution", "passes", "clip_vision_output", "sampler",
              "block_frames", "clip_output", "latent_frames", "frames_concat", "image_side", "image_pad",
              "image_multiple", "image_model_scale", "image_match", "image_modes", "upscale_model_file"});
  ComfyNode n;
  n.type = type;
  n.source = r.text(j, "source");
  if (j.contains("widgets")) n.widgets = r.words(j["widgets"], "widgets", true);
  n.loads = r.text(j, "loads");
  if (!n.loads.empty() && !so_far.loader_roles.count(n.loads))
    r.fail("loads", "names '" + n.loads + "', which is not a loader_roles entry");
  read_latent_rules(j, r, n);
  n.latent_from_image = r.text(j, "latent_from_image");
  n.image_input = r.text(j, "image_input");
  n.image_through = r.text(j, "image_through");
  n.image_size_unknown = r.text(j, "image_size_unknown");
  n.image_file = r.text(j, "image_file");
  read_image_rules(j, r, n);
  n.reference_image = r.flag(j, "reference_image");
  n.cfg_widget = r.text(j, "cfg");
  if (auto it = j.find("cfg_at_least"); it != j.end()) {
    if (!it->is_number()) r.fail("cfg_at_least", "expected a number");
    n.cfg_at_least = it->get<double>();
  }
  read_decode(j, r, n);
  n.tile_widget = r.text(j, "tile_widget");
  n.mode_widget = r.text(j, "mode_widget");
  n.output = r.flag(j, "output");
  n.clip_vision_output = r.flag(j, "clip_vision_output");
  if (auto it = j.find("clip_output"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int>() < 0) r.fail("clip_output", "expected the output slot of the CLIP, got " + it->dump());
    n.clip_output = it->get<int>();
  }
  n.latent_frames = r.text(j, "latent_frames");
  if (auto it = j.find("frames_concat"); it != j.end()) n.frames_concat = read_frames_concat(*it, r);
  n.neutral = r.flag(j, "neutral");
  n.is_virtual = r.flag(j, "virtual");
  if (auto it = j.find("passes"); it != j.end()) {
    if (!it->is_string()) r.fail("passes", "expected the name of the input the node hands on, got " + it->dump());
    if (!n.is_virtual) r.fail("passes", "is only read for virtual nodes (the frontend removes them before queueing)");
    n.passes = it->get<std::string>();
  }
  if (j.contains("value_outputs")) n.value_outputs = r.words(j["value_outputs"], "value_outputs", true);
  n.size_from_image = r.flag(j, "size_from_image");
  if (!n.image_input.empty() && n.latent_from_image.empty() && !n.size_from_image)
    r.fail("image_input", "is only read for latent_from_image and size_from_image nodes");
  n.run_note = r.text(j, "run_note");
  if (auto it = j.find("latent_scale"); it != j.end()) {
    if (!it->is_number() || it->get<double>() <= 1.0 || it->get<double>() > 8.0)
      r.fail("latent_scale", "expected a factor above 1 and at most 8 by which the node enlarges the latent, got " + it->dump());
    n.latent_scale = it->get<double>();
  }
  read_switch_and_generator(j, r, n);
  read_sampler(j, r, n, so_far);
  read_stage(j, r, n);
  return n;
}

// {"inputs": [input names], "source": ...} under `key`, or none when the section is absent.
std::vector<std::string> input_list(const json& data, const char* key, const std::string& file) {
  auto section = data.find(key);
  if (section == data.end()) return {};
  Reader r{file, key};
  if (!section->is_object()) r.fail("(section)", "expected {\"inputs\": [input names], \"source\": ...}");
  r.known(*section, {"inputs", "source"});
  if (!section->contains("inputs")) r.fail("inputs", "is missing");
  r.text(*section, "source", true);
  return r.words((*section)["inputs"], "inputs");
}

// named_pass_throughs: [{source, sets, gets, name_widget, scope}]. Each setter and getter becomes a virtual
// node whose one widget is the name, so the reader never runs them; a type also listed under nodes fails,
// since two entries for one node would disagree.
void read_named_pass_throughs(const json& data, const std::string& file, ComfyNodes& out) {
  auto section = data.find("named_pass_throughs");
  if (section == data.end()) return;
  if (!section->is_array()) Reader{file, "top level"}.fail("named_pass_throughs", "expected an array of {source, sets, gets, name_widget, scope}");
  static const std::pair<const char*, NamedScope> kScopes[] = {{"graph", NamedScope::Graph},
                                                               {"graph_then_parents", NamedScope::GraphThenParents}};
  for (std::size_t i = 0; i < section->size(); ++i) {
    const json& j = (*section)[i];
    const Reader r{file, "named_pass_throughs[" + std::to_string(i) + "]"};
    if (!j.is_object()) r.fail("(entry)", "expected {source, sets, gets, name_widget, scope}");
    r.known(j, {"source", "sets", "gets", "name_widget", "scope"});
    NamedPassThrough rule{r.text(j, "source", true), r.text(j, "sets", true), r.text(j, "gets", true),
                          r.text(j, "name_widget", true)};
    const std::string scope = r.text(j, "scope", true);
    const auto* known = std::find_if(std::begin(kScopes), std::end(kScopes), [&](const auto& s) { return scope == s.first; });
    if (known == std::end(kScopes)) r.fail("scope", "expected graph or graph_then_parents, got '" + scope + "'");
    rule.scope = known->second;
    if (rule.setter == rule.getter) r.fail("gets", "names the setter's own type '" + rule.setter + "'");
    for (const std::string* type : {&rule.setter, &rule.getter}) {
      ComfyNode n;
      n.type = *type;
      n.source = rule.source;
      n.widgets = std::vector<std::string>{rule.name_widget};
      n.is_virtual = true;
      if (!out.nodes.emplace(*type, std::move(n)).second)
        r.fail(type == &rule.setter ? "sets" : "gets",
               "names '" + *type + "', which already has a node entry (under nodes or another named pass-through); keep one");
    }
    out.named_pass_throughs.push_back(std::move(rule));
  }
}

}  // namespace

const NamedPassThrough* ComfyNodes::setter_rule(const std::string& type) const {
  return rule_with(&NamedPassThrough::setter, type);
}

const NamedPassThrough* ComfyNodes::getter_rule(const std::string& type) const {
  return rule_with(&NamedPassThrough::getter, type);
}

const NamedPassThrough* ComfyNodes::rule_with(std::string NamedPassThrough::*side, const std::string& type) const {
  for (const auto& rule : named_pass_throughs)
    if (rule.*side == type) return &rule;
  return nullptr;
}

const ComfyNode* ComfyNodes::find(const std::string& type) const {
  auto it = nodes.find(type);
  return it == nodes.end() ? nullptr : &it->second;
}

ComfyNodes load_comfy_nodes(const json& data, const std::string& file) {
  ComfyNodes out;
  Reader top{file, "top level"};
  if (!data.is_object()) top.fail("(document)", "expected an object");
  auto roles = data.find("loader_roles");
  if (roles == data.end() || !roles->is_object()) top.fail("loader_roles", "expected an object {role: {...}}");
  for (const auto& [name, j] : roles->items()) out.loader_roles[name] = read_role(j, Reader{file, "loader_roles." + name});
  auto wd = data.find("weight_dtypes");
  if (wd == data.end() || !wd->is_object() || !wd->contains("precisions") || !(*wd)["precisions"].is_object())
    top.fail("weight_dtypes", "expected {\"precisions\": {widget value: precision}}");
  for (const auto& [value, p] : (*wd)["precisions"].items()) {
    if (!p.is_string() || p.get<std::string>().empty())
      Reader{file, "weight_dtypes.precisions"}.fail(value, "expected a precision name");
    out.weight_dtypes[value] = p.get<std::string>();
  }
  // Optional: without it no sampled latent is traced to an unknown node (sizes fall back to the notes).
  out.sampled_latent_inputs = input_list(data, "sampled_latent_inputs", file);
  // Optional: without them a sampler's latent or model is traced no further than the node next to it.
  out.latent_through_inputs = input_list(data, "latent_through_inputs", file);
  out.model_through_inputs = input_list(data, "model_through_inputs", file);
  read_sampler_kinds(data, file, out);
  auto nodes = data.find("nodes");
  if (nodes == data.end() || !nodes->is_object() || nodes->empty())
    top.fail("nodes", "expected an object {class_type: {...}}");
  for (const auto& [type, j] : nodes->items())
    out.nodes.emplace(type, read_node(type, j, Reader{file, "nodes." + type}, out));
  read_named_pass_throughs(data, file, out);
  return out;
}

const ComfyNodes& comfy_nodes() {
  static const ComfyNodes nodes = load_comfy_nodes(data_file("comfy_nodes.json"), data_file_label("comfy_nodes.json"));
  return nodes;
}

const std::vector<std::string>* widget_names(const std::string& type, const json& values) {
  const ComfyNode* n = comfy_nodes().find(type);
  if (n && n->image_modes && values.is_array() && !values.empty() && values[0].is_string()) {
    const auto mode = n->image_modes->modes.find(values[0].get<std::string>());
    if (mode != n->image_modes->modes.end()) return &mode->second.widgets;
  }
  return n && n->widgets ? &*n->widgets : nullptr;
}

}  // namespace headroom::workflow
