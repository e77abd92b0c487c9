// estimate(): the stages of a ComfyUI run in order, each fitted onto the card by the runtime policy.
#include "core/estimate/estimator.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <locale>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/catalog/catalog.hpp"
#include "core/estimate/job_models.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/estimate/apply_calibration.hpp"
#include "core/estimate/kv_cache_sampling.hpp"
#include "core/estimate/memory_model.hpp"
#include "core/estimate/runtime_policy.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

using nlohmann::json;

// One digit after the point, built as a string: a fixed buffer cut a note mid-sentence (issue 19).
std::string one_decimal(double x) {
  std::ostringstream s;
  s.imbue(std::locale::classic());
  s << std::fixed << std::setprecision(1) << x;
  return s.str();
}

std::uint64_t resident_weights(const Stage& s) {
  std::uint64_t w = 0;
  for (const auto& kv : s.breakdown)
    if (kv.first.rfind("weights:", 0) == 0) w += kv.second;
  return w;
}

json component_json(const Component& c) {
  json j = {{"model", c.model}, {"precision", c.precision}};
  // The precision the figures use, so that no layer above looks the catalog default up again.
  if (c.precision.empty()) {
    const ModelInfo* m = c.model.empty() ? nullptr : find_model_of(c);
    j["precision_assumed"] = m ? json(m->default_precision) : json(nullptr);
  }
  if (c.weight_bytes) j["weight_bytes"] = *c.weight_bytes;
  if (!c.file.empty()) j["file"] = c.file;
  return j;
}

json components_json(const std::vector<Component>& cs) {
  json j = json::array();
  for (const auto& c : cs) j.push_back(component_json(c));
  return j;
}

json others_json(const std::vector<OtherModel>& others) {
  json j = json::array();
  for (const auto& o : others) j.push_back({{"model", component_json(o.model)}, {"runs_before", o.runs_before}});
  return j;
}

// Shown only for a sampler that does not step the whole latent each time.
void add_sampling(json& j, SamplingKind kind, int block_frames) {
  if (kind == SamplingKind::Standard) return;
  j["sampling"] = sampling_kind_name(kind);
  j["block_frames"] = block_frames;
}

const char* decode_mode_name(DecodeMode m) {
  switch (m) {
    case DecodeMode::Full: return "full";
    case DecodeMode::Tiled: return "tiled";
    case DecodeMode::Headroom: return "headroom";
  }
  return "full";
}

// Models of earlier stages that ComfyUI leaves loaded because there is room: the card holds them at
// this stage's peak (both loaders keep models cached while they fit; dynamic VRAM evicts them on
// demand, the legacy loader frees them before a stage that would not fit otherwise).
void mark_cached(Stage& stage, const std::vector<std::pair<std::string, std::uint64_t>>& earlier, std::uint64_t vram) {
  if (vram == 0 || stage.mode != StageMode::Full) return;
  std::uint64_t used = std::max(stage.peak_bytes, stage.cache_floor_bytes);
  for (const auto& e : earlier) {
    if (std::find(stage.resident.begin(), stage.resident.end(), e.first) != stage.resident.end()) continue;
    if (used + e.second <= vram) {
      stage.cached.push_back(e.first);
      stage.cached_bytes += e.second;
      used += e.second;
    }
  }
  stage.peak_bytes += stage.cached_bytes;
  if (stage.cached_bytes) stage.breakdown["cached_models"] = stage.cached_bytes;
}

// GGUF files load through ComfyUI-GGUF's own ModelPatcher, which stays on the legacy loader even with
// dynamic VRAM on (Comfy-Org/ComfyUI#13953).
bool gguf(const ResolvedComponent& c) { return c.precision->kind == PrecisionKind::Gguf; }

// A prompt upsampler that is not also one of the job's text encoders: one file, one residency.
bool generator_only(const ResolvedJob& rj, const ResolvedComponent& g) {
  return std::none_of(rj.text_encoders.begin(), rj.text_encoders.end(),
                      [&](const ResolvedComponent& t) { return t.model == g.model; });
}

// Models already loaded by earlier stages (name, bytes), each once however many stages used it.
using Loaded = std::vector<std::pair<std::string, std::uint64_t>>;

void add_loaded(Loaded& earlier, const std::string& name, std::uint64_t bytes) {
  if (std::none_of(earlier.begin(), earlier.end(), [&](const auto& e) { return e.first == name; }))
    earlier.push_back({name, bytes});
}

void add_loaded(Loaded& earlier, const ResolvedComponent& c) { add_loaded(earlier, c.model->name, c.weight_bytes); }

