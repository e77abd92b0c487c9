// Workflow -> Job. Node semantics: ../shared/facts/comfyui-internals.md (4.1 UNETLoader, 5 latent nodes,
// 2.4 VAEDecodeTiled); format: ../shared/real-workflows/INDEX.md.
#include "core/workflow/workflow.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/image_size.hpp"
#include "core/workflow/workflow_models_dir.hpp"
#include "core/workflow/loaded_image.hpp"
#include "core/workflow/workflow_names.hpp"

namespace headroom::workflow {

namespace {

const ComfyNode* node_info(const std::string& type) { return comfy_nodes().find(type); }
bool is_output(const std::string& t) { const auto* n = node_info(t); return n && n->output; }
bool is_virtual(const std::string& t) { const auto* n = node_info(t); return n && n->is_virtual; }

std::string text(const std::optional<json>& v) { return v && v->is_string() ? v->get<std::string>() : ""; }

std::optional<long long> integer(const std::optional<json>& v) {
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<long long>();
  if (v->is_number_float()) {
    // Whole values only, and only where the conversion is defined (1e300 would be undefined behaviour).
    const double d = v->get<double>();
    if (d != std::floor(d) || !(std::fabs(d) < 9.0e18)) return std::nullopt;
    return static_cast<long long>(d);
  }
  return std::nullopt;
}

// A literal from the end of a chain of value nodes (comfy_nodes.json value_outputs): a link to a node that
// passes a widget on (the frontend's PrimitiveNode, PrimitiveInt, Int, WanCameraEmbedding's width/height/
// length) is followed to that widget, so the value that really runs is read, not the stale copy the
// receiving node keeps. `where` lists the source first, then that copy, so a rewrite changes both and the
// workflow stays consistent in the editor. A number sent as text ("960", as a custom Int node stores it)
// counts as the number.
std::optional<json> resolved_value(const Graph& g, const Node& n, const std::string& name,
                                   std::vector<Pointer>* where = nullptr, int depth = 0);

// The width (slot 0) or height (slot 1) a ResolutionSelector computes from its own widgets, each possibly
// linked to a value node; nothing when a widget is missing or its aspect choice is not in the rule.
std::optional<json> resolution_output(const Graph& g, const Node& src, const ResolutionRule& rule, int slot, int depth) {
  if (slot != 0 && slot != 1) return std::nullopt;
  auto number = [&](const std::string& widget) -> std::optional<double> {
    if (widget.empty()) return std::nullopt;
    const auto v = resolved_value(g, src, widget, nullptr, depth + 1);
    return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
  };
  const auto aspect = resolved_value(g, src, rule.aspect_ratio, nullptr, depth + 1);
  const auto megapixels = number(rule.megapixels);
  if (!aspect || !aspect->is_string() || !megapixels) return std::nullopt;
  const auto ratio = rule.ratios.find(aspect->get<std::string>());
  if (ratio == rule.ratios.end()) return std::nullopt;
  const auto multiple = number(rule.multiple), minimum = number(rule.minimum);
  const auto sides = resolution_sides(ratio->second, *megapixels, static_cast<long long>(multiple.value_or(8)),
                                      static_cast<long long>(minimum.value_or(0)));
  if (!sides) return std::nullopt;
  return json(slot == 0 ? sides->first : sides->second);
}

std::optional<json> resolved_value(const Graph& g, const Node& n, const std::string& name,
                                   std::vector<Pointer>* where, int depth) {
  const Input* in = n.input(name);
  if (in && in->from_node && depth < 16) {
    const Node* src = g.node(*in->from_node);
    const ComfyNode* info = src ? node_info(src->type) : nullptr;
    // A computed size is the computation's, not the receiver's stale copy; no widget holds it to rewrite.
    if (info && info->resolution)
      if (auto v = resolution_output(g, *src, *info->resolution, in->from_slot, depth)) return v;
    if (info && in->from_slot >= 0 && static_cast<std::size_t>(in->from_slot) < info->value_outputs.size() &&
        !info->value_outputs[in->from_slot].empty()) {
      if (auto v = resolved_value(g, *src, info->value_outputs[in->from_slot], where, depth + 1)) {
        if (where) where->insert(where->end(), in->where.begin(), in->where.end());
        if (v->is_string()) {
          const std::string t = v->get<std::string>();
          if (!t.empty() && t.size() < 10 && std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); }))
            return json(std::stoll(t));
        }
        return v;
      }
    }
  }
  return g.value(n, name, where);
}

// Text tokens a diffusion component adds to its attention sequence: of two models with the same
// weights (Ideogram 4's conditional and unconditional files), the one that runs the text beside the
// image has the longer sequence and so the larger activations.
std::uint64_t sequence_text_tokens(const Component& c) {
  const ModelInfo* m = c.model.empty() ? nullptr : find_model(c.model);
  if (!m || !m->diffusion || !m->diffusion->text_in_sequence) return 0;
  return static_cast<std::uint64_t>(m->diffusion->text_tokens);
}

// ComfyUI's frontend leaves frontend-only nodes (a Reroute) out of the prompt it queues and links each
// consumer to what the Reroute was fed. The reader does the same once, so that no rule below (a value
// node's widget, a size measured from an image, one reference image fed to two conditionings) has to
// look through them: a Reroute on a width link made a camera video read the stale stored 512 px.
void link_past_virtual_nodes(Graph& g) {
  for (auto& [id, n] : g.nodes)
    for (auto& in : n.inputs)
      for (int hops = 0; in.from_node && hops < 64; ++hops) {
        const Node* from = g.node(*in.from_node);
        if (!from || !is_virtual(from->type) || from->inputs.empty() || !from->inputs.front().from_node) break;
        in.from_slot = from->inputs.front().from_slot;
        in.from_node = from->inputs.front().from_node;
      }
}

