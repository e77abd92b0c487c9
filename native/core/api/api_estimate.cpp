// api::estimate(): one run's memory per stage from a JSON request that mirrors `headroom estimate`.
#include <cctype>

#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"
#include "core/base/units.hpp"
#include "core/catalog/card_budget.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/job_models.hpp"
#include "core/estimate/kv_cache_sampling.hpp"

namespace headroom::api {
namespace {

std::string normalised_name(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(c == '_' || c == ' ' ? '-' : std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Sets the precision of `c` after checking it suits the model (field names the request key).
void set_precision(Component& c, const std::string& text, const std::string& field) {
  const PrecisionInfo& p = resolve_precision(text, field);
  check_precision_for_role(model_of(c, "model"), p, field);
  c.precision = p.name;
}

Component& component_of(Job& job, Role role) {
  switch (role) {
    case Role::DiffusionModel: return *job.diffusion;
    case Role::TextEncoder: return job.text_encoders.front();
    case Role::ClipVision: return *job.clip_vision;
    case Role::AudioEncoder: return *job.audio_encoder;
    case Role::ModelPatch:  // default_job refuses a patch alone
    case Role::Vae: break;
  }
  return *job.vae;
}

// The precisions the request names (or the model's file name implies), each checked against its model.
void apply_precisions(const request::Request& request, const std::string& model, const ModelInfo& named, Job& job) {
  if (request.has("precision")) {
    set_precision(component_of(job, named.role), request.text("precision"), "precision");
  } else if (auto guessed = precision_from_file_name(model); guessed && named.name != normalised_name(model)) {
    // A file name such as flux1-dev-fp8.safetensors names the precision too.
    const PrecisionInfo& p = resolve_precision(*guessed, "model");
    if (named.role != Role::Vae || p.kind == PrecisionKind::Float) {
      component_of(job, named.role).precision = p.name;
      job.notes.push_back("precision " + p.name + " taken from the name '" + model + "'");
    }
  }
  if (request.has("text_encoder_precision")) {
    const std::string p = request.text("text_encoder_precision");
    if (job.text_encoders.empty())
      throw InputError("text_encoder_precision", named.name + " uses no text encoder");
    // The setting targets the big T5-family encoder; CLIP-L (0.25 GB) keeps its default.
    bool any = false;
    for (auto& t : job.text_encoders)
      if (model_of(t).family == "t5_encoder" || job.text_encoders.size() == 1) {
        set_precision(t, p, "text_encoder_precision");
        any = true;
      }
    if (!any) set_precision(job.text_encoders.back(), p, "text_encoder_precision");
  }
  if (request.has("vae_precision")) {
    if (!job.vae) throw InputError("vae_precision", named.name + " uses no VAE");
    set_precision(*job.vae, request.text("vae_precision"), "vae_precision");
  }
  if (request.has("clip_vision_precision")) {
    if (!job.clip_vision) throw InputError("clip_vision_precision", named.name + " uses no CLIP vision model");
    set_precision(*job.clip_vision, request.text("clip_vision_precision"), "clip_vision_precision");
  }
}

// How the sampler steps the latent; block_frames belongs to block-by-block sampling only.
void apply_sampling_fields(const request::Request& request, Job& job) {
  if (request.has("sampling")) job.sampling = *sampling_kind_of(request.text("sampling"));
  if (!request.has("block_frames")) return;
  if (job.sampling != SamplingKind::KvCacheBlocks)
    throw InputError("block_frames", "is read only with sampling kv_cache_blocks (the job samples the whole latent at each step)");
  job.block_frames = static_cast<int>(request.integer("block_frames"));
}

// The run's size and loader settings: each field left out keeps the model's default.
void apply_run_fields(const request::Request& request, Job& job) {
  job.width = static_cast<int>(request.integer_or("width", job.width));
  job.height = static_cast<int>(request.integer_or("height", job.height));
  job.frames = static_cast<int>(request.integer_or("frames", job.frames));
  job.seconds = request.number_or("seconds", job.seconds);
  job.tokens = static_cast<int>(request.integer_or("tokens", job.tokens));
  job.batch = static_cast<int>(request.integer_or("batch", job.batch));
  job.cfg = request.number_or("cfg", job.cfg);
  job.reference_images = static_cast<int>(request.integer_or("reference_images", job.reference_images));
  if (request.has("decode_mode")) {
    const std::string m = request.text("decode_mode");
    job.decode_mode = m == "full" ? DecodeMode::Full : m == "tiled" ? DecodeMode::Tiled : DecodeMode::Headroom;
  }
  if (request.has("decode_tile_px")) {
    job.decode_tile_px = static_cast<int>(request.integer("decode_tile_px"));
    if (job.decode_tile_px != 0 && job.decode_tile_px < 64)
      throw InputError("decode_tile_px", "expected 0 (choose) or a tile edge of at least 64 px, got " +
                                             std::to_string(job.decode_tile_px));
  }
  job.blocks_swapped = static_cast<int>(request.integer_or("blocks_swapped", job.blocks_swapped));
  apply_sampling_fields(request, job);
  job.text_encoder_on_cpu = request.flag_or("text_encoder_on_cpu", job.text_encoder_on_cpu);
  if (auto b = request.bytes_if("lora_bytes")) job.lora_bytes = *b;
}

json card_to_json(const GpuInfo& g) {
  return {{"name", g.name}, {"memory_bytes", g.memory_bytes},
          {"price_eur_per_hour", g.price_eur_per_hour ? json(*g.price_eur_per_hour) : json(nullptr)},
          {"fp8_compute", g.fp8_compute ? json(*g.fp8_compute) : json(nullptr)}};
}

}  // namespace

const request::Fields& estimate_fields() {
  using request::Kind;
  static const request::Fields f = with_runtime_fields(with_card_budget({
      {"model", Kind::String,
       "catalog name, alias or file name; a diffusion model brings its companions, a text encoder, CLIP vision "
       "model or VAE alone gives only its own stage",
       0, 0, {}, true, "model"},
      {"precision", Kind::String, "of model (bf16, fp16, fp32, fp8_e4m3fn, fp8_e5m2, fp8_scaled, gguf-q8_0 ...)",
       0, 0, {}, false, "precision"},
      {"text_encoder_precision", Kind::String, "of the T5-family text encoder (CLIP-L keeps its default)", 0, 0, {},
       false, "text-encoder-precision"},
      {"vae_precision", Kind::String, "of the VAE", 0, 0, {}, false, "vae-precision"},
      {"clip_vision_precision", Kind::String, "of the CLIP vision model", 0, 0, {}, false, "clip-vision-precision"},
      {"width", Kind::Int, "image width in px", 16, 16384, {}, false, "width"},
      {"height", Kind::Int, "image height in px", 16, 16384, {}, false, "height"},
      {"frames", Kind::Int, "video frames", 1, 10001, {}, false, "frames"},
      {"seconds", Kind::Number, "audio length in seconds (audio models)", 0, 3600, {}, false, "seconds"},
      {"tokens", Kind::Int, "latent shape tokens (token-latent models: Hunyuan3D)", 0, 65536, {}, false, "tokens"},
      {"batch", Kind::Int, "images or videos at once", 1, 1024, {}, false, "batch"},
      {"cfg", Kind::Number, "CFG scale; other than 1 may batch cond and uncond", 0, 100, {}, false, "cfg"},
      {"reference_images", Kind::Int, "Kontext reference images", 0, 16, {}, false, "references"},
      {"decode_mode", Kind::Enum, "how the VAE decodes", 0, 0, "full|tiled|headroom", false, "decode"},
      {"decode_tile_px", Kind::Int, "decode tile edge in px, 0 = choose (else at least 64)", 0, 16384, {}, false, "tile"},
      {"blocks_swapped", Kind::Int, "transformer blocks swapped to RAM", 0, 1000, {}, false, "block-swap"},
      {"sampling", Kind::Enum,
       "how the sampler steps the latent: standard (the whole latent each step) or kv_cache_blocks (block by block "
       "with a key/value cache: ComfyUI's ar_video sampler); default: the model's",
       0, 0, "standard|kv_cache_blocks", false, "sampling"},
      {"block_frames", Kind::Int, "latent frames per block with sampling kv_cache_blocks (SamplerARVideo's num_frame_per_block, 1 to 64)",
       1, 64, {}, false, "block-frames"},
      {"text_encoder_on_cpu", Kind::Bool, "the text encoder runs on the CPU", 0, 0, {}, false, "text-encoder-on-cpu"},
      {"lora_bytes", Kind::Bytes, "LoRA weights on the card", 0, static_cast<double>(1ull << 42), {}, false, "lora",
       MiB},
      {"allow_lowvram", Kind::Bool, "partial loading when weights do not fit (ComfyUI's default: true)", 0, 0, {},
       false, "allow-lowvram:true=true/false=false"},
      {"fp8_compute", Kind::Bool, "the card computes in fp8 (set from gpus.json with gpu)", 0, 0, {}, false,
       "fp8-compute:true=true/false=false"},
  }));
  return f;
}

json estimate(const json& body) {
  const request::Request request(body, "estimate", estimate_fields());
  const std::string model = request.text("model");
  Job job = default_job(model);
  resolve_models(job);
  const ModelInfo& named = resolve_model(model, "model");
  apply_precisions(request, model, named, job);
  apply_run_fields(request, job);

  const CardBudget card = card_budget_of(request);
  Runtime rt = runtime_of(request, card);  // reserve_bytes is one of the loader fields
  rt.allow_lowvram = request.flag_or("allow_lowvram", rt.allow_lowvram);
  if (request.has("fp8_compute")) rt.fp8_compute = request.flag("fp8_compute") ? 1 : 0;

  Estimate est = headroom::estimate(job, rt);
  json out = est.to_json();
  out["job"] = job_to_json(job);
  if (card.gpu) out["gpu"] = card_to_json(*card.gpu);
  if (rt.free_bytes) {
    out["budget_bytes"] = rt.free_bytes;
    out["free_bytes"] = rt.free_bytes;
    if (rt.vram_bytes) out["vram_bytes"] = rt.vram_bytes;  // the card's total; the verdict is against free
  } else if (rt.vram_bytes) {
    out["budget_bytes"] = rt.vram_bytes;
  }
  return out;
}

}  // namespace headroom::api