std::uint64_t host_ram_needed(const ResolvedJob& rj, const Job& job) {
  // Every model's weights in host memory: the legacy loader reads them all to the CPU and keeps them
  // there; under dynamic VRAM it is what the run needs in the page cache to never read the disk again.
  std::uint64_t ram = job.lora_bytes;
  if (rj.diffusion) ram += rj.diffusion->weight_bytes * std::max(1, rj.diffusion->model->experts);
  for (const auto& t : rj.text_encoders) ram += t.weight_bytes;
  for (const auto& g : rj.generators)
    if (generator_only(rj, g)) ram += g.weight_bytes;
  if (rj.clip_vision) ram += rj.clip_vision->weight_bytes;
  if (rj.audio_encoder) ram += rj.audio_encoder->weight_bytes;
  for (const auto& p : rj.model_patches) ram += p.weight_bytes;
  if (rj.vae) ram += rj.vae->weight_bytes;
  for (const auto& o : rj.other_diffusion) ram += o.weight_bytes * std::max(1, o.model->experts);
  for (const auto& o : rj.other_text_encoders) ram += o.weight_bytes;
  return ram;
}

// Dynamic VRAM reads weights file-backed (comfy-aimdo ModelMMAP, ComfyUI's TensorFileSlice /
// read_tensor_file_slice_into): pages the OS drops under pressure are read again from disk, so they slow
// the run without ending it. What has no file behind it must stay: LoRA patches, which ComfyUI keeps in
// pinned host buffers and bakes into the weight on its first cast (ops.resolve_cast_module_with_vbar),
// and models that stay on the legacy loader (GGUF, read whole to the CPU).
std::uint64_t host_ram_held(const ResolvedJob& rj, const Job& job, const Runtime& rt) {
  if (rt.loader != Runtime::Loader::Dynamic) return host_ram_needed(rj, job);
  std::uint64_t ram = job.lora_bytes;
  if (rj.diffusion && gguf(*rj.diffusion)) ram += rj.diffusion->weight_bytes * std::max(1, rj.diffusion->model->experts);
  for (const auto& t : rj.text_encoders)
    if (gguf(t)) ram += t.weight_bytes;
  for (const auto& g : rj.generators)
    if (gguf(g) && generator_only(rj, g)) ram += g.weight_bytes;
  for (const auto& o : rj.other_diffusion)
    if (gguf(o)) ram += o.weight_bytes * std::max(1, o.model->experts);
  for (const auto& o : rj.other_text_encoders)
    if (gguf(o)) ram += o.weight_bytes;
  return ram;
}

// Where a run that cannot hold its host memory ends, by the OS ComfyUI runs on.
std::string host_ram_end(const Runtime& rt) {
  return rt.windows ? "Windows fails the allocation once RAM and the page file (the commit limit) are used up"
                    : "on Linux the OOM killer ends ComfyUI once RAM and swap are used up";
}

// ComfyUI keeps fp8 diffusion weights in fp8 only on cards that compute in fp8, or when 16 bit
// would not fit in maximum_vram_for_weights = total * max_weights_share - minimum_inference_memory
// (comfy/model_management.py unet_dtype, facts comfyui-internals §4.2); otherwise it upcasts.
void upcast_fp8_like_comfyui(ResolvedJob& rj, const Runtime& rt) {
  if (!rj.diffusion || rj.diffusion->precision->kind != PrecisionKind::Fp8 || rt.fp8_compute != 0 || !rt.has_card()) return;
  const ModelInfo& m = *rj.diffusion->model;
  const PrecisionInfo& wide = resolve_precision(m.compute_dtype);
  const double max_for_weights = runtime_total_bytes(rt) * runtime_constant("max_weights_share") -
                                 runtime_constant("minimum_inference_bytes") -
                                 runtime_constant(rt.windows ? "comfy_reserve_bytes_windows" : "comfy_reserve_bytes_linux");
  const std::uint64_t wide_bytes = weight_bytes(m, wide);
  if (static_cast<double>(wide_bytes) > max_for_weights) return;
  rj.notes.push_back("this card has no fp8 compute and 16-bit weights fit, so ComfyUI upcasts " + m.name + " from " +
                     rj.diffusion->precision->name + " to " + wide.name + " (" + format_bytes(wide_bytes) + ")");
  rj.diffusion->precision = &wide;
  rj.diffusion->weight_bytes = wide_bytes;
}

// nvfp4 and mxfp8 matmuls need compute capability 10.0 (Blackwell), fp8mixed 8.9 (comfy/model_management.py);
// on an older or unknown card each such layer is dequantised to 16 bit first, which the transient counts.
void mark_native_compute(ResolvedJob& rj, const Runtime& rt) {
  auto mark = [&](ResolvedComponent& c) {
    const auto& from = c.precision->native_compute_from;
    if (!from) return;
    c.native_compute = rt.compute_capability > 0 && rt.compute_capability + 1e-9 >= *from;
    if (!c.native_compute)
      rj.notes.push_back(c.precision->name + " weights of " + c.model->name + " are dequantised layer by layer on "
                         "this card (" + c.precision->name + " compute needs compute capability " + one_decimal(*from) +
                         (rt.compute_capability > 0 ? "" : "; the card's is unknown") +
                         "), which costs a transient and time");
  };
  if (rj.diffusion) mark(*rj.diffusion);
  for (auto& t : rj.text_encoders) mark(t);
  for (auto& g : rj.generators)
    if (generator_only(rj, g)) mark(g);
}

}  // namespace