// Which nodes run: outputs and their ancestors. Muted nodes stop the walk; bypassed nodes pass their
// inputs through, so the walk continues past them without running them.
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

// Inputs linked to a node that is not in the graph: a subgraph output wired to nothing inside (the
// video_ltx2_i2v_lora template's VIDEO). ComfyUI refuses such a prompt, so what should feed it never
// runs; saying where the chain breaks beats a bare "no diffusion model loader runs".
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

// The loader roles of comfy_nodes.json ("loads") that are read differently, parsed once per loader;
// a role added to the data without code reads as Other (its files are recognised, nothing more).
enum class LoaderKind { Diffusion, Checkpoint, TextEncoder, Vae, ClipVision, Lora, StyleModel, Other };

LoaderKind loader_kind(const std::string& role) {
  static const std::pair<const char*, LoaderKind> kKinds[] = {
      {"diffusion", LoaderKind::Diffusion}, {"checkpoint", LoaderKind::Checkpoint},
      {"text_encoder", LoaderKind::TextEncoder}, {"vae", LoaderKind::Vae}, {"clip_vision", LoaderKind::ClipVision},
      {"lora", LoaderKind::Lora}, {"style_model", LoaderKind::StyleModel}};
  for (const auto& [name, kind] : kKinds)
    if (role == name) return kind;
  return LoaderKind::Other;
}

class Analyser {
 public:
  Analyser(const Graph& g, const ParseOptions& opt) : g_(g), opt_(opt) {}

  WorkflowInfo run() {
    info_.api_format = g_.api_format;
    auto run = executed_nodes(g_);
    run_ = run;
    for (auto& note : unfed_input_notes(g_, run)) notes().push_back(std::move(note));
    // Deterministic order: node ids as numbers where they are numbers.
    std::vector<const Node*> nodes;
    for (const auto& id : run) nodes.push_back(g_.node(id));
    for (const Node* n : nodes) visit(*n);
    finish();
    return std::move(info_);
  }

 private:
  const Graph& g_;
  const ParseOptions& opt_;
  WorkflowInfo info_;
  std::set<std::string> run_;
  std::vector<Component> diffusion_;       // one per diffusion loader that runs
  std::set<std::string> reference_sources_;  // "node:slot" feeding a ReferenceLatent
  std::vector<std::string> diffusion_files_;
  std::vector<Component> checkpoint_text_encoders_;
  std::optional<Component> checkpoint_vae_;
  int latent_nodes_ = 0;
  double latent_scale_ = 1.0;  // the largest latent upsampler that runs
  bool one_pass_ = false;      // the job's diffusion model runs one forward pass, not a sampling loop
  long long best_pixels_ = -1;
  bool image_sized_latent_ = false;  // the latent follows an input image (inpaint, Kontext, img2img)
  std::optional<UnknownNode> image_unknown_;  // the first such image whose size the workflow does not give
  std::optional<ImageSize> image_size_;       // the largest such image whose size it gives
  std::string image_latent_type_;
  double cfg_ = -1;
  // Text encoder loaders by node id, and the nodes that run one of them as a language model.
  struct LoadedEncoder {
    Component component;
    std::string file;
  };
  std::map<std::string, LoadedEncoder> encoders_by_node_;
  struct PendingGeneration {
    std::string node, loader;  // "TextGenerate #12", the loader node id feeding it ("" = none found)
    int new_tokens = 0;
  };
  std::vector<PendingGeneration> generations_;
  std::vector<std::string>& notes() { return info_.job.notes; }
  // --models: one walk of the folder and one answer per file and loader role, however many loaders name
  // it and however its path is spelled ("x", "./x", ".//x" are one file): keyed by the file's identity
  // and name (the name takes part in recognition), or by the whole path when it cannot be opened.
  ModelsFolderIndex models_index_;
  using FactsKey = std::tuple<std::optional<FileIdentity>, std::string, std::string>;
  std::map<FactsKey, HeaderFacts> facts_;

  const HeaderFacts& header_facts(const std::string& path, const std::string& role) {
    const std::optional<FileIdentity> id = file_identity(path);
    FactsKey key{id, id ? path_file_name(path) : path, role};
    auto it = facts_.find(key);
    if (it == facts_.end()) it = facts_.emplace(std::move(key), read_header_facts(path, role)).first;
    return it->second;
  }

  std::optional<WidgetRef> ref(const Node& n, const std::string& widget) {
    WidgetRef r;
    r.node_id = n.id;
    r.widget = widget;
    auto v = resolved_value(g_, n, widget, &r.where);
    if (!v) return std::nullopt;
    r.value = *v;
    return r;
  }

  Component component(const Node& n, const std::string& file, const std::string& role, Loader& rec) {
    Component c;
    c.file = file;
    NameGuess guess = resolve_file(file, role);
    c.model = guess.model;
    c.precision = guess.precision;
    for (auto& s : guess.notes) notes().push_back(s);
    if (!c.model.empty()) rec.size_source = "file_name";
    if (opt_.reads_files()) read_header(n, c, role, rec);
    rec.model = c.model;
    rec.precision = c.precision;
    if (c.model.empty() && !c.weight_bytes) rec.size_source = "unknown";
    return c;
  }

