#include "core/estimate/memory_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/estimate/decode_plan.hpp"
#include "core/estimate/job_models.hpp"
#include "core/estimate/kv_cache_sampling.hpp"
#include "core/estimate/vae_retry.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

// The typed figures of a model of a given role (the catalog sets exactly one by role; a model
// reaching here in another role is a bug in resolve_job, not bad data).
const DiffusionArch& diffusion_of(const ModelInfo& m) {
  if (!m.diffusion) throw Error(m.name + " has no diffusion-model figures");
  return *m.diffusion;
}
const EncoderArch& encoder_of(const ModelInfo& m) {
  if (!m.encoder) throw Error(m.name + " has no encoder figures");
  return *m.encoder;
}
const VaeArch& vae_of(const ModelInfo& m) {
  if (!m.vae) throw Error(m.name + " has no VAE figures");
  return *m.vae;
}

ResolvedComponent resolve_component(const Component& c, Role expected, const std::string& field) {
  ResolvedComponent r;
  r.model = &model_of(c, field);
  if (r.model->role != expected)
    throw InputError(field, r.model->name + " is a " + role_name(r.model->role) + ", not a " + role_name(expected));
  const std::string pfield = field + ".precision";
  r.precision = &resolve_precision(c.precision.empty() ? r.model->default_precision : c.precision, pfield);
  check_precision_for_role(*r.model, *r.precision, pfield);
  if (c.weight_bytes) {
    r.weight_bytes = *c.weight_bytes;
    r.from_header = true;
  } else {
    r.weight_bytes = weight_bytes(*r.model, *r.precision);
  }
  return r;
}

void check_range(const std::string& field, long long value, long long lo, long long hi, const std::string& what) {
  if (value < lo || value > hi)
    throw InputError(field, "expected " + what + " from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                ", got " + std::to_string(value));
}

// Live elements per token at a block's peak: the largest phase's a*hidden + b*ffn.
double elems_per_token(const ModelInfo& m) {
  if (m.diffusion) return m.diffusion->activation.elems_per_token(m.diffusion->hidden, m.diffusion->ffn);
  const EncoderArch& e = encoder_of(m);
  return e.activation.elems_per_token(e.hidden, e.ffn);
}

// Parameters of the largest linear layer: what one streamed or dequantised layer holds.
double largest_linear_params(const ModelInfo& m) {
  return m.diffusion ? m.diffusion->largest_linear_params : encoder_of(m).largest_linear_params;
}

std::uint64_t dequant_transient(const ResolvedComponent& c, int compute_bytes, bool lora) {
  if (!c.precision->quantised() || c.native_compute) return 0;
  // One layer at a time is cast/dequantised to the compute dtype (comfy ops cast_bias_weight,
  // ComfyUI-GGUF dequantize); a LoRA patch on it holds a second copy while it is applied.
  double params = largest_linear_params(*c.model);
  return static_cast<std::uint64_t>(params * compute_bytes * (lora ? 2 : 1));
}

std::uint64_t latent_frames_for(const Job& job, int temporal_stride) {
  if (temporal_stride <= 1 || job.frames <= 1) return 1;
  return static_cast<std::uint64_t>((job.frames - 1) / temporal_stride + 1);
}

// Output frames ComfyUI actually produces: ((F-1)//4)*4+1 for a 4x causal VAE.
std::uint64_t output_frames_for(const Job& job, int temporal_stride) {
  if (temporal_stride <= 1) return static_cast<std::uint64_t>(job.frames);
  return (latent_frames_for(job, temporal_stride) - 1) * temporal_stride + 1;
}

// An audio latent's positions along time: ComfyUI's audio latent nodes round seconds x rate.
std::uint64_t audio_latent_length(double seconds, double latents_per_second) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(seconds * latents_per_second)));
}

// Output samples (per channel) an audio VAE writes for the job's clip.
std::uint64_t audio_output_samples(const Job& job, const VaeArch& vae) {
  return static_cast<std::uint64_t>(std::ceil(job.seconds * vae.audio_sample_rate));
}

// VAE working set of a decode (activations + cache + output buffers), allocated bytes.
struct DecodeCost {
  std::uint64_t activations = 0;
  std::uint64_t output = 0;
};

DecodeCost decode_cost(const ResolvedJob& rj, std::uint64_t px_h, std::uint64_t px_w, std::uint64_t frames, int images) {
  const VaeArch& vae = vae_of(*rj.vae->model);
  const VaeDecodeCost& dec = vae.decode;
  const int vb = vae_compute_bytes(*rj.vae);
  const double px = static_cast<double>(px_h) * px_w;
  DecodeCost c;
  if (dec.causal_per_latent_frame) {
    const int ts = vae.temporal_stride();
    const std::uint64_t lat_t = frames <= 1 ? 1 : (frames - 1) / ts + 1;
    const double elems = lat_t <= 1 ? dec.single_frame_elems_per_output_px : dec.chunk_elems_per_output_px;
    c.activations = static_cast<std::uint64_t>(elems * px * vb) * images;
    // The RGB clip grows on the GPU by torch.cat (old + new alive): a per-frame term.
    if (lat_t > 1) c.output = static_cast<std::uint64_t>(dec.output_copies * 3.0 * frames * px * vb) * images;
  } else {
    c.activations = static_cast<std::uint64_t>(dec.elems_per_output_px * px * vb) * images;
  }
  return c;
}