const char* loader_name(Runtime::Loader loader) { return loader == Runtime::Loader::Dynamic ? "dynamic" : "legacy"; }

const std::string& stage_mode_name(StageMode mode) {
  static const std::string full = "full", partial = "partial", tiled = "tiled_fallback";
  switch (mode) {
    case StageMode::Partial: return partial;
    case StageMode::TiledFallback: return tiled;
    case StageMode::Streams: return spelling(Verdict::Streams);
    case StageMode::DoesNotFit: return spelling(Verdict::DoesNotFit);
    case StageMode::Full: break;
  }
  return full;
}

const char* stage_mode_id(StageMode mode) {
  switch (mode) {
    case StageMode::Partial: return "partial";
    case StageMode::TiledFallback: return "tiled_fallback";
    case StageMode::Streams: return verdict_id(Verdict::Streams);
    case StageMode::DoesNotFit: return verdict_id(Verdict::DoesNotFit);
    case StageMode::Full: break;
  }
  return "full";
}

json Estimate::to_json() const {
  json j;
  j["peak_bytes"] = peak_bytes;
  j["peak_stage"] = peak_stage;
  j["full_load_peak_bytes"] = full_load_peak_bytes;
  j["min_peak_bytes"] = min_peak_bytes;
  j["slowdown"] = slowdown;
  j["runtime"] = loader_name(runtime);
  j["required_bytes"] = required_bytes();
  j["own_peak_bytes"] = own_peak_bytes;
  j["host_ram_bytes"] = host_ram_bytes;
  j["host_ram_held_bytes"] = host_ram_held_bytes;
  if (ram_bytes) j["ram_bytes"] = ram_bytes;
  if (vram_bytes) {
    j["vram_bytes"] = vram_bytes;
    put_verdict(j, verdict, "");
    j["verdict_reason"] = verdict_reason;
    if (!limit.empty()) j["limit"] = limit;
    if (!limit_stage.empty()) j["limit_stage"] = limit_stage;
  }
  j["stages"] = json::array();
  for (const auto& s : stages) {
    json bd = json::object();
    for (const auto& kv : s.breakdown) bd[kv.first] = kv.second;
    j["stages"].push_back({{"name", s.name},
                           {"peak_bytes", s.peak_bytes},
                           {"breakdown", bd},
                           {"resident", s.resident},
                           {"cached", s.cached},
                           {"mode", stage_mode_name(s.mode)},
                           {"mode_id", stage_mode_id(s.mode)},
                           {"slowdown", s.slowdown},
                           {"full_load_bytes", s.full_load_bytes},
                           {"min_bytes", s.min_bytes},
                           {"required_bytes", s.required_bytes()},
                           {"cached_bytes", s.cached_bytes},
                           {"resident_bytes", s.resident_bytes},
                           {"streamed_bytes", s.streamed_bytes},
                           {"seconds_per_step", s.seconds_per_step},
                           {"loader", loader_name(s.loader)},
                           {"notes", s.notes}});
    if (s.calibration) {
      json c = calibrate::to_json(*s.calibration);
      c["uncalibrated_peak_bytes"] = s.uncalibrated_peak_bytes;
      j["stages"].back()["calibration"] = c;
    }
    j["stages"].back()["uncalibrated_peak_bytes"] = s.calibration ? s.uncalibrated_peak_bytes : s.peak_bytes;
  }
  j["calibrated"] = json::array();
  for (const auto& s : stages)
    if (s.calibration) j["calibrated"].push_back(calibrate::to_json(*s.calibration));
  j["samplers"] = json::array();
  for (const auto& sp : samplers) {
    json e = sampler_job_json(sp.job);
    e["model"] = sp.model.empty() ? json(nullptr) : json(sp.model);
    e["peak_bytes"] = sp.peak_bytes ? json(*sp.peak_bytes) : json(nullptr);
    e["text_encode_peak_bytes"] = sp.encode_peak_bytes ? json(*sp.encode_peak_bytes) : json(nullptr);
    e["unsized"] = sp.unsized.empty() ? json(nullptr) : json(sp.unsized);
    e["binding"] = sp.binding;
    j["samplers"].push_back(std::move(e));
  }
  j["notes"] = notes;
  return j;
}

json sampler_job_json(const SamplerJob& s) {
  json j = {{"node_id", s.node_id},
            {"type", s.type},
            {"diffusion", s.diffusion ? component_json(*s.diffusion) : json(nullptr)},
            {"width", s.width},
            {"height", s.height},
            {"frames", s.frames},
            {"batch", s.batch},
            {"size_known", s.size_known},
            {"cfg", s.cfg >= 0 ? json(s.cfg) : json(nullptr)},
            {"lora_bytes", s.lora_bytes},
            {"model_patches", components_json(s.model_patches)},
            {"unknown", s.unknown.empty() ? json(nullptr) : json(s.unknown)}};
  if (s.seconds > 0) j["seconds"] = s.seconds;
  j["title"] = s.title.empty() ? json(nullptr) : json(s.title);
  j["continues"] = s.continues.empty() ? json(nullptr) : json(s.continues);
  if (s.tokens > 0) j["tokens"] = s.tokens;
  add_sampling(j, s.sampling, s.block_frames);
  j["unknown_node"] = s.unknown_node ? json{{"id", s.unknown_node->id}, {"type", s.unknown_node->type},
                                            {"title", s.unknown_node->title}, {"what", s.unknown_what}}
                                     : json(nullptr);
  j["text_encoders"] = components_json(s.text_encoders);  // those its conditioning reads (empty: none traced)
  return j;
}