  // ComfyUI's own folder lists first (they hold extra_model_paths.yaml's folders), then the models folder.
  std::optional<std::string> find_file(const std::string& file, const std::string& role) {
    if (auto path = find_in_model_folders(opt_.model_folders, file, role)) return path;
    if (opt_.models_dir.empty()) return std::nullopt;
    return find_model_file(opt_.models_dir, file, role, &models_index_);
  }

  std::string searched() const {
    if (opt_.model_folders.empty()) return opt_.models_dir;
    return "ComfyUI's model folders" + (opt_.models_dir.empty() ? std::string() : " or " + opt_.models_dir);
  }

  void read_header(const Node& n, Component& c, const std::string& role, Loader& rec) {
    auto path = find_file(c.file, role);
    if (!path) {
      notes().push_back("'" + c.file + "' not found under " + searched() + "; estimated from its name");
      return;
    }
    const HeaderFacts& facts = header_facts(*path, role);
    if (!facts.error.empty()) {
      rec.file_problem = facts.file_problem;
      if (!facts.file_problem.empty()) {
        const std::string what = facts.file_problem == "empty"       ? "is empty (0 bytes)"
                                 : facts.file_problem == "truncated" ? "is shorter than its header says (truncated)"
                                 : facts.file_problem == "bad_header" ? "has a header that does not parse"
                                                                      : "cannot be read";
        rec.file_problem_text = n.type + " #" + n.id + " loads '" + c.file + "' (" + *path + "), which " + what +
                                (rec.broken() ? ": a broken download? Its size is unknown, and no verdict rests on it"
                                              : "; estimated from its name");
        notes().push_back(rec.file_problem_text + " (" + facts.error + ")");
        return;
      }
      notes().push_back("could not read the header of " + *path + " (" + facts.error + "); estimated from its name");
      return;
    }
    rec.size_source = "header";
    if (facts.model.empty()) {
      // What ComfyUI loads is the file, so the header decides over a name that may only share a word
      // with a catalog model (a latent upscaler named after the family it upscales for). The header's
      // byte count may cover tensors other than weights, so the file's size is stated only as the
      // least the unknown model holds.
      std::error_code ec;
      const std::uintmax_t size = std::filesystem::file_size(*path, ec);
      const std::string holds = ec ? std::string() : " (the file holds " + format_bytes(size) + ", the least it takes in memory)";
      if (const LoaderKind kind = loader_kind(role); kind == LoaderKind::Diffusion || kind == LoaderKind::Checkpoint) {
        // Nothing estimates an unknown model; its weight_bytes carries the file's size to the answer
        // that says what is not covered.
        if (!ec) c.weight_bytes = static_cast<std::uint64_t>(size);
        notes().push_back("the header of " + *path + " matches no catalog model" + holds + ": '" + c.file +
                          "' is an unknown model" + (c.model.empty() ? "" : ", not " + c.model + " as its name suggests"));
        c.model.clear();
        c.precision.clear();
        return;
      }
      // Text encoders, CLIP vision and VAEs keep the name's guess: they ship in layouts the inspector
      // does not read (GGUF text encoders keep llama.cpp's tensor names), and an encoder dropped from
      // the count would lower the peak it belongs to.
      rec.size_source = c.model.empty() ? "unknown" : "file_name";
      notes().push_back("the header of " + *path + " matches no catalog model" + holds + "; " +
                        (c.model.empty() ? "not recognised" : "estimated from its name as " + c.model));
      return;
    }
    c.model = facts.model;
    if (!facts.precision.empty()) c.precision = facts.precision;
    // A checkpoint's bytes include its text encoders and VAE, which are counted separately.
    if (facts.gpu_bytes && loader_kind(role) != LoaderKind::Checkpoint) c.weight_bytes = facts.gpu_bytes;
    notes().push_back("'" + c.file + "': model, precision and size read from " + *path);
  }