DecodePlan plan_with_native_decoder(const ResolvedJob& rj, std::uint64_t budget) {
  const Job& job = *rj.job;
  const VaeArch& vae = vae_of(*rj.vae->model);
  if (vae.decoder == DecoderKind::None) throw Error(rj.vae->model->name + " has no native Headroom decoder");
  DecodeRequest req;
  req.family = decoder_kind_name(vae.decoder);
  req.arch = &vae;
  req.latent_channels = vae.z_channels;
  req.batch = job.batch;
  req.latent_frames = static_cast<int>(latent_frames_for(job, vae.temporal_stride()));
  const int s = vae.spatial_stride();
  req.latent_height = static_cast<int>(ceil_div(job.height, s));
  req.latent_width = static_cast<int>(ceil_div(job.width, s));
  req.dtype_bytes = vae_compute_bytes(*rj.vae);
  req.mode = "auto";
  req.tile_px = job.decode_tile_px;
  req.budget_bytes = budget;
  return plan_decode(req);
}

// ComfyUI tiled decode: 2-D runs three passes with tiles (t/2 x 2t), (2t x t/2), (t x t), one after
// the other, accumulating on the CPU; 3-D runs one pass with t x t tiles over `tile_frames` frames.
StageDemand tiled_decode(const ResolvedJob& rj, int tile_px, std::uint64_t tile_frames, const std::string& why) {
  const Job& job = *rj.job;
  StageDemand d;
  d.name = "vae_decode";
  d.weights.push_back({rj.vae->model->name, rj.vae->weight_bytes});
  d.resident_labels.push_back(rj.vae->model->name);
  const VaeArch& vae = vae_of(*rj.vae->model);
  const bool video = vae.video();
  const std::uint64_t W = job.width, H = job.height, t = static_cast<std::uint64_t>(tile_px);
  std::uint64_t area = 0;
  if (video) {
    area = std::min(t, H) * std::min(t, W);
  } else {
    area = std::max({std::min(t / 2, W) * std::min(2 * t, H), std::min(2 * t, W) * std::min(t / 2, H),
                     std::min(t, W) * std::min(t, H)});
  }
  const std::uint64_t side = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(area)));
  std::uint64_t frames = video ? std::min<std::uint64_t>(tile_frames, output_frames_for(job, vae.temporal_stride())) : 1;
  DecodeCost c = decode_cost(rj, side, area / std::max<std::uint64_t>(side, 1), frames, 1);
  d.transient["activations"] = c.activations;
  if (c.output) d.transient["output_buffers"] = c.output;
  const double tiles_area = video ? 1.0 : 3.0;  // three passes for 2-D (facts comfyui-internals §1.5)
  const double overlap = 1.0 + 2.0 * runtime_constant("tiled_decode_default_overlap_px") / std::max<double>(tile_px, 128);
  d.slowdown = (W * H <= area && !video) ? 1.0 : tiles_area * overlap;
  d.notes.push_back(why + ": " + std::to_string(tile_px) + " px tiles" +
                    (video ? ", " + std::to_string(frames) + " frames per tile" : ", three passes averaged") +
                    "; output accumulated on the CPU");
  return d;
}

// A UNet's live elements per batch element at its peak: every input block's output waits for its skip
// connection (conv_in and the resblocks at full size, then per level the downsample and resblocks), and
// on top of them the largest level's own working set, at (latent px / 4^l) pixels.
struct UnetPeak {
  double elems = 0;
  double attention_flops = 0;  // 4 n^2 c per transformer block, over the levels
};
UnetPeak unet_peak(const DiffusionArch& arch, const SampleGeometry& g) {
  UnetPeak p;
  const double px0 = static_cast<double>(g.latent_frames * g.latent_h * g.latent_w);
  const double ffn_ratio = static_cast<double>(arch.ffn) / arch.hidden;
  double skips = 0, level_peak = 0;
  for (std::size_t l = 0; l < arch.levels.size(); ++l) {
    const UnetLevel& lv = arch.levels[l];
    const double px = px0 / std::pow(4.0, static_cast<double>(l));
    const double c = lv.channels;
    const double in = l == 0 ? c : arch.levels[l - 1].channels;  // conv_in, or the downsample's output
    skips += px * (in + lv.res_blocks * c);
    const double per_px = lv.transformer_depth > 0 ? arch.activation.elems_per_token(c, c * ffn_ratio)
                                                   : arch.conv_hidden_multiple * c;
    level_peak = std::max(level_peak, per_px * px);
    p.attention_flops += 4.0 * px * px * c * lv.transformer_depth * lv.res_blocks * 2;  // down and up sides
  }
  p.elems = skips + level_peak;
  return p;
}