json job_to_json(const Job& job) {
  json j;
  j["diffusion"] = job.diffusion ? component_json(*job.diffusion) : json(nullptr);
  j["text_encoders"] = json::array();
  for (const auto& t : job.text_encoders) j["text_encoders"].push_back(component_json(t));
  j["text_generations"] = json::array();
  for (const auto& g : job.text_generations)
    j["text_generations"].push_back({{"model", component_json(g.model)}, {"new_tokens", g.new_tokens}});
  j["clip_vision"] = job.clip_vision ? component_json(*job.clip_vision) : json(nullptr);
  j["audio_encoder"] = job.audio_encoder ? component_json(*job.audio_encoder) : json(nullptr);
  j["model_patches"] = components_json(job.model_patches);
  j["vae"] = job.vae ? component_json(*job.vae) : json(nullptr);
  j["lora_bytes"] = job.lora_bytes;
  j["width"] = job.width;
  j["height"] = job.height;
  j["frames"] = job.frames;
  if (job.seconds > 0) j["seconds"] = job.seconds;
  if (job.tokens > 0) j["tokens"] = job.tokens;
  j["batch"] = job.batch;
  j["cfg"] = job.cfg;
  add_sampling(j, job.sampling, job.block_frames);
  j["reference_images"] = job.reference_images;
  j["decode_mode"] = decode_mode_name(job.decode_mode);
  j["decode_tile_px"] = job.decode_tile_px;
  j["blocks_swapped"] = job.blocks_swapped;
  j["text_encoder_on_cpu"] = job.text_encoder_on_cpu;
  j["samplers"] = json::array();
  for (const auto& sj : job.samplers) j["samplers"].push_back(sampler_job_json(sj));
  j["bound_sampler"] = job.bound_sampler.empty() ? json(nullptr) : json(job.bound_sampler);
  j["other_diffusion"] = others_json(job.other_diffusion);
  j["other_text_encoders"] = others_json(job.other_text_encoders);
  j["decode_scale"] = job.decode_scale;
  j["notes"] = job.notes;
  return j;
}

Job default_job(const std::string& model) {
  const ModelInfo& m = resolve_model(model, "model");
  Job job;
  auto comp = [](const std::string& name) {
    const ModelInfo& c = resolve_model(name, "model");
    return Component{c.name, c.default_precision, std::nullopt, ""};
  };
  auto apply_defaults = [&job](const JobDefaults& defs) {
    job.width = defs.width;
    job.height = defs.height;
    job.frames = defs.frames;
    job.cfg = defs.cfg;
    job.reference_images = defs.reference_images;
    job.seconds = defs.seconds;
    job.tokens = defs.tokens;
    if (defs.block_frames > 0) {
      job.sampling = SamplingKind::KvCacheBlocks;
      job.block_frames = defs.block_frames;
    }
  };
  switch (m.role) {
    case Role::DiffusionModel:
      job.diffusion = comp(m.name);
      for (const auto& t : m.companion_text_encoders) job.text_encoders.push_back(comp(t));
      if (!m.companion_clip_vision.empty()) job.clip_vision = comp(m.companion_clip_vision);
      if (!m.companion_vae.empty()) job.vae = comp(m.companion_vae);
      if (m.defaults) apply_defaults(*m.defaults);
      break;
    case Role::TextEncoder: job.text_encoders.push_back(comp(m.name)); break;
    case Role::ClipVision: job.clip_vision = comp(m.name); break;
    case Role::AudioEncoder: job.audio_encoder = comp(m.name); break;
    case Role::ModelPatch:
      throw InputError("model", m.name + " is a model patch, sampled with the model it patches; estimate a workflow "
                                "that applies it");
    case Role::Vae:
      job.vae = comp(m.name);
      // A video, audio or token VAE alone decodes the shape of the first model that uses it.
      for (const auto& o : catalog_data().models)
        if (o.companion_vae == m.name && o.defaults && (m.vae->video() || m.vae->audio() || m.vae->decode.latent_tokens)) {
          apply_defaults(*o.defaults);
          break;
        }
      job.cfg = 1.0;
      job.reference_images = 0;
      break;
  }
  return job;
}