  void loader(const Node& n, const std::string& role) {
    const LoaderKind kind = loader_kind(role);
    // The first alternative whose first widget the node has (CLIPLoader's clip_name), else the last.
    const auto& alternatives = comfy_nodes().loader_roles.at(role).file_widgets;
    const std::vector<std::string>* chosen = &alternatives.back();
    for (const auto& alt : alternatives)
      if (n.input(alt.front())) {
        chosen = &alt;
        break;
      }
    const std::vector<std::string>& file_widgets = *chosen;
    for (const auto& w : file_widgets) {
      std::string file = text(resolved_value(g_, n, w));
      if (file.empty()) {
        if (n.input(w)) notes().push_back(n.type + " #" + n.id + ": " + w + " is not a literal file name; not counted");
        continue;
      }
      Loader rec{n.id, n.type, role, file, "", ""};
      if (kind == LoaderKind::Lora) {
        notes().push_back("LoRA '" + file + "' (#" + n.id + ") is patched into the weights; its size is unknown "
                          "without --models and not counted");
        if (opt_.reads_files()) {
          auto path = find_file(file, role);
          HeaderFacts f = path ? header_facts(*path, role) : HeaderFacts{};
          rec.file_problem = f.file_problem;
          if (f.gpu_bytes) {
            rec.size_source = "header";
            info_.job.lora_bytes += *f.gpu_bytes;
            notes().back() = "LoRA '" + file + "' (#" + n.id + "): " + std::to_string(*f.gpu_bytes) +
                             " bytes read from " + *path;
          }
        }
        info_.loaders.push_back(rec);
        continue;
      }
      if (kind == LoaderKind::StyleModel) {
        notes().push_back("style model '" + file + "' (#" + n.id + ") is not in the catalog and not counted");
        info_.loaders.push_back(rec);
        continue;
      }
      Component c = component(n, file, role, rec);
      if (kind == LoaderKind::Diffusion) {
        std::string dtype = text(resolved_value(g_, n, "weight_dtype"));
        std::string forced = precision_from_weight_dtype(dtype);
        if (!forced.empty()) {
          if (c.precision == "fp8_scaled")
            notes().push_back("weight_dtype " + dtype + " ignored for scaled-fp8 '" + file +
                              "' (ComfyUI keeps scaled fp8 as it is)");
          else {
            c.precision = forced;
            c.weight_bytes.reset();  // the header's bytes are for the file's own dtype
            rec.precision = forced;
          }
        } else if (dtype == "auto") {
          notes().push_back(n.type + " #" + n.id + " has weight_dtype auto: Headroom loads fp8 only when the "
                            "16-bit weights do not fit; estimated at the file's precision");
        }
        if (auto r = ref(n, "weight_dtype")) info_.weight_dtype.push_back(*r);
        if (!already_loaded(diffusion_, c, n)) {
          diffusion_.push_back(c);
          diffusion_files_.push_back(file);
        }
      } else if (kind == LoaderKind::Checkpoint) {
        diffusion_.push_back(c);
        diffusion_files_.push_back(file);
        checkpoint_companions(c);
      } else if (kind == LoaderKind::TextEncoder) {
        if (c.model.empty()) notes().push_back("text encoder '" + file + "' not recognised; not counted");
        else if (!already_loaded(info_.job.text_encoders, c, n)) info_.job.text_encoders.push_back(c);
        encoders_by_node_[n.id] = {c, file};
        if (text(resolved_value(g_, n, "device")) == "cpu") info_.job.text_encoder_on_cpu = true;
        if (auto r = ref(n, "device")) info_.text_encoder_device.push_back(*r);
      } else if (kind == LoaderKind::Vae) {
        if (c.model.empty()) notes().push_back("VAE '" + file + "' not recognised; the catalog VAE of the model is used");
        else info_.job.vae = c;
      } else if (kind == LoaderKind::ClipVision) {
        if (c.model.empty()) notes().push_back("CLIP vision '" + file + "' is not in the catalog and not counted");
        else info_.job.clip_vision = c;
      }
      info_.loaders.push_back(rec);
    }
  }

  // The first node Headroom does not know behind a sampler's latent input (Reroutes are already linked
  // past), or nothing when every such input comes from a known node.
  std::optional<UnknownNode> unknown_latent_source() const {
    for (const auto& id : run_) {
      const Node* n = g_.node(id);
      for (const auto& name : comfy_nodes().sampled_latent_inputs) {
        const Node* from = n ? source_of(*n, name) : nullptr;
        if (from && !node_info(from->type)) return UnknownNode{from->id, from->type, "a node Headroom does not know"};
      }
    }
    return std::nullopt;
  }

  // A known node feeds the sampler a latent whose size no rule reads (an encoded input clip, an edit size
  // of 0 that keeps the input image's): the size is as unknown as behind an unknown node.
  std::optional<UnknownNode> unsized_latent_source() const {
    for (const auto& id : run_) {
      const Node* n = g_.node(id);
      for (const auto& name : comfy_nodes().sampled_latent_inputs) {
        const Node* from = n ? source_of(*n, name) : nullptr;
        if (from) return UnknownNode{from->id, from->type, "whose output size Headroom does not read (it follows an input image or clip)"};
      }
    }
    return std::nullopt;
  }

  // ComfyUI caches a node's output by its class and inputs, not by its id, so loaders of the same file
  // with the same settings give one model: one copy on the card and in RAM, however many nodes name it
  // (five umt5 loaders were counted as five, 53 GiB of host RAM).
  bool already_loaded(const std::vector<Component>& loaded, const Component& c, const Node& n) {
    for (const auto& other : loaded)
      if (other.file == c.file && other.precision == c.precision && other.model == c.model) {
        notes().push_back(n.type + " #" + n.id + " loads '" + c.file + "' again with the same settings: ComfyUI "
                          "reuses the loaded copy, counted once");
        return true;
      }
    return false;
  }

  // 2 a known sampled model, 1 an unknown one, 0 a known model that runs one forward pass (models.json one_pass).
  static int standing(const Component& c) {
    if (c.model.empty()) return 1;
    const ModelInfo* m = find_model(c.model);
    return m && !m->one_pass.empty() ? 0 : 2;
  }

  // The diffusion component that sets the peak: a known sampled model over an unknown one over a one-pass
  // model, then the most bytes, then the longer text sequence (sequence_text_tokens).
  std::size_t largest_diffusion() const {
    std::size_t pick = 0;
    for (std::size_t i = 1; i < diffusion_.size(); ++i) {
      const int rank = standing(diffusion_[i]), pick_rank = standing(diffusion_[pick]);
      const std::uint64_t bytes = component_bytes(diffusion_[i]), pick_bytes = component_bytes(diffusion_[pick]);
      if (rank != pick_rank ? rank > pick_rank
                            : bytes != pick_bytes ? bytes > pick_bytes
                                                  : sequence_text_tokens(diffusion_[i]) > sequence_text_tokens(diffusion_[pick]))
        pick = i;
    }
    return pick;
  }

  // The bytes a diffusion component holds: its header's, else the catalog's figure at its precision;
  // 0 when neither is known (an unknown model never wins over a known one).
  static std::uint64_t component_bytes(const Component& c) {
    if (c.weight_bytes) return *c.weight_bytes;
    const ModelInfo* m = c.model.empty() ? nullptr : find_model(c.model);
    if (!m) return 0;
    const PrecisionInfo* p = find_precision(c.precision.empty() ? m->default_precision : c.precision);
    return p ? weight_bytes(*m, *p) * static_cast<std::uint64_t>(std::max(1, m->experts)) : 0;
  }