// Each component of a list, its errors naming the field with the index ("other_diffusion[1]").
template <typename T, typename Get>
std::vector<ResolvedComponent> resolve_list(const std::vector<T>& items, Role role, const std::string& field, Get component) {
  std::vector<ResolvedComponent> out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out.push_back(resolve_component(component(items[i]), role, field + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace

int vae_compute_bytes(const ResolvedComponent& vae) {
  // ComfyUI runs the VAE in bf16 on Ampere+ (vae_dtype); an explicit fp32/fp16 choice is honoured.
  return vae.precision->name == "fp32" ? 4 : 2;
}

ResolvedJob resolve_job(const Job& job) {
  ResolvedJob r;
  r.job = &job;
  check_range("width", job.width, 16, 16384, "output width in pixels");
  check_range("height", job.height, 16, 16384, "output height in pixels");
  check_range("frames", job.frames, 1, 10001, "a frame count");
  check_range("batch", job.batch, 1, 1024, "a batch size");
  check_range("reference_images", job.reference_images, 0, 16, "a number of reference images");
  check_range("tokens", job.tokens, 0, 65536, "a number of latent tokens");
  if (!(job.seconds >= 0.0 && job.seconds <= 3600.0))
    throw InputError("seconds", "expected an audio length from 0 to 3600 seconds, got " + std::to_string(job.seconds));
  check_range("blocks_swapped", job.blocks_swapped, 0, 1000, "a number of blocks");
  if (job.decode_tile_px != 0) check_range("decode_tile_px", job.decode_tile_px, 64, 16384, "a tile edge in pixels");
  if (!(job.cfg >= 0.0 && job.cfg <= 100.0)) throw InputError("cfg", "expected a CFG scale from 0 to 100, got " + std::to_string(job.cfg));
  if (job.lora_bytes > 4096ull * GiB) throw InputError("lora_bytes", "is larger than 4 TiB; give the LoRA file size in bytes");

  if (job.diffusion) r.diffusion = resolve_component(*job.diffusion, Role::DiffusionModel, "diffusion");
  const auto itself = [](const Component& c) -> const Component& { return c; };
  r.text_encoders = resolve_list(job.text_encoders, Role::TextEncoder, "text_encoders", itself);
  for (std::size_t i = 0; i < job.text_generations.size(); ++i) {
    const std::string field = "text_generations[" + std::to_string(i) + "]";
    const TextGeneration& g = job.text_generations[i];
    check_range(field + ".new_tokens", g.new_tokens, 1, 1 << 20, "a number of tokens to write");
    r.generators.push_back(resolve_component(g.model, Role::TextEncoder, field));
    const ModelInfo& m = *r.generators.back().model;
    if (encoder_of(m).kv_elems_per_token <= 0)
      throw InputError(field, m.name + " only encodes text: models.json gives it no arch.generation (kv_layers, kv_heads, "
                              "head_dim); give a language model that writes text");
  }
  if (job.clip_vision) r.clip_vision = resolve_component(*job.clip_vision, Role::ClipVision, "clip_vision");
  if (job.audio_encoder) r.audio_encoder = resolve_component(*job.audio_encoder, Role::AudioEncoder, "audio_encoder");
  r.model_patches = resolve_list(job.model_patches, Role::ModelPatch, "model_patches", itself);
  if (job.vae) r.vae = resolve_component(*job.vae, Role::Vae, "vae");
  const auto model = [](const OtherModel& o) -> const Component& { return o.model; };
  r.other_diffusion = resolve_list(job.other_diffusion, Role::DiffusionModel, "other_diffusion", model);
  r.other_text_encoders = resolve_list(job.other_text_encoders, Role::TextEncoder, "other_text_encoders", model);
  if (!r.diffusion && !r.model_patches.empty())
    throw InputError("model_patches", "a model patch is sampled with the diffusion model it patches; give that model too");
  if (!r.diffusion && r.text_encoders.empty() && !r.clip_vision && !r.audio_encoder && !r.vae)
    throw InputError("model", "the job names no model; give a diffusion model, a text encoder, an audio encoder or a VAE");

  if (r.diffusion) {
    const ModelInfo& m = *r.diffusion->model;
    const DiffusionArch& arch = diffusion_of(m);
    const int ts = arch.temporal_stride();
    if (!arch.video() && !arch.latent_layers && job.frames != 1)
      throw InputError("frames", m.name + " is an image model; frames must be 1, got " + std::to_string(job.frames));
    if (arch.audio() && !(job.seconds > 0))
      throw InputError("seconds", m.name + " is an audio model; expected the clip's length in seconds (above 0), got " +
                                      std::to_string(job.seconds));
    if (!arch.audio() && job.seconds != 0)
      throw InputError("seconds", m.name + " is not an audio model; seconds must be 0, got " + std::to_string(job.seconds));
    if (arch.token_latent && job.tokens <= 0)
      throw InputError("tokens", m.name + " samples a latent of shape tokens; expected their number (EmptyLatentHunyuan3Dv2's "
                                 "resolution, 1 to 65536), got " + std::to_string(job.tokens));
    if (!arch.token_latent && job.tokens != 0)
      throw InputError("tokens", m.name + " does not sample a token latent; tokens must be 0, got " + std::to_string(job.tokens));
    if (job.blocks_swapped > arch.blocks)
      throw InputError("blocks_swapped", m.name + " has " + std::to_string(arch.blocks) + " blocks; cannot swap " +
                                             std::to_string(job.blocks_swapped));
    if (arch.video() && (job.frames - 1) % ts != 0)
      r.notes.push_back("frames " + std::to_string(job.frames) + " is not " + std::to_string(ts) + "k+1; ComfyUI makes " +
                        std::to_string(((job.frames - 1) / ts) * ts + 1) + " frames");
    if (r.vae && r.vae->model->name != m.companion_vae && !m.companion_vae.empty())
      r.notes.push_back("vae " + r.vae->model->name + " is not the usual VAE of " + m.name + " (" + m.companion_vae + ")");
  }
  if (r.vae && vae_of(*r.vae->model).audio() && !(job.seconds > 0))
    throw InputError("seconds", r.vae->model->name + " decodes audio; expected the clip's length in seconds (above 0), got " +
                                    std::to_string(job.seconds));
  if (r.vae && vae_of(*r.vae->model).decode.latent_tokens && job.tokens <= 0)
    throw InputError("tokens", r.vae->model->name + " decodes a latent of shape tokens; expected their number (1 to 65536), got " +
                                   std::to_string(job.tokens));
  if (r.vae && !vae_of(*r.vae->model).video() && job.frames != 1 && !r.diffusion)
    throw InputError("frames", r.vae->model->name + " decodes images; frames must be 1, got " + std::to_string(job.frames));
  return r;
}

SampleGeometry sample_geometry(const ModelInfo& m, const Job& job) {
  const DiffusionArch& arch = diffusion_of(m);
  SampleGeometry g;
  // A layered latent keeps every layer as a frame of its own: no temporal compression.
  g.latent_frames = arch.latent_layers ? static_cast<std::uint64_t>(job.frames) : latent_frames_for(job, arch.temporal_stride());
  g.latent_h = ceil_div(job.height, arch.spatial_stride());
  g.latent_w = ceil_div(job.width, arch.spatial_stride());
  if (arch.token_latent) {  // a set of shape tokens: one sequence position each, whatever the width and height say
    g.latent_frames = 1;
    g.latent_h = 1;
    g.latent_w = static_cast<std::uint64_t>(job.tokens);
  }
  if (arch.audio()) {  // a 1-D clip: rows x positions along time, whatever the width and height say
    g.latent_frames = 1;
    g.latent_h = static_cast<std::uint64_t>(arch.audio_rows);
    g.latent_w = audio_latent_length(job.seconds, arch.audio_latents_per_second);
  }
  std::uint64_t run_w = g.latent_w;  // the positions one pass of the model sees
  if (const auto window = static_cast<std::uint64_t>(arch.audio_window_latents); window && g.latent_w > window) {
    run_w = window;
    g.windows = 1 + ceil_div(g.latent_w - window, static_cast<std::uint64_t>(arch.audio_window_hop));
  }
  const std::uint64_t per_frame = ceil_div(g.latent_h, arch.patch[1]) * ceil_div(run_w, arch.patch[2]);
  const bool ref_tokens = arch.image_conditioning == ImageConditioning::ReferenceTokens;
  const std::uint64_t refs = ref_tokens ? static_cast<std::uint64_t>(job.reference_images) : 0;
  // A reference image is one frame beside a layered latent's frames, and one per frame of a clip.
  const std::uint64_t frames_and_refs = arch.latent_layers ? g.latent_frames + refs : g.latent_frames * (1 + refs);
  g.image_tokens = frames_and_refs * per_frame;
  g.sequence_tokens = g.image_tokens + (arch.text_in_sequence ? static_cast<std::uint64_t>(arch.text_tokens) : 0);
  g.comfy_area = frames_and_refs * g.latent_h * g.latent_w;
  return g;
}

std::uint64_t comfy_sampling_estimate(const ResolvedJob& rj, int batch) {
  if (!rj.diffusion) return 0;
  const ModelInfo& m = *rj.diffusion->model;
  const SampleGeometry g = sample_geometry(m, *rj.job);
  const double factor = diffusion_of(m).comfy_memory_usage_factor;
  // area * dtype_size * 0.01 * factor MiB (comfy/model_base.py memory_required, SDPA branch).
  return static_cast<std::uint64_t>(static_cast<double>(g.comfy_area) * batch * dtype_bytes(m.compute_dtype) * 0.01 *
                                    factor * MiB);
}

std::uint64_t comfy_decode_estimate(const ResolvedJob& rj) {
  if (!rj.vae) return 0;
  if (const VaeArch& v = vae_of(*rj.vae->model); v.decode.latent_tokens)  // per latent token (comfy/sd.py ShapeVAE)
    return static_cast<std::uint64_t>(v.comfy_decode_constant * static_cast<double>(rj.job->tokens) * rj.job->batch *
                                      vae_compute_bytes(*rj.vae));
  if (const VaeArch& v = vae_of(*rj.vae->model); v.audio())  // ComfyUI's memory_used_decode grows with the samples
    return static_cast<std::uint64_t>(v.comfy_decode_constant * static_cast<double>(audio_output_samples(*rj.job, v)) *
                                      vae_compute_bytes(*rj.vae));
  const int s = vae_of(*rj.vae->model).spatial_stride();
  return comfy_decode_estimate(rj, ceil_div(rj.job->height, s), ceil_div(rj.job->width, s));
}

std::uint64_t comfy_decode_estimate(const ResolvedJob& rj, std::uint64_t lh, std::uint64_t lw) {
  if (!rj.vae) return 0;
  const VaeArch& v = vae_of(*rj.vae->model);
  const int s = v.spatial_stride();
  return static_cast<std::uint64_t>(v.comfy_decode_constant * lh * lw * s * s * vae_compute_bytes(*rj.vae));
}

std::optional<StageDemand> text_generate_demand(const ResolvedJob& rj) {
  if (rj.generators.empty()) return std::nullopt;
  StageDemand d;
  d.name = "text_generate";
  d.partial_loadable = true;
  std::uint64_t cache = 0, act = 0, dq = 0, layer = 0;
  for (std::size_t i = 0; i < rj.generators.size(); ++i) {
    const ResolvedComponent& g = rj.generators[i];
    const ModelInfo& m = *g.model;
    const EncoderArch& arch = encoder_of(m);
    const int cb = dtype_bytes(m.compute_dtype);
    // The prompt is at most the encoder's padded length; every written token adds its keys and values.
    const double tokens = static_cast<double>(arch.tokens) + rj.job->text_generations[i].new_tokens;
    cache = std::max(cache, static_cast<std::uint64_t>(tokens * arch.kv_elems_per_token * cb));
    act = std::max(act, static_cast<std::uint64_t>(arch.tokens * elems_per_token(m) * cb));  // the prompt's pass
    dq = std::max(dq, dequant_transient(g, cb, false));
    layer = std::max(layer, static_cast<std::uint64_t>(arch.largest_linear_params * cb));
    if (std::none_of(d.weights.begin(), d.weights.end(), [&](const auto& w) { return w.first == m.name; })) {
      d.weights.push_back({m.name, g.weight_bytes});
      d.resident_labels.push_back(m.name);
    }
    d.flops_per_pass += 2.0 * m.params * tokens;
  }
  d.transient["kv_cache"] = cache;
  d.transient["activations"] = act;
  if (dq) d.transient["dequant_transient"] = dq;
  d.stream_layer_bytes = layer;
  return d;
}

StageDemand text_encode_demand(const ResolvedJob& rj) {
  StageDemand d;
  d.name = "text_encode";
  d.partial_loadable = true;
  std::uint64_t act = 0, dq = 0, layer = 0, stored = 0, prefetch = 0;
  for (const auto& te : rj.text_encoders) {
    const ModelInfo& m = *te.model;
    const EncoderArch& arch = encoder_of(m);
    const int cb = dtype_bytes(m.compute_dtype);
    const double tokens = arch.tokens;
    std::uint64_t a = static_cast<std::uint64_t>(tokens * elems_per_token(m) * cb);
    // T5's relative position bias is a heads x seq x seq tensor added to the scores.
    if (arch.attention_bias) a += static_cast<std::uint64_t>(static_cast<double>(arch.heads) * tokens * tokens * cb);
    act = std::max(act, a);  // encoders run one after the other
    dq = std::max(dq, dequant_transient(te, cb, false));
    layer = std::max(layer, static_cast<std::uint64_t>(arch.largest_linear_params * cb));
    stored = std::max(stored, te.precision->bytes_for(static_cast<std::uint64_t>(arch.largest_linear_params)));
    prefetch = std::max(prefetch, te.precision->bytes_for(static_cast<std::uint64_t>(arch.block_prefetch_params)));
    d.weights.push_back({m.name, te.weight_bytes});
    d.resident_labels.push_back(m.name);
    d.flops_per_pass += 2.0 * m.params * tokens;
  }
  d.transient["activations"] = act;
  if (dq) d.transient["dequant_transient"] = dq;
  d.stream_layer_bytes = layer;
  d.stored_layer_bytes = stored;
  d.prefetch_block_bytes = prefetch;
  if (rj.job->text_encoder_on_cpu) {
    d.weights.clear();
    d.transient.clear();
    d.resident_labels.clear();
    d.partial_loadable = false;
    d.notes.push_back("text encoders run on the CPU: no VRAM for weights, encoding is slower");
  }
  return d;
}

namespace {

// One encoder's pass over its fixed token count (CLIP vision's image tokens, an audio encoder's positions).
StageDemand encoder_demand(const std::string& stage, const ResolvedComponent& cv) {
  StageDemand d;
  d.name = stage;
  d.partial_loadable = true;
  const ModelInfo& m = *cv.model;
  const EncoderArch& arch = encoder_of(m);
  const int cb = dtype_bytes(m.compute_dtype);
  const double tokens = arch.tokens;
  d.weights.push_back({m.name, cv.weight_bytes});
  d.resident_labels.push_back(m.name);
  d.transient["activations"] = static_cast<std::uint64_t>(tokens * elems_per_token(m) * cb);
  if (auto dq = dequant_transient(cv, cb, false)) d.transient["dequant_transient"] = dq;
  d.stream_layer_bytes = static_cast<std::uint64_t>(arch.largest_linear_params * cb);
  d.stored_layer_bytes = cv.precision->bytes_for(static_cast<std::uint64_t>(arch.largest_linear_params));
  d.flops_per_pass = 2.0 * m.params * tokens;
  return d;
}

}  // namespace

StageDemand clip_vision_demand(const ResolvedJob& rj) { return encoder_demand("clip_vision_encode", *rj.clip_vision); }

StageDemand audio_encode_demand(const ResolvedJob& rj) { return encoder_demand("audio_encode", *rj.audio_encoder); }

std::optional<StageDemand> vae_encode_demand(const ResolvedJob& rj) {
  if (!rj.vae || !rj.diffusion) return std::nullopt;
  const Job& job = *rj.job;
  const ModelInfo& dm = *rj.diffusion->model;
  const ModelInfo& vae = *rj.vae->model;
  const VaeEncodeCost& enc = vae_of(vae).encode;
  const int vb = vae_compute_bytes(*rj.vae);
  const double px = static_cast<double>(job.width) * job.height;
  StageDemand d;
  d.name = "vae_encode";
  d.weights.push_back({vae.name, rj.vae->weight_bytes});
  d.resident_labels.push_back(vae.name);
  const ImageConditioning cond = diffusion_of(dm).image_conditioning;
  const bool wan_i2v = cond == ImageConditioning::ClipConcat;
  if (wan_i2v) {
    // WanImageToVideo encodes the whole clip (start image + grey frames), one causal chunk per latent frame.
    const std::uint64_t frames = output_frames_for(job, vae_of(vae).temporal_stride());
    const double elems = frames > 1 ? enc.chunk_elems_per_input_px : enc.single_frame_elems_per_input_px;
    d.transient["activations"] = static_cast<std::uint64_t>(elems * px * vb);
    d.transient["input_video"] = static_cast<std::uint64_t>(3.0 * frames * px * vb);
    d.notes.push_back("WanImageToVideo encodes all " + std::to_string(frames) + " frames of the conditioning clip");
  } else if (cond == ImageConditioning::ReferenceTokens && job.reference_images > 0) {
    d.transient["activations"] = static_cast<std::uint64_t>(enc.elems_per_input_px * px * vb);
    d.transient["input_image"] = static_cast<std::uint64_t>(3.0 * px * vb);
    d.notes.push_back("Kontext reference image encoded at the output size (FluxKontextImageScale)");
  } else {
    return std::nullopt;
  }
  // After an OOM ComfyUI encodes tiled (comfy/sd.py VAE.encode): 256 px tiles for video, 512 px for
  // images; the pixels stay on the CPU and one tile at a time is moved over.
  const double tile = runtime_constant(wan_i2v ? "fallback_tile_px_video" : "fallback_tile_px_image");
  const double share = std::min(1.0, (std::min<double>(tile, job.width) * std::min<double>(tile, job.height)) / px);
  if (share < 1.0) {
    StageDemand fb = d;
    fb.fallback.clear();
    for (auto& t : fb.transient) t.second = static_cast<std::uint64_t>(t.second * share);
    fb.slowdown = runtime_constant(wan_i2v ? "tiled_retry_slowdown_video" : "tiled_retry_slowdown_image");
    fb.notes.push_back("ComfyUI's automatic retry after an OOM in the full encode: " + std::to_string(static_cast<int>(tile)) +
                       " px tiles");
    d.fallback.push_back(fb);
  }
  return d;
}

namespace {

// What one pass of a transformer attends over, for the sample stage's notes.
std::string sequence_note(const DiffusionArch& arch, const SampleGeometry& g, const Job& job) {
  std::string note = std::to_string(g.sequence_tokens) + " tokens per sequence";
  if (g.windows > 1)
    note += " (one window of " + std::to_string(arch.audio_window_latents) + " latent positions; " +
            std::to_string(g.windows) + " windows per step)";
  if (job.reference_images && arch.image_conditioning == ImageConditioning::ReferenceTokens)
    note += " (incl. " + std::to_string(job.reference_images) + " reference image(s))";
  return note + "; SDPA/flash attention, no NxN score matrix";
}

// A patch is its own CoreModelPatcher that the sampler loads with the model (the patch's models()).
void add_patch_weights(const ResolvedJob& rj, const ModelInfo& patched, StageDemand& d) {
  for (const auto& p : rj.model_patches) {
    d.weights.push_back({p.model->name, p.weight_bytes});
    d.resident_labels.push_back(p.model->name);
    d.notes.push_back("model patch " + p.model->name + " (" + format_bytes(p.weight_bytes) + ") loads with " +
                      patched.name + "; the activations of its layers inside each step are not counted");
  }
}

}  // namespace

StageDemand sample_demand(const ResolvedJob& rj, const DemandOptions& o) {
  const Job& job = *rj.job;
  const ResolvedComponent& dc = *rj.diffusion;
  const ModelInfo& m = *dc.model;
  const DiffusionArch& arch = diffusion_of(m);
  const int cb = dtype_bytes(m.compute_dtype);
  const SampleGeometry g = sample_geometry(m, job);
  const int eff_batch = job.batch * (o.cfg_batched ? 2 : 1);

  StageDemand d;
  d.name = "sample";
  d.partial_loadable = true;
  std::uint64_t weights = dc.weight_bytes;
  const int blocks = arch.blocks;
  const std::uint64_t block_bytes = dc.precision->bytes_for(static_cast<std::uint64_t>(arch.largest_block_params));
  std::string label = m.name;
  if (m.experts > 1) label += " (one expert)";
  if (job.blocks_swapped > 0) {
    // Block swap keeps N blocks in RAM and copies each in before use: one block buffer on the GPU.
    const std::uint64_t swapped = std::min<std::uint64_t>(weights, block_bytes * job.blocks_swapped);
    weights -= swapped;
    d.transient["block_swap_buffer"] = block_bytes;
    d.streamed_bytes = swapped;
    d.notes.push_back(std::to_string(job.blocks_swapped) + " of " + std::to_string(blocks) + " blocks swapped to RAM (" +
                      format_bytes(swapped) + " streamed per forward pass)");
  }
  d.weights.push_back({label, weights});
  d.resident_labels.push_back(label);
  if (job.lora_bytes && o.lora_in_host) {
    // Dynamic VRAM keeps the patches in pinned host buffers and bakes them into each weight as it is
    // cast (ops.resolve_cast_module_with_vbar): they take host memory, not VRAM.
    d.notes.push_back("LoRA (" + format_bytes(job.lora_bytes) +
                      ") stays in pinned host memory and is applied to each layer as it is cast (dynamic VRAM)");
  } else if (job.lora_bytes) {
    d.weights.push_back({"lora", job.lora_bytes});
    d.resident_labels.push_back("lora");
  }
  add_patch_weights(rj, m, d);

  const bool unet = !arch.levels.empty();
  const UnetPeak up = unet ? unet_peak(arch, g) : UnetPeak{};
  const double per_token = elems_per_token(m) * cb + arch.activation.fp32_elems_per_token * 4;
  d.transient["activations"] = static_cast<std::uint64_t>(unet ? up.elems * cb * eff_batch
                                                                : per_token * g.sequence_tokens * eff_batch);
  // Sampler state (x, noise, denoised, derivative) in fp32 at latent size.
  const double lat_ch = arch.latent_channels;
  d.transient["latents"] = static_cast<std::uint64_t>(4.0 * 4 * lat_ch * g.latent_frames * g.latent_h * g.latent_w *
                                                      (1 + job.reference_images) * job.batch);
  if (auto dq = dequant_transient(dc, cb, job.lora_bytes > 0)) d.transient["dequant_transient"] = dq;

  d.stream_layer_bytes = static_cast<std::uint64_t>(arch.largest_linear_params * cb);
  d.stored_layer_bytes = dc.precision->bytes_for(static_cast<std::uint64_t>(arch.largest_linear_params));
  d.prefetch_block_bytes = dc.precision->bytes_for(static_cast<std::uint64_t>(arch.block_prefetch_params));
  d.comfy_minimum_bytes = comfy_sampling_estimate(rj, job.batch);
  const double n = static_cast<double>(g.sequence_tokens);
  d.flops_per_pass = unet ? eff_batch * (2.0 * m.params * n + up.attention_flops)
                          : eff_batch * g.windows * (2.0 * m.params * n + 4.0 * n * n * arch.hidden * blocks);
  d.passes = (job.cfg != 1.0 && !o.cfg_batched) ? 2 : 1;

  if (job.sampling == SamplingKind::KvCacheBlocks) apply_kv_cache_sampling(d, m, g, job, eff_batch, per_token);
  else if (unet)
    d.notes.push_back("UNet of " + std::to_string(arch.levels.size()) + " levels from a " + std::to_string(g.latent_w) + "x" +
                      std::to_string(g.latent_h) + " latent: the input blocks' outputs are kept for the skip connections");
  else d.notes.push_back(sequence_note(arch, g, job));
  if (job.cfg != 1.0)
    d.notes.push_back(o.cfg_batched ? "cfg " + std::to_string(job.cfg).substr(0, 4) + ": cond and uncond batched (x2 activations)"
                                    : "cfg " + std::to_string(job.cfg).substr(0, 4) +
                                          ": cond and uncond run one after the other (ComfyUI found too little free memory to batch them)");
  else if ((m.defaults ? m.defaults->cfg : 1.0) == 1.0 && m.guidance_distilled)
    d.notes.push_back("guidance-distilled model at cfg 1: batch not doubled");
  if (m.experts > 1)
    d.notes.push_back("two experts, one active per step: the low-noise expert loads after the high-noise one is offloaded");
  if (dc.precision->kind == PrecisionKind::Fp8)
    d.notes.push_back("fp8 weights stay fp8 on cards with fp8 compute (Ada/Hopper+); older cards keep fp8 storage only when 16-bit does not fit");
  return d;
}

// An audio VAE decodes the whole clip at once (VAEDecodeAudio); after an OOM ComfyUI retries it in
// overlapping pieces along time (comfy/sd.py VAE.decode, decode_tiled_1d), a share of the clip at a time.
// The decode stage with the VAE's weights resident, before its working set is added.
StageDemand decode_stage(const ResolvedJob& rj) {
  StageDemand d;
  d.name = "vae_decode";
  d.weights.push_back({rj.vae->model->name, rj.vae->weight_bytes});
  d.resident_labels.push_back(rj.vae->model->name);
  return d;
}

StageDemand audio_decode_demand(const ResolvedJob& rj, const DemandOptions& o) {
  const Job& job = *rj.job;
  const ModelInfo& vae = *rj.vae->model;
  const VaeArch& arch = vae_of(vae);
  const double samples = static_cast<double>(audio_output_samples(job, arch));
  const int images = o.vae_batch > 0 ? std::min(o.vae_batch, job.batch) : job.batch;
  StageDemand d = decode_stage(rj);
  d.transient["activations"] =
      static_cast<std::uint64_t>(arch.decode.elems_per_output_px * samples * vae_compute_bytes(*rj.vae)) * images;
  // A fixed working set (MiniMax Music 3's DAV) stays whole in the retry's shorter pieces.
  const auto fixed = static_cast<std::uint64_t>(arch.decode.fixed_elems * vae_compute_bytes(*rj.vae));
  double latents = samples / std::max(1, arch.audio_samples_per_latent);
  if (job.decode_mode == DecodeMode::Tiled && job.decode_tile_px > 0 && latents > job.decode_tile_px) {
    // VAEDecodeAudioTiled: tile_size latent positions at a time along the clip, one tile's working set live.
    const double tile = job.decode_tile_px;
    d.transient["activations"] = static_cast<std::uint64_t>(d.transient["activations"] * (tile / latents));
    d.notes.push_back("tiled audio decode: " + std::to_string(job.decode_tile_px) + " latent positions of " +
                      std::to_string(static_cast<std::uint64_t>(latents)) + " at a time");
    latents = tile;
  } else {
    d.notes.push_back("audio decode of " + std::to_string(static_cast<std::uint64_t>(samples)) +
                      " samples per channel in one pass");
  }
  if (fixed) d.transient["fixed_working_set"] = fixed;
  const double tile = runtime_constant("audio_retry_tile_latents");
  if (latents > tile) {
    StageDemand fb = d;
    fb.fallback.clear();
    fb.notes.clear();
    for (auto& t : fb.transient) t.second = static_cast<std::uint64_t>(t.second * (tile / latents));
    if (fixed) fb.transient["fixed_working_set"] = fixed;
    fb.slowdown = runtime_constant("audio_retry_slowdown");
    fb.notes.push_back("ComfyUI's automatic retry after an OOM in the full decode: " + std::to_string(static_cast<int>(tile)) +
                       " latent positions at a time along the clip");
    d.fallback.push_back(fb);
  }
  return d;
}

// A token VAE (the Hunyuan3D ShapeVAE) runs its decoder transformer over the latent tokens, then evaluates
// the occupancy of a query grid chunk by chunk: activations grow with the tokens, the grid is a constant.
StageDemand token_decode_demand(const ResolvedJob& rj, const DemandOptions& o) {
  const Job& job = *rj.job;
  const ModelInfo& vae = *rj.vae->model;
  const VaeDecodeCost& dec = vae_of(vae).decode;
  const int images = o.vae_batch > 0 ? std::min(o.vae_batch, job.batch) : job.batch;
  StageDemand d = decode_stage(rj);
  d.transient["activations"] =
      static_cast<std::uint64_t>(dec.elems_per_latent_token * job.tokens * vae_compute_bytes(*rj.vae)) * images;
  d.transient["query_grid"] = static_cast<std::uint64_t>(dec.grid_bytes) * images;
  d.notes.push_back("shape decode of " + std::to_string(job.tokens) + " latent tokens, then the occupancy grid");
  return d;
}

// LatentCutToBatch puts a layered latent's frames into the batch: the VAE decodes them as single images,
// as many per call as ComfyUI's batch split allows (all of them unless vae_batch says fewer), even where the
// VAE is a video VAE (Qwen-Image's Wan 2.1 VAE), which otherwise decodes one clip per call.
StageDemand layered_decode_demand(const ResolvedJob& rj, const DemandOptions& o) {
  Job one = *rj.job;
  one.batch = 1;
  one.frames = 1;
  ResolvedJob as_one = rj;
  as_one.job = &one;
  StageDemand d = vae_decode_demand(as_one, o);
  const int images = rj.job->frames * rj.job->batch;
  const int per_call = o.vae_batch > 0 ? std::min(o.vae_batch, images) : images;
  for (const char* key : {"activations", "output_buffers"})
    if (auto it = d.transient.find(key); it != d.transient.end()) it->second *= static_cast<std::uint64_t>(per_call);
  d.notes.push_back("the " + std::to_string(rj.job->frames) + " layer frames are decoded as " + std::to_string(images) +
                    " images, " + std::to_string(per_call) + " per call");
  return d;
}

StageDemand vae_decode_demand(const ResolvedJob& rj, const DemandOptions& o) {
  if (vae_of(*rj.vae->model).decode.latent_tokens) return token_decode_demand(rj, o);
  if (rj.diffusion && diffusion_of(*rj.diffusion->model).latent_layers && rj.job->frames > 1)
    return layered_decode_demand(rj, o);
  const Job& job = *rj.job;
  const ModelInfo& vae = *rj.vae->model;
  if (vae_of(vae).audio()) return audio_decode_demand(rj, o);
  const int ts = vae_of(vae).temporal_stride();
  const bool video = vae_of(vae).video();
  const std::uint64_t frames = video ? output_frames_for(job, ts) : 1;

  if (job.decode_mode == DecodeMode::Tiled) {
    const int tile = job.decode_tile_px ? job.decode_tile_px : static_cast<int>(runtime_constant("tiled_decode_default_tile_px"));
    // VAEDecodeTiled's temporal_size default is 64 frames.
    return tiled_decode(rj, tile, video ? 64 : 1, "tiled decode (VAE Decode (Tiled))");
  }
  if (job.decode_mode == DecodeMode::Headroom) {
    try {
      DecodePlan plan = plan_with_native_decoder(rj, o.decode_budget_bytes);
      StageDemand d;
      d.name = "vae_decode";
      d.weights.push_back({vae.name, rj.vae->weight_bytes});
      d.resident_labels.push_back(vae.name);
      d.reserved["decode_plan"] = plan.peak_bytes;
      d.notes.push_back("Headroom decoder: " + plan.mode +
                        (plan.tile_latent ? ", " + std::to_string(plan.tile_latent) + " latent px tiles, " +
                                                std::to_string(plan.tiles) + " tiles"
                                          : std::string()));
      return d;
    } catch (const Error& e) {
      // Either no plan fits the budget (an InputError naming the smallest budget that works) or the
      // native planner is unavailable; the ComfyUI-style tiled estimate stands in, and the policy
      // decides whether it fits.
      const int tile = job.decode_tile_px ? job.decode_tile_px : static_cast<int>(runtime_constant("tiled_decode_default_tile_px"));
      StageDemand d = tiled_decode(rj, tile, video ? output_frames_for(job, ts) : 1, "Headroom decode estimated as tiled");
      d.notes.push_back(std::string("native decode plan not available (") + e.what() + "); tiled estimate used instead");
      return d;
    }
  }

  StageDemand d = decode_stage(rj);
  const int images = video ? 1 : (o.vae_batch > 0 ? std::min(o.vae_batch, job.batch) : job.batch);
  // Video: one clip per call; the batch runs clip by clip (batch_number from free memory).
  DecodeCost c = decode_cost(rj, job.height, job.width, frames, images);
  d.transient["activations"] = c.activations;
  if (c.output) d.transient["output_buffers"] = c.output;
  if (video && !vae_of(vae).decode.causal_per_latent_frame)
    d.notes.push_back("ComfyUI decodes this video VAE in temporal chunks: activations are sized per output frame area, "
                      "not per clip");
  else if (video)
    d.notes.push_back("causal decode one latent frame at a time (cache of " + std::to_string(vae_of(vae).cache_frames) +
                      " frames per conv): activations do not grow with frames; the RGB clip on the GPU does");
  if (!video && images < job.batch)
    d.notes.push_back("ComfyUI decodes " + std::to_string(images) + " of " + std::to_string(job.batch) + " images per call");
  int fb_tile = static_cast<int>(runtime_constant(video ? "fallback_tile_px_video" : "fallback_tile_px_image"));
  std::uint64_t fb_frames = video ? output_frames_for(job, ts) : 1;
  std::string why = "ComfyUI's automatic retry after an OOM in the full decode";
  if (video) {
    const int s = vae_of(vae).spatial_stride();
    const std::uint64_t lh = ceil_div(job.height, s), lw = ceil_div(job.width, s);
    const RetryTile3d t = retry_tile_3d(latent_frames_for(job, ts), lh, lw, static_cast<std::uint64_t>(fb_tile / s),
                                        comfy_decode_estimate(rj), o.card_total_bytes,
                                        [&](std::uint64_t, std::uint64_t tile) {
                                          return comfy_decode_estimate(rj, std::min(lh, tile), std::min(lw, tile));
                                        });
    fb_tile = static_cast<int>(t.tile * s);
    fb_frames = std::min<std::uint64_t>(fb_frames, (t.tile_t - 1) * ts + 1);
    why += " (tiles grown to ComfyUI's own estimate within " + format_bytes(t.budget) + ")";
  }
  d.fallback.push_back(tiled_decode(rj, fb_tile, fb_frames, why));
  return d;
}

}  // namespace headroom