namespace {

// The policies a run's stages are fitted under: the runtime's, and the legacy loader's for GGUF files.
struct Policies {
  PolicyContext pc, legacy;
  std::uint64_t vram = 0;
};

Policies policies(const Runtime& runtime) {
  Runtime legacy_rt = runtime;
  legacy_rt.loader = Runtime::Loader::Legacy;
  const PolicyContext pc = policy_context(runtime);
  return {pc, policy_context(legacy_rt), pc.vram_bytes};
}

// The job's text encoders by the CLIP object that loads them (Job::text_encoder_loads), in order; one
// load when the job does not say.
std::vector<std::vector<std::size_t>> encoder_loads(const Job& job, std::size_t count) {
  std::vector<std::vector<std::size_t>> loads;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string id = i < job.text_encoder_loads.size() ? job.text_encoder_loads[i] : std::string();
    const auto at = std::find(ids.begin(), ids.end(), id);
    if (at == ids.end()) {
      ids.push_back(id);
      loads.push_back({i});
    } else {
      loads[static_cast<std::size_t>(at - ids.begin())].push_back(i);
    }
  }
  return loads;
}

// Each CLIP object is loaded when its CLIPTextEncode runs (comfy/sd.py CLIP.load_model ->
// model_management.load_models_gpu), one after another: the stage is the worst load's, with the loads
// before it cached while they fit (the legacy loader frees them when short, dynamic VRAM evicts on demand).
Stage text_encode_stage(const ResolvedJob& rj, const Job& job, const Policies& p, const Loaded& earlier) {
  std::optional<Stage> worst;
  Loaded before = earlier;
  for (const auto& load : encoder_loads(job, rj.text_encoders.size())) {
    ResolvedJob part = rj;
    part.text_encoders.clear();
    for (std::size_t i : load) part.text_encoders.push_back(rj.text_encoders[i]);
    const bool any_gguf = std::any_of(part.text_encoders.begin(), part.text_encoders.end(), gguf);
    Stage s = fit_stage(text_encode_demand(part), any_gguf ? p.legacy : p.pc);
    mark_cached(s, before, p.vram);
    if (!job.text_encoder_on_cpu)
      for (const auto& t : part.text_encoders) add_loaded(before, t);
    // The worst by its own need: cached models are freed or evicted when it is short.
    if (!worst || s.peak_bytes - s.cached_bytes > worst->peak_bytes - worst->cached_bytes) worst = std::move(s);
  }
  return std::move(*worst);
}

// The stages before sampling: the prompt upsampler writes the prompt before it is encoded, then the
// text encoders, CLIP vision and the VAE encode run.
void stages_before_sample(Estimate& est, const ResolvedJob& rj, const Job& job, const Policies& p, Loaded& earlier) {
  if (auto gen = text_generate_demand(rj)) {
    const bool any_gguf = std::any_of(rj.generators.begin(), rj.generators.end(), gguf);
    est.stages.push_back(fit_stage(*gen, any_gguf ? p.legacy : p.pc));
    for (const auto& g : rj.generators) add_loaded(earlier, g);
  }
  // The encoders of samplers that ran before this job's encoded their prompts first.
  for (std::size_t i = 0; i < rj.other_text_encoders.size() && !job.text_encoder_on_cpu; ++i)
    if (job.other_text_encoders[i].runs_before) add_loaded(earlier, rj.other_text_encoders[i]);
  if (!rj.text_encoders.empty()) {
    est.stages.push_back(text_encode_stage(rj, job, p, earlier));
    if (!job.text_encoder_on_cpu)
      for (const auto& t : rj.text_encoders) add_loaded(earlier, t);
  }
  if (rj.clip_vision) {
    Stage s = fit_stage(clip_vision_demand(rj), p.pc);
    mark_cached(s, earlier, p.vram);
    est.stages.push_back(std::move(s));
    earlier.push_back({rj.clip_vision->model->name, rj.clip_vision->weight_bytes});
  }
  if (rj.audio_encoder) {  // AudioEncoderEncode: load_model_gpu, one pass over the clip
    Stage s = fit_stage(audio_encode_demand(rj), p.pc);
    mark_cached(s, earlier, p.vram);
    est.stages.push_back(std::move(s));
    add_loaded(earlier, *rj.audio_encoder);
  }
  if (auto enc = vae_encode_demand(rj)) {
    Stage s = fit_stage(*enc, p.pc);
    mark_cached(s, earlier, p.vram);
    est.stages.push_back(std::move(s));
  }
}

// ComfyUI batches cond+uncond only when its own estimate x1.5 is below free memory as the patcher counts
// it (samplers.py _calc_cond_batch, ModelPatcher.get_free_memory). Under dynamic VRAM that adds every
// weight aimdo could evict, the sampled model's own included, so only the context is used.
bool cfg_batches(const ResolvedJob& rj, const Job& job, const Policies& p, const PolicyContext& spc, const Stage& single) {
  if (!p.vram) return true;
  const std::uint64_t used = p.pc.context_bytes + (spc.dynamic ? 0 : resident_weights(single));
  const std::uint64_t free = p.vram > used ? p.vram - used : 0;
  return comfy_sampling_estimate(rj, job.batch * 2) * runtime_constant("cfg_batch_free_factor") < free;
}