  // A checkpoint bundles the companions of its diffusion model (Comfy-Org's flux1-dev-fp8 and
  // flux1-schnell-fp8 carry CLIP-L, an fp8 T5-XXL and the Flux VAE): an fp8 checkpoint holds its T5
  // encoder in fp8 too, the small CLIP in 16 bit.
  void checkpoint_companions(const Component& c) {
    const ModelInfo* m = c.model.empty() ? nullptr : find_model(c.model);
    if (m && (!m->companion_text_encoders.empty() || !m->companion_vae.empty())) {
      const PrecisionInfo* p = c.precision.empty() ? nullptr : find_precision(c.precision);
      const bool fp8 = p && p->kind == PrecisionKind::Fp8;
      std::string parts;
      checkpoint_text_encoders_.clear();
      for (const auto& name : m->companion_text_encoders) {
        const ModelInfo* te = find_model(name);
        std::string precision = fp8 && te && te->family == "t5_encoder" ? "fp8_e4m3fn" : "";
        checkpoint_text_encoders_.push_back(Component{name, precision, std::nullopt, c.file});
        parts += (parts.empty() ? "" : ", ") + name + (precision.empty() ? "" : " (" + precision + ")");
      }
      if (!m->companion_vae.empty()) {
        checkpoint_vae_ = Component{m->companion_vae, "", std::nullopt, c.file};
        parts += (parts.empty() ? "" : " and ") + m->companion_vae;
      }
      notes().push_back("checkpoint '" + c.file + "' bundles " + parts);
    } else if (c.model.empty()) {
      notes().push_back("checkpoint '" + c.file + "' is not a catalog model; it cannot be estimated");
    }
  }

  void latent(const Node& n, const ComfyNode& info) {
    ++latent_nodes_;
    const LatentSize& size = *info.latent;
    auto w = ref(n, size.width), h = ref(n, size.height), b = ref(n, size.batch);
    auto len = size.length.empty() ? std::nullopt : ref(n, size.length);
    std::optional<long long> wi, hi;
    if (w) wi = integer(w->value);
    if (h) hi = integer(h->value);
    // A literal that is not a positive whole number is a bad value, not a computed one: say which.
    const std::pair<const std::string*, const std::optional<WidgetRef>*> sizes[] = {{&size.width, &w},
                                                                                    {&size.height, &h}};
    for (const auto& [name, r] : sizes) {
      if (!*r) continue;  // no literal: linked to a node that computes it (reported below)
      auto value = integer((*r)->value);
      const Input* in = n.input(*name);
      const Node* from = in && in->from_node ? g_.node(*in->from_node) : nullptr;
      if (from && node_info(from->type) && node_info(from->type)->size_from_image && value && *value > 0)
        notes().push_back(n.type + " #" + n.id + ": " + *name + " comes from an input image (" + from->type + " #" +
                          from->id + "); the workflow's stored " + std::to_string(*value) + " px is assumed");
      // Linked to a node that computes it (not one that passes a widget on): reported below.
      const ComfyNode* from_info = from ? node_info(from->type) : nullptr;
      if ((value && *value > 0) || (from && !(from_info && !from_info->value_outputs.empty()))) continue;
      notes().push_back(n.type + " #" + n.id + ": " + *name + " is " + json_preview((*r)->value, 40) +
                        ", expected a whole number of pixels from 16 to 16384; size unknown");
      return;
    }
    if (!wi.has_value() || !hi.has_value() || *wi <= 0 || *hi <= 0) {
      notes().push_back(n.type + " #" + n.id + ": width/height are computed by other nodes; size unknown");
      return;
    }
    long long frames = len ? integer(len->value).value_or(1) : 1;
    long long batch = b ? integer(b->value).value_or(1) : 1;
    // ComfyUI caps sizes at 16384 px and batches at 4096; beyond 2^20 the product below could overflow.
    constexpr long long kSane = 1 << 20;
    if (*wi > kSane || *hi > kSane || frames < 1 || frames > kSane || batch < 1 || batch > kSane) {
      notes().push_back(n.type + " #" + n.id + ": width/height/length/batch_size out of range; ignored");
      return;
    }
    long long pixels = *wi * *hi * frames * batch;
    if (pixels <= best_pixels_) return;  // the largest latent sets the peak
    best_pixels_ = pixels;
    info_.job.width = static_cast<int>(*wi);
    info_.job.height = static_cast<int>(*hi);
    info_.job.frames = static_cast<int>(frames);
    info_.job.batch = static_cast<int>(batch);
    info_.latent_node = n.type;
    info_.size_known = true;
    info_.is_video = len.has_value();
    info_.width = {*w};
    info_.height = {*h};
    info_.length = len ? std::vector<WidgetRef>{*len} : std::vector<WidgetRef>{};
    info_.batch = b ? std::vector<WidgetRef>{*b} : std::vector<WidgetRef>{};
    if (!info.latent_note.empty()) notes().push_back(info.latent_note);
  }

