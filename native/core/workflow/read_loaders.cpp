#include "core/workflow/read_loaders.hpp"

#include <map>

#include "core/catalog/catalog.hpp"
#include "core/estimate/job_models.hpp"
#include "core/workflow/model_files.hpp"
#include "core/workflow/workflow_names.hpp"
#include "core/workflow/workflow_values.hpp"

namespace headroom::workflow {

bool same_load(const Component& a, const Component& b) {
  return a.file == b.file && a.precision == b.precision && a.model == b.model;
}

bool already_loaded(ReaderState& st, const std::vector<Component>& loaded, const Component& c, const Node& n) {
  // Five umt5 loaders were counted as five, 53 GiB of host RAM.
  for (const auto& other : loaded)
    if (same_load(other, c)) {
      st.notes().push_back(n.type + " #" + n.id + " loads '" + c.file + "' again with the same settings: ComfyUI "
                           "reuses the loaded copy, counted once");
      return true;
    }
  return false;
}

namespace {

using LoaderReader = void (*)(ReaderState&, const Node&, const std::string& file, const std::string& role, Loader&);

void read_lora(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  st.notes().push_back("LoRA '" + file + "' (#" + n.id + ") is patched into the weights; its size is unknown "
                       "without --models and not counted");
  if (!st.opt.reads_files()) return;
  auto path = find_file(st, file, role);
  HeaderFacts f = path ? header_facts(st, *path, role) : HeaderFacts{};
  rec.file_problem = f.file_problem;
  if (!f.gpu_bytes) return;
  rec.size_source = "header";
  st.info.job.lora_bytes += *f.gpu_bytes;
  st.lora_bytes_by_node[n.id] += *f.gpu_bytes;
  st.notes().back() = "LoRA '" + file + "' (#" + n.id + "): " + std::to_string(*f.gpu_bytes) + " bytes read from " + *path;
}

void read_style_model(ReaderState& st, const Node& n, const std::string& file, const std::string&, Loader&) {
  st.notes().push_back("style model '" + file + "' (#" + n.id + ") is not in the catalog and not counted");
}

void read_diffusion(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  const std::string dtype = text(resolved_value(st.g, n, "weight_dtype"));
  const std::string forced = precision_from_weight_dtype(dtype);
  if (!forced.empty()) {
    if (c.precision == "fp8_scaled")
      st.notes().push_back("weight_dtype " + dtype + " ignored for scaled-fp8 '" + file +
                           "' (ComfyUI keeps scaled fp8 as it is)");
    else {
      c.precision = forced;
      c.weight_bytes.reset();  // the header's bytes are for the file's own dtype
      rec.precision = forced;
    }
  } else if (dtype == "auto") {
    st.notes().push_back(n.type + " #" + n.id + " has weight_dtype auto: Headroom loads fp8 only when the "
                         "16-bit weights do not fit; estimated at the file's precision");
  }
  if (auto r = st.ref(n, "weight_dtype")) st.info.weight_dtype.push_back(*r);
  st.diffusion_by_node[n.id] = c;
  if (!already_loaded(st, st.diffusion, c, n)) {
    st.diffusion.push_back(c);
    st.diffusion_files.push_back(file);
  }
}

// A checkpoint bundles the companions of its diffusion model (Comfy-Org's flux1-dev-fp8 and
// flux1-schnell-fp8 carry CLIP-L, an fp8 T5-XXL and the Flux VAE): an fp8 checkpoint holds its T5
// encoder in fp8 too, the small CLIP in 16 bit. Returns the text encoders it bundles.
std::vector<Component> checkpoint_companions(ReaderState& st, const Component& c, bool clip_vision_output) {
  const ModelInfo* m = find_model_of(c);
  if (m && (!m->companion_text_encoders.empty() || !m->companion_vae.empty() || !m->companion_clip_vision.empty())) {
    const PrecisionInfo* p = c.precision.empty() ? nullptr : find_precision(c.precision);
    const bool fp8 = p && p->kind == PrecisionKind::Fp8;
    std::string parts;
    st.checkpoint_text_encoders.clear();
    for (const auto& name : m->companion_text_encoders) {
      const ModelInfo* te = find_model(name);
      std::string precision = fp8 && te && te->family == "t5_encoder" ? "fp8_e4m3fn" : "";
      st.checkpoint_text_encoders.push_back(Component{name, precision, std::nullopt, c.file, te});
      parts += (parts.empty() ? "" : ", ") + name + (precision.empty() ? "" : " (" + precision + ")");
    }
    if (!m->companion_vae.empty()) {
      st.checkpoint_vae = Component{m->companion_vae, "", std::nullopt, c.file, find_model(m->companion_vae)};
      parts += (parts.empty() ? "" : " and ") + m->companion_vae;
    }
    if (clip_vision_output && !m->companion_clip_vision.empty()) {  // a 3D checkpoint carries its image encoder (Hunyuan3D: DINOv2)
      st.checkpoint_clip_vision =
          Component{m->companion_clip_vision, "", std::nullopt, c.file, find_model(m->companion_clip_vision)};
      parts += (parts.empty() ? "" : " and ") + m->companion_clip_vision;
    }
    st.notes().push_back("checkpoint '" + c.file + "' bundles " + parts);
    return st.checkpoint_text_encoders;
  }
  if (c.model.empty()) st.notes().push_back("checkpoint '" + c.file + "' is not a catalog model; it cannot be estimated");
  return {};
}

void read_checkpoint(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  st.diffusion_by_node[n.id] = c;
  st.diffusion.push_back(c);
  st.diffusion_files.push_back(file);
  const ComfyNode* info = node_info(n.type);
  std::vector<Component> bundled = checkpoint_companions(st, c, info && info->clip_vision_output);
  // Its CLIP output (comfy_nodes.json clip_output) holds the bundled encoders, if the catalog names them.
  if (info && info->clip_output) st.encoder_loads[n.id] = std::move(bundled);
}

void read_text_encoder(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  auto& load = st.encoder_loads[n.id];
  if (c.model.empty()) st.notes().push_back("text encoder '" + file + "' not recognised; not counted");
  else load.push_back(c);
  if (!c.model.empty() && !already_loaded(st, st.info.job.text_encoders, c, n)) st.info.job.text_encoders.push_back(c);
  st.encoders_by_node[n.id] = {c, file};
  if (text(resolved_value(st.g, n, "device")) == "cpu") st.info.job.text_encoder_on_cpu = true;
  if (auto r = st.ref(n, "device")) st.info.text_encoder_device.push_back(*r);
}

void read_vae(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  if (c.model.empty()) st.notes().push_back("VAE '" + file + "' not recognised; the catalog VAE of the model is used");
  else st.info.job.vae = c;
}

void read_clip_vision(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  if (c.model.empty()) st.notes().push_back("CLIP vision '" + file + "' is not in the catalog and not counted");
  else st.info.job.clip_vision = c;
}

// A part the estimate counts beside the diffusion model: a file the catalog lacks leaves the peak unknown, named.
bool part_known(ReaderState& st, const Node& n, const Component& c, const std::string& what) {
  if (!c.model.empty()) return true;
  // The kind leads, so the corpus report groups every such loader under one reason.
  st.info.unsized_parts.push_back({n.id, n.type, what + " Headroom does not know: " + n.type + " #" + n.id + " loads '" +
                                                     c.file + "', whose weights cannot be counted"});
  st.notes().push_back(st.info.unsized_parts.back().why);
  return false;
}

// Two different encoders (an S2V copy of the graph with another file): the larger is counted, as it sets the peak.
void read_audio_encoder(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  if (!part_known(st, n, c, "an audio encoder")) return;
  Job& job = st.info.job;
  if (job.audio_encoder && already_loaded(st, {*job.audio_encoder}, c, n)) return;
  if (job.audio_encoder) {
    const ModelInfo* kept = find_model_of(*job.audio_encoder);
    st.notes().push_back("two audio encoders load ('" + job.audio_encoder->file + "', '" + file + "'); the larger is counted");
    if (kept && c.info && kept->params >= c.info->params) return;
  }
  job.audio_encoder = c;
}

// A patch counts for the sampler whose model it reaches (sampler_jobs.cpp); the job keeps every one for a
// workflow whose samplers are not traced.
void read_model_patch(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c = component(st, n, file, role, rec);
  if (!part_known(st, n, c, "a model patch")) return;
  st.patches_by_node[n.id] = c;
  if (!already_loaded(st, st.info.job.model_patches, c, n)) st.info.job.model_patches.push_back(c);
}

// A role without its own reader: its file is recognised (and its header read), nothing more.
void read_other(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  component(st, n, file, role, rec);
}

LoaderReader reader_for(LoaderKind kind) {
  static const std::map<LoaderKind, LoaderReader> kReaders = {
      {LoaderKind::Diffusion, read_diffusion}, {LoaderKind::Checkpoint, read_checkpoint},
      {LoaderKind::TextEncoder, read_text_encoder}, {LoaderKind::Vae, read_vae},
      {LoaderKind::ClipVision, read_clip_vision}, {LoaderKind::Lora, read_lora},
      {LoaderKind::StyleModel, read_style_model}, {LoaderKind::AudioEncoder, read_audio_encoder},
      {LoaderKind::ModelPatch, read_model_patch}, {LoaderKind::Other, read_other}};
  return kReaders.at(kind);
}

// The first alternative whose first widget the node has (CLIPLoader's clip_name), else the last.
const std::vector<std::string>& file_widgets(const Node& n, const std::string& role) {
  const auto& alternatives = comfy_nodes().loader_roles.at(role).file_widgets;
  for (const auto& alt : alternatives)
    if (n.input(alt.front())) return alt;
  return alternatives.back();
}

}  // namespace

void read_loader(ReaderState& st, const Node& n, const std::string& role) {
  const LoaderReader read = reader_for(loader_kind(role));
  for (const auto& w : file_widgets(n, role)) {
    const std::string file = text(resolved_value(st.g, n, w));
    if (file.empty()) {
      if (n.input(w)) st.notes().push_back(n.type + " #" + n.id + ": " + w + " is not a literal file name; not counted");
      continue;
    }
    Loader rec{n.id, n.type, role, file, "", ""};
    read(st, n, file, role, rec);
    st.info.loaders.push_back(rec);
  }
}

}  // namespace headroom::workflow