Stage sample_stage(const ResolvedJob& rj, const Job& job, const Policies& p, const Loaded& earlier) {
  const PolicyContext& spc = gguf(*rj.diffusion) ? p.legacy : p.pc;
  DemandOptions o;
  o.cfg_batched = false;
  o.lora_in_host = spc.dynamic;
  Stage single = fit_stage(sample_demand(rj, o), spc);
  if (job.cfg != 1.0 && cfg_batches(rj, job, p, spc, single)) {
    o.cfg_batched = true;
    single = fit_stage(sample_demand(rj, o), spc);
  }
  if (rj.diffusion->model->experts > 1 && p.vram && single.mode == StageMode::Full &&
      single.peak_bytes + rj.diffusion->weight_bytes <= p.vram)
    single.cached.push_back(rj.diffusion->model->name + " (other expert)");
  mark_cached(single, earlier, p.vram);
  return single;
}

Stage decode_stage(const ResolvedJob& rj, const Runtime& runtime, const Policies& p, const Loaded& earlier) {
  DemandOptions o;
  o.card_total_bytes = runtime_total_bytes(runtime);
  if (p.vram) {
    const std::uint64_t used = p.pc.context_bytes + rj.vae->weight_bytes;
    const std::uint64_t free = p.vram > used ? p.vram - used : 0;
    const std::uint64_t per = std::max<std::uint64_t>(1, comfy_decode_estimate(rj));
    o.vae_batch = static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(free / per, 1u << 20)));
    o.decode_budget_bytes = free > p.pc.reserve_bytes ? free - p.pc.reserve_bytes : 1;
  }
  Stage s = fit_stage(vae_decode_demand(rj, o), p.pc);
  Loaded before = earlier;
  if (rj.diffusion) before.insert(before.begin(), {rj.diffusion->model->name, rj.diffusion->weight_bytes});
  mark_cached(s, before, p.vram);
  return s;
}

// The need of a sampler's own text-encode stage (the encoders its conditioning reads, nothing cached):
// a small model prompted through a large encoder may make its job the worst. None when not traced.
std::optional<std::uint64_t> own_encode_peak(const SamplerJob& s, const Job& job, const Runtime& runtime, const Policies& p) {
  if (!s.encoders_traced || s.text_encoders.empty() || job.text_encoder_on_cpu) return std::nullopt;
  Job j = sampler_job(job, s);
  ResolvedJob rj = resolve_job(j);
  mark_native_compute(rj, runtime);
  return text_encode_stage(rj, j, p, {}).peak_bytes;
}

// Each sampler's sample stage under the same runtime, with the models cached before it: the companions'
// and those of the samplers that ran before it (every loaded model is counted); the worst binds.
std::vector<SamplerPeak> sampler_peaks(const Job& job, const Runtime& runtime, const Policies& p, const Loaded& earlier) {
  struct Sized {
    Job job;
    Loaded before;
    std::uint64_t peak;
    std::pair<std::string, std::uint64_t> model;  // what it loads (name, bytes)
    std::uint64_t need;                           // its whole need, for samplers that all stream at the card
  };
  std::vector<SamplerPeak> out;
  // Per sampler, what picks the one that binds: its sample stage or its own prompt's encode, whichever is
  // larger; then the sampling; then the whole need (samplers that all stream peak at the card). 0 = unsized.
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> binds_by;
  std::vector<Sized> sized;  // one sizing per distinct job and cache (two passes of one model)
  Loaded before = earlier;
  for (const auto& s : job.samplers) {
    SamplerPeak sp{s, s.diffusion ? s.diffusion->model : "", std::nullopt, s.unknown, false, std::nullopt};
    std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> key{0, 0, 0};
    if (sp.unsized.empty() && (!s.diffusion || !find_model_of(*s.diffusion)))
      sp.unsized = "its model" + (s.diffusion ? " '" + s.diffusion->file + "'" : std::string()) + " is not in the catalog";
    if (sp.unsized.empty()) {
      Job j = sampler_job(job, s);
      // Its own model loaded by an earlier pass is the model itself (Wan 2.2's experts: sample_stage's).
      Loaded cached;
      std::copy_if(before.begin(), before.end(), std::back_inserter(cached),
                   [&](const auto& e) { return e.first != j.diffusion->model; });
      auto it = std::find_if(sized.begin(), sized.end(),
                             [&](const Sized& e) { return same_sampled(e.job, j) && e.before == cached; });
      if (it == sized.end()) {
        ResolvedJob rj = resolve_job(j);
        upcast_fp8_like_comfyui(rj, runtime);
        mark_native_compute(rj, runtime);
        const Stage sample = sample_stage(rj, j, p, cached);
        it = sized.insert(sized.end(), {std::move(j), cached, sample.peak_bytes,
                                        {rj.diffusion->model->name, rj.diffusion->weight_bytes}, sample.full_load_bytes});
      }
      sp.peak_bytes = it->peak;
      sp.encode_peak_bytes = own_encode_peak(s, job, runtime, p);
      key = {std::max(it->peak, sp.encode_peak_bytes.value_or(0)), it->peak, it->need};
      add_loaded(before, it->model.first, it->model.second);  // ComfyUI keeps it cached while it fits
    }
    out.push_back(std::move(sp));
    binds_by.push_back(key);
  }
  // The first of equals binds, in sampler order; an unsized sampler never does.
  const auto worst = std::max_element(binds_by.begin(), binds_by.end());
  if (worst != binds_by.end()) {
    SamplerPeak& sp = out[static_cast<std::size_t>(worst - binds_by.begin())];
    sp.binding = sp.peak_bytes.has_value();
  }
  return out;
}