  // An audio latent: its size is the clip's length in seconds (a float widget) and the batch; the model's
  // arch.audio turns the seconds into latent positions.
  void audio_latent(const Node& n, const ComfyNode& info) {
    ++latent_nodes_;
    const AudioLatentSize& size = *info.audio_latent;
    auto sec = ref(n, size.seconds), b = ref(n, size.batch.empty() ? std::string("batch_size") : size.batch);
    if (!sec) {
      notes().push_back(n.type + " #" + n.id + ": " + size.seconds + " is computed by other nodes; size unknown");
      return;
    }
    const double seconds = sec->value.is_number() ? sec->value.get<double>() : -1;
    long long batch = b ? integer(b->value).value_or(1) : 1;
    if (!(seconds > 0 && seconds <= 3600) || batch < 1 || batch > 4096) {
      notes().push_back(n.type + " #" + n.id + ": " + size.seconds + " is " + json_preview(sec->value, 40) + ", batch " +
                        std::to_string(batch) + ", expected seconds from 0 to 3600 and a batch from 1 to 4096; size unknown");
      return;
    }
    if (info_.size_known && seconds * batch <= info_.job.seconds * info_.job.batch) return;  // the longest clip sets the peak
    info_.job.seconds = seconds;
    info_.job.batch = static_cast<int>(batch);
    info_.latent_node = n.type;
    info_.size_known = true;
    info_.batch = b ? std::vector<WidgetRef>{*b} : std::vector<WidgetRef>{};
  }

  // A latent with the size of an image (inpaint, InstructPix2Pix, the Kontext rescale): the size is the
  // image's where the workflow sets it, else unknown (a loaded image's size is not in the workflow).
  void image_latent(const Node& n, const ComfyNode& info) {
    image_sized_latent_ = true;
    notes().push_back(n.type + " #" + n.id + info.latent_from_image);
    const ImageSize s = image_size_of(
        g_, n, [this](const Node& m, const std::string& w) { return integer(resolved_value(g_, m, w)); },
        [this](const Node& m, const std::string& w) -> std::optional<double> {
          const auto v = resolved_value(g_, m, w);
          if (!v || !v->is_number()) return std::nullopt;
          return v->get<double>();
        },
        opt_.input_dir.empty() ? LoadedImageSize{} : [this](const Node& m, const std::string& w) {
          return loaded_image_size(g_, m, w, opt_.input_dir);
        });
    if (!s.known()) {
      if (!image_unknown_) image_unknown_ = UnknownNode{s.node_id, s.node_type, s.why};
      return;
    }
    if (!s.note.empty()) notes().push_back(s.note);
    if (s.node_id != n.id)  // the Kontext rescale sets its own size, and its note says so
      notes().push_back(n.type + " #" + n.id + ": the image is " + std::to_string(*s.width) + "x" +
                        std::to_string(*s.height) + " px, set by " + s.node_type + " #" + s.node_id);
    const auto pixels = [](const ImageSize& i) { return static_cast<long long>(*i.width) * *i.height; };
    if (!image_size_ || pixels(s) > pixels(*image_size_)) {
      image_size_ = s;
      image_latent_type_ = n.type;
    }
  }

  // An image-sized latent sets the size only where no latent node does: a Kontext workflow that samples
  // an EmptySD3LatentImage keeps that size (and its widgets for presets) beside its rescaled reference.
  void size_from_image_latent() {
    if (info_.size_known || !image_size_) return;
    info_.job.width = *image_size_->width;
    info_.job.height = *image_size_->height;
    info_.job.frames = 1;
    info_.job.batch = 1;
    info_.latent_node = image_latent_type_;
    info_.size_known = true;
    // No widget refs: a preset that rewrote the latent's size would have to rewrite the image's.
  }

  void sampler_cfg(const Node& n, const std::string& widget) {
    auto v = resolved_value(g_, n, widget);
    if (!v || !v->is_number()) return;
    cfg_ = std::max(cfg_, v->get<double>());
  }

  void decoder(const Node& n, const ComfyNode& info) {
    Decoder d{n.id, n.type, n.where, std::nullopt, std::nullopt};
    if (!info.tile_widget.empty()) d.tile_size = ref(n, info.tile_widget);
    if (!info.mode_widget.empty()) d.mode = ref(n, info.mode_widget);
    info_.decoders.push_back(d);
  }

  // The node feeding input `name`, through Reroutes and other frontend-only nodes.
  const Node* source_of(const Node& n, const std::string& name) const {
    const Input* in = n.input(name);
    const Node* from = in && in->from_node ? g_.node(*in->from_node) : nullptr;
    for (int hops = 0; from && is_virtual(from->type) && hops < 64; ++hops) {
      const Input* through = from->inputs.empty() ? nullptr : &from->inputs.front();
      from = through && through->from_node ? g_.node(*through->from_node) : nullptr;
    }
    return from;
  }

  void generation(const Node& n, const ComfyNode& info) {
    const Node* from = source_of(n, info.generator_input);
    auto tokens = resolved_value(g_, n, info.new_tokens_widget);
    const bool whole = tokens && tokens->is_number_integer() && tokens->get<long long>() >= 1 &&
                       tokens->get<long long>() <= (1 << 20);
    generations_.push_back({n.type + " #" + n.id, from ? from->id : "", whole ? tokens->get<int>() : 0});
  }

  // What each language-model node writes, now that every loader has been read.
  void resolve_generations() {
    for (const auto& p : generations_) {
      auto it = encoders_by_node_.find(p.loader);
      if (it == encoders_by_node_.end()) {
        notes().push_back(p.node + ": no text encoder loader feeds it; what it writes is not counted");
        continue;
      }
      const LoadedEncoder& e = it->second;
      const ModelInfo* m = e.component.model.empty() ? nullptr : find_model(e.component.model);
      if (!m || !m->encoder || m->encoder->kv_elems_per_token <= 0) {
        notes().push_back(p.node + ": its language model '" + e.file + "' is " +
                          (m ? "not known to write text (no arch.generation in models.json)" : "not in the catalog") +
                          "; what it writes is not counted");
        continue;
      }
      if (p.new_tokens < 1) {
        notes().push_back(p.node + ": max_length is not a number Headroom can read; what it writes is not counted");
        continue;
      }
      info_.job.text_generations.push_back({e.component, p.new_tokens});
      notes().push_back(p.node + ": " + m->name + " writes up to " + std::to_string(p.new_tokens) +
                        " tokens before the prompt is encoded (stage text_generate)");
    }
  }

  void visit(const Node& n) {
    const ComfyNode* info = node_info(n.type);
    if (!info) {
      info_.unknown_nodes.push_back({n.id, n.type, ""});
      return;
    }
    if (!info->stage.empty()) info_.node_stages[n.id] = info->stage;
    if (!info->loads.empty()) return loader(n, info->loads);
    if (info->latent) return latent(n, *info);
    if (info->audio_latent) return audio_latent(n, *info);
    if (!info->cfg_widget.empty()) return sampler_cfg(n, info->cfg_widget);
    if (info->cfg_at_least) {
      cfg_ = std::max(cfg_, *info->cfg_at_least);  // several conditionings plus uncond run batched
      return;
    }
    if (info->decode != DecodeKind::None) return decoder(n, *info);
    if (!info->latent_from_image.empty()) {
      // A text encoder that also makes the latent (TextEncodeQwenImage21) still reports what it leaves out.
      if (!info->run_note.empty()) notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
      return image_latent(n, *info);
    }
    if (info->reference_image) {
      // One reference image is one set of tokens, however many conditionings it is attached to (the
      // klein edit templates give the same latent to the positive and the negative side).
      const Input* in = n.input("latent");
      const std::string source = in && in->from_node ? *in->from_node + ":" + std::to_string(in->from_slot) : n.id;
      if (reference_sources_.insert(source).second) ++info_.job.reference_images;
      return;
    }
    // A latent upsampler does not set the size: a second sampler runs on its larger latent, which sets the peak.
    if (info->latent_scale > 1.0) latent_scale_ = std::max(latent_scale_, info->latent_scale);
    if (!info->generator_input.empty()) return generation(n, *info);
    if (!info->run_note.empty()) notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
    if (info->neutral || info->is_virtual || !info->value_outputs.empty() || info->size_from_image ||
        !info->switch_widget.empty() || !info->run_note.empty())
      return;
    info_.unknown_nodes.push_back({n.id, n.type, ""});
  }

  // An audio model is sized by the clip's seconds, an image or video model by its pixels: a length read
  // for the other kind is dropped, and an audio model without one takes its default (the size stays unknown).
  void audio_length() {
    Job& job = info_.job;
    const ModelInfo* m = job.diffusion && !job.diffusion->model.empty() ? find_model(job.diffusion->model) : nullptr;
    const bool audio = m && m->diffusion && m->diffusion->audio();
    if (!audio && job.seconds > 0) {
      notes().push_back("an audio latent of " + json_preview(job.seconds, 12) + " s runs beside a model that is not an audio "
                        "model; its length is not counted");
      job.seconds = 0;
    } else if (audio && job.seconds <= 0) {
      job.seconds = m->defaults && m->defaults->seconds > 0 ? m->defaults->seconds : 60.0;
      if (!info_.size_known && latent_nodes_ == 0 && !image_sized_latent_ && !info_.size_from_unknown)
        notes().push_back("the audio latent's length is not set by a node Headroom reads (it follows an input clip or a "
                          "computed value); assumed " +
                          json_preview(job.seconds, 12) + " s");
    }
  }