// The decode runs on the latent of the last pass that continues this job's (Job::decode_scale).
Stage decode_of(const ResolvedJob& rj, const Job& job, const Runtime& runtime, const Policies& p, const Loaded& earlier) {
  if (job.decode_scale == 1.0) return decode_stage(rj, runtime, p, earlier);
  Job decoded = job;
  decoded.width = static_cast<int>(std::lround(job.width * job.decode_scale));
  decoded.height = static_cast<int>(std::lround(job.height * job.decode_scale));
  decoded.decode_scale = 1.0;
  ResolvedJob drj = resolve_job(decoded);
  upcast_fp8_like_comfyui(drj, runtime);
  mark_native_compute(drj, runtime);
  return decode_stage(drj, runtime, p, earlier);
}

// "2 samplers run: KSampler #8 (flux1-dev, 1024x1024, cfg 1) peaks at 30.1 GiB, ...": one note that
// names each and the one that binds, whose job the verdict and the plan are made on (sampler_binding.hpp).
std::string samplers_note(const std::vector<SamplerPeak>& samplers) {
  std::string text = std::to_string(samplers.size()) + " samplers run:";
  for (std::size_t i = 0; i < samplers.size(); ++i) {
    const SamplerPeak& s = samplers[i];
    text += (i ? "; " : " ") + s.job.type + " #" + s.job.node_id + (s.job.title.empty() ? "" : " \"" + s.job.title + "\"");
    if (!s.peak_bytes) {
      text += ", not sized (" + s.unsized + ")";
      continue;
    }
    text += " (" + s.model + ", " + std::to_string(s.job.width) + "x" + std::to_string(s.job.height) +
            (s.job.frames > 1 ? "x" + std::to_string(s.job.frames) : "") +
            (s.job.cfg >= 0 ? ", cfg " + json_preview(s.job.cfg, 8) : "") + ") peaks at " + format_bytes(*s.peak_bytes) +
            (s.binding ? ", the worst" : "");
  }
  return text;
}

// What the stages add up to, for the verdict: the first stage that fails, the one that streams.
struct StageSummary {
  bool any_fail = false, any_degraded = false, any_streams = false, any_partial = false, any_retry = false;
  std::string fail_stage, stream_stage;
  double stream_slowdown = 1.0;
};

StageSummary summarise_stages(Estimate& est) {
  StageSummary sum;
  for (const auto& s : est.stages) {
    if (s.peak_bytes >= est.peak_bytes) {
      est.peak_bytes = s.peak_bytes;
      est.peak_stage = s.name;
    }
    est.full_load_peak_bytes = std::max(est.full_load_peak_bytes, s.full_load_bytes);
    est.min_peak_bytes = std::max(est.min_peak_bytes, s.min_bytes);
    // The peak without cached models, which either loader frees on demand.
    est.own_peak_bytes = std::max(est.own_peak_bytes, s.peak_bytes - s.cached_bytes);
    // Sampling takes nearly all of the run's time, so its slowdown is the run's; other stages'
    // slowdowns stay in their own entries.
    if (s.name == "sample") est.slowdown = s.slowdown;
    if (s.mode == StageMode::DoesNotFit && sum.fail_stage.empty()) sum.fail_stage = s.name;
    // The stage that streams is named with its own slowdown, sampling first (it is most of the run).
    if (s.mode == StageMode::Streams && (sum.stream_stage.empty() || s.name == "sample")) {
      sum.stream_stage = s.name;
      sum.stream_slowdown = s.slowdown;
    }
    sum.any_fail = sum.any_fail || s.mode == StageMode::DoesNotFit;
    sum.any_streams = sum.any_streams || s.mode == StageMode::Streams;
    sum.any_degraded = sum.any_degraded || s.mode == StageMode::Partial || s.mode == StageMode::TiledFallback;
    sum.any_partial = sum.any_partial || s.mode == StageMode::Partial;
    sum.any_retry = sum.any_retry || s.mode == StageMode::TiledFallback;
  }
  return sum;
}