  void finish() {
    Job& job = info_.job;
    resolve_generations();
    // Diffusion: Wan 2.2 A14B's two experts are one component (ComfyUI runs one at a time).
    if (!diffusion_.empty()) {
      // Several models run one after another (an all-in-one edit workflow): the largest sets the peak,
      // not the one whose loader comes first. Known sampled models win over unknown ones, and an unknown one
      // over a known one-pass model: a segmenter beside an unknown video model must not make the workflow
      // read as estimated with the segmenter's small figures.
      const std::size_t pick = largest_diffusion();
      job.diffusion = diffusion_[pick];
      if (const ModelInfo* picked = job.diffusion->model.empty() ? nullptr : find_model(job.diffusion->model);
          picked && !picked->one_pass.empty()) {
        one_pass_ = true;
        notes().push_back(picked->name + " runs as one forward pass (" + picked->one_pass + ")");
      }
      const ModelInfo* first = diffusion_[0].model.empty() ? nullptr : find_model(diffusion_[0].model);
      bool experts = diffusion_.size() == 2 && diffusion_[0].model == diffusion_[1].model && first && first->experts == 2;
      if (experts) {
        if (diffusion_[1].weight_bytes && (!job.diffusion->weight_bytes ||
                                           *diffusion_[1].weight_bytes > *job.diffusion->weight_bytes))
          job.diffusion->weight_bytes = diffusion_[1].weight_bytes;
        notes().push_back("two Wan 2.2 A14B experts (" + diffusion_files_[0] + ", " + diffusion_files_[1] +
                          "): one diffusion model, since sampling uses one expert at a time and ComfyUI unloads "
                          "the other when memory is short");
      } else if (diffusion_.size() > 1) {
        notes().push_back(std::to_string(diffusion_.size()) + " diffusion models run one after another; the "
                          "estimate uses the largest, '" + diffusion_files_[pick] + "'");
        // A model the catalog lacks beside it (Lotus depth before Flux) is not counted: say so, by name.
        for (std::size_t i = 0; i < diffusion_.size(); ++i)
          if (i != pick && diffusion_[i].model.empty())
            notes().push_back("diffusion model '" + diffusion_files_[i] + "' is not in the catalog; it is not counted");
      }
      if (job.diffusion->model.empty())
        notes().push_back("diffusion model '" + job.diffusion->file + "' is not in the catalog");
    } else {
      notes().push_back("no diffusion model loader runs in this workflow");
    }
    if (job.text_encoders.empty() && !checkpoint_text_encoders_.empty()) job.text_encoders = checkpoint_text_encoders_;
    if (!job.vae && checkpoint_vae_) job.vae = checkpoint_vae_;

    audio_length();
    if (latent_nodes_ > 1) notes().push_back(std::to_string(latent_nodes_) + " latent nodes run; the largest sets the size");
    size_from_image_latent();
    if (info_.size_known && latent_scale_ > 1.0) {
      const int w = static_cast<int>(std::lround(job.width * latent_scale_)), h = static_cast<int>(std::lround(job.height * latent_scale_));
      notes().push_back("a latent upsampler enlarges the " + std::to_string(job.width) + "x" + std::to_string(job.height) +
                        " latent " + json_preview(latent_scale_, 8) + "x and a second sampler runs on it: sized at " +
                        std::to_string(w) + "x" + std::to_string(h));
      job.width = w;
      job.height = h;
    }
    if (!info_.size_known && !image_sized_latent_ && latent_nodes_ == 0) info_.size_from_unknown = unknown_latent_source();
    if (!info_.size_known && image_unknown_) info_.size_from_unknown = image_unknown_;
    if (!info_.size_known && !info_.size_from_unknown && !diffusion_.empty()) info_.size_from_unknown = unsized_latent_source();
    if (info_.size_from_unknown) {
      notes().push_back("the sampled latent's size follows " + info_.size_from_unknown->type + " #" + info_.size_from_unknown->id +
                        ", " + info_.size_from_unknown->why + ": it is unknown, and the figures are for an assumed " +
                        std::to_string(job.width) + "x" + std::to_string(job.height) + ", " + std::to_string(job.frames) +
                        " frame(s)");
    } else if (!info_.size_known) {
      if ((image_sized_latent_ || latent_nodes_ == 0) && job.seconds <= 0)
        notes().push_back("output size unknown (it follows an input image); assumed " + std::to_string(job.width) +
                          "x" + std::to_string(job.height));
    }
    if (cfg_ > 1.0 && one_pass_)
      notes().push_back("the guiders' cfg " + json_preview(cfg_, 8) + " belongs to another model; " + job.diffusion->model +
                        " runs one pass without guidance");
    else if (cfg_ >= 0) job.cfg = cfg_;

    // Decode: the most memory-hungry decoder that runs decides.
    bool any_full = false, any_tiled = false, any_headroom = false;
    int tile = 0;
    for (const auto& d : info_.decoders) {
      switch (node_info(d.type)->decode) {
        case DecodeKind::Full: any_full = true; break;
        case DecodeKind::Headroom: {
          std::string m = d.mode ? text(d.mode->value) : "";
          if (m == "full") any_full = true;
          else any_headroom = true;
          break;
        }
        case DecodeKind::Tiled: {
          any_tiled = true;
          auto ts = d.tile_size ? integer(d.tile_size->value) : std::nullopt;
          const int node_default = static_cast<int>(runtime_constant("tiled_decode_default_tile_px"));
          tile = std::max(tile, static_cast<int>(ts.value_or(node_default)));
          break;
        }
        case DecodeKind::None: break;
      }
    }
    if (any_full) job.decode_mode = DecodeMode::Full;
    else if (any_tiled) {
      job.decode_mode = DecodeMode::Tiled;
      job.decode_tile_px = tile;
    } else if (any_headroom) job.decode_mode = DecodeMode::Headroom;
  }
};

}  // namespace

json WorkflowInfo::to_json() const {
  json loaders_json = json::array();
  for (const auto& l : loaders)
    loaders_json.push_back({{"node_id", l.node_id}, {"type", l.type}, {"role", l.role}, {"file", l.file},
                            {"model", l.model.empty() ? json(nullptr) : json(l.model)},
                            {"precision", l.precision.empty() ? json(nullptr) : json(l.precision)},
                            {"size_source", l.size_source},
                            {"file_problem", l.file_problem.empty() ? json(nullptr) : json(l.file_problem)},
                            {"file_problem_text", l.file_problem_text.empty() ? json(nullptr) : json(l.file_problem_text)}});
  json unknown = json::array();
  for (const auto& u : unknown_nodes) unknown.push_back({{"id", u.id}, {"type", u.type}});
  return {{"format", api_format ? "api" : "ui"},
          {"loaders", loaders_json},
          {"unknown_nodes", unknown},
          {"latent_node", latent_node.empty() ? json(nullptr) : json(latent_node)},
          {"size_known", size_known},
          {"size_from_unknown", size_from_unknown ? json{{"id", size_from_unknown->id}, {"type", size_from_unknown->type},
                                                         {"why", size_from_unknown->why}}
                                                  : json(nullptr)},
          {"node_stages", node_stages},
          {"notes", job.notes}};
}

WorkflowInfo analyse_workflow(const json& wf, const std::string& source, const ParseOptions& options) {
  Graph g = build_graph(wf, source);
  link_past_virtual_nodes(g);
  return Analyser(g, options).run();
}

WorkflowInfo analyse_workflow_file(const std::string& path, const ParseOptions& options) {
  return analyse_workflow(parse_workflow_text(read_text_file(path, kMaxWorkflowBytes), path), path, options);
}

}  // namespace headroom::workflow