// Dynamic VRAM: a run has everything resident or streams; "tight" stays only for a stage on the legacy
// loader (GGUF) that partial loading saves.
void dynamic_verdict(Estimate& est, const StageSummary& sum, bool ram_slow, const std::string& disk_reads) {
  if (sum.any_streams) {
    est.verdict = Verdict::Streams;
    est.verdict_reason = sum.stream_stage + " streams weights, about " + one_decimal(sum.stream_slowdown) + "x slower";
    if (ram_slow) est.verdict_reason += "; " + disk_reads;
  } else if (ram_slow) {
    est.verdict = Verdict::Streams;
    est.verdict_reason = disk_reads;
  } else if (sum.any_partial) {
    est.verdict = Verdict::Tight;
    est.verdict_reason = "a GGUF model stays on the legacy loader and fits only with partial loading";
  } else if (sum.any_retry) {
    // The untiled decode runs out of memory first: the run lives on ComfyUI's tiled retry, as on the
    // legacy loader, not on a plan that fits.
    est.verdict = Verdict::Tight;
    est.verdict_reason = "fits only with ComfyUI's tiled retry after the untiled VAE pass runs out of memory";
  } else {
    est.verdict = Verdict::Fits;
  }
}

void set_verdict(Estimate& est, const StageSummary& sum, const Runtime& runtime) {
  const std::uint64_t V = est.vram_bytes;
  if (!V) return;
  const bool ram_short = runtime.ram_bytes && est.host_ram_held_bytes > runtime.ram_bytes;
  // Under dynamic VRAM the file-backed rest only costs disk reads.
  const bool ram_slow = !ram_short && runtime.ram_bytes && est.host_ram_bytes > runtime.ram_bytes;
  const std::string disk_reads = "slower, reads weights from disk: the weights need " +
                                 format_bytes(est.host_ram_bytes) + " of " + format_bytes(runtime.ram_bytes) +
                                 " host RAM and are read file-backed";
  const double margin = runtime_constant("tight_margin_fraction");
  if (sum.any_fail || est.peak_bytes > V) {
    est.verdict = Verdict::DoesNotFit;
    est.verdict_reason = "runs out of VRAM in " + (sum.fail_stage.empty() ? est.peak_stage : sum.fail_stage);
    est.limit = "vram";
    est.limit_stage = sum.fail_stage.empty() ? est.peak_stage : sum.fail_stage;
  } else if (ram_short) {
    est.verdict = Verdict::DoesNotFit;
    est.limit = "host_ram";
    est.verdict_reason =
        runtime.loader == Runtime::Loader::Dynamic
            ? "runs out of host RAM: LoRA patches and models on the legacy loader need " +
                  format_bytes(est.host_ram_held_bytes) + " of " + format_bytes(runtime.ram_bytes) + " (" +
                  host_ram_end(runtime) + ")"
            : "runs out of host RAM: the weights need " + format_bytes(est.host_ram_bytes) + " of " +
                  format_bytes(runtime.ram_bytes);
  } else if (runtime.loader == Runtime::Loader::Dynamic) {
    dynamic_verdict(est, sum, ram_slow, disk_reads);
  } else if (sum.any_degraded || est.own_peak_bytes > static_cast<std::uint64_t>(V * (1.0 - margin))) {
    est.verdict = Verdict::Tight;
    est.verdict_reason = sum.any_degraded ? "fits only with partial loading or the tiled retry"
                                          : "the peak is within " + std::to_string(static_cast<int>(margin * 100 + 0.5)) +
                                                "% of the card";
  } else {
    est.verdict = Verdict::Fits;
  }
}

}  // namespace

Estimate estimate(const Job& job, const Runtime& runtime) {
  ResolvedJob rj = resolve_job(job);
  upcast_fp8_like_comfyui(rj, runtime);
  mark_native_compute(rj, runtime);
  const Policies p = policies(runtime);
  Estimate est;
  est.stages.reserve(6);
  est.vram_bytes = p.vram;
  est.notes = rj.notes;
  for (const auto& n : job.notes) est.notes.push_back(n);
  Loaded earlier;
  stages_before_sample(est, rj, job, p, earlier);
  if (rj.vae) earlier.push_back({rj.vae->model->name, rj.vae->weight_bytes});
  if (rj.diffusion && !job.samplers.empty()) {
    est.samplers = sampler_peaks(job, runtime, p, earlier);
    if (est.samplers.size() > 1) est.notes.push_back(samplers_note(est.samplers));
  }
  // The models of the samplers that ran before this job's stay cached while they fit.
  for (std::size_t i = 0; i < rj.other_diffusion.size(); ++i)
    if (job.other_diffusion[i].runs_before) add_loaded(earlier, rj.other_diffusion[i]);
  if (rj.diffusion) est.stages.push_back(sample_stage(rj, job, p, earlier));
  if (rj.vae) est.stages.push_back(decode_of(rj, job, runtime, p, earlier));

  apply_calibration(est, job, runtime.calibration);

  est.runtime = runtime.loader;
  est.host_ram_bytes = host_ram_needed(rj, job);
  est.host_ram_held_bytes = host_ram_held(rj, job, runtime);
  est.ram_bytes = runtime.ram_bytes;
  set_verdict(est, summarise_stages(est), runtime);
  return est;
}

}  // namespace headroom
