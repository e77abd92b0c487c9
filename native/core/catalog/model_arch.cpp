// Reading the architecture sections of a models.json entry into the typed figures of model_arch.hpp.
// What is required follows what the memory model and the decode plans compute with: a figure they
// need is an error when missing, never a silent default.
#include "core/catalog/model_reader.hpp"

#include <algorithm>

#include "core/base/error.hpp"

namespace headroom {

const char* decoder_kind_name(DecoderKind kind) {
  switch (kind) {
    case DecoderKind::None: return "none";
    case DecoderKind::Kl: return "kl";
    case DecoderKind::Flux2: return "flux2";
    case DecoderKind::Wan21: return "wan2.1";
    case DecoderKind::Wan22: return "wan2.2";
  }
  return "none";
}

bool kl_decoder(DecoderKind kind) { return kind == DecoderKind::Kl || kind == DecoderKind::Flux2; }

std::optional<DecoderKind> decoder_kind_from_name(std::string_view name) {
  for (DecoderKind k : {DecoderKind::Kl, DecoderKind::Flux2, DecoderKind::Wan21, DecoderKind::Wan22})
    if (name == decoder_kind_name(k)) return k;
  return std::nullopt;
}

double Activation::elems_per_token(double hidden, double ffn) const {
  double best = 0;
  for (const auto& p : phases) best = std::max(best, p.hidden_multiple * hidden + p.ffn_multiple * ffn);
  return best;
}

namespace {

// What a figure of a real model can be, with room for models larger than today's (a width of 1M, a
// trillion-parameter layer); each end is far outside any catalog entry and keeps the arithmetic finite.
constexpr Range kWidth{1, 1 << 20};           // channels, hidden sizes, heads, layers, tokens
constexpr Range kBlocks{0, 1 << 16};          // a block count that may be absent from one stream
constexpr Range kLayerParams{1, 1e12};        // the largest linear or block of a model
constexpr Range kMultiple{0, 1e3};            // live activations per token, in units of the width
constexpr Range kElemsPerPixel{0, 1e6};       // a VAE's live elements per pixel
constexpr Range kFixedElems{0, 1e10};         // an audio decoder's live elements that do not grow with the clip
constexpr Range kFactor{0, 1e5};              // ComfyUI's memory_usage_factor and decode constants
constexpr Range kCopies{0, 64};
constexpr Range kUpsamples{0, 8};
constexpr Range kSide{16, 1 << 15};           // a default width or height in pixels
constexpr Range kFrames{1, 1 << 16};
constexpr Range kCfg{0, 100};
constexpr Range kReferenceImages{0, 64};
constexpr Range kExperts{1, 64};
constexpr Range kFraction{0, 1};
constexpr Range kDecoderParams{0, 1e12};
constexpr Range kStride{1, 64};             // a VAE stride or a patch size, per axis
constexpr Range kLatentsPerSecond{0.01, 1e4}; // an audio latent's positions per second of audio
constexpr Range kSampleRate{1000, 1e6};      // an audio VAE's output samples per second
constexpr Range kSeconds{0.1, 3600};         // a default audio length

ActivationPhase read_phase(const JsonFields& f) {
  ActivationPhase p;
  p.name = f.optional_text("name").value_or("");
  p.hidden_multiple = f.number("hidden_multiple", kMultiple);
  p.ffn_multiple = f.number("ffn_multiple", kMultiple);
  return p;
}

// "activation": {"phases": [{hidden_multiple, ffn_multiple}, ...]} or one {hidden_multiple, ffn_multiple}.
Activation read_activation(const JsonFields& f) {
  Activation a;
  if (f.has("phases")) {
    const auto& phases = f.array("phases");
    if (phases.empty()) f.fail("phases", "is empty (expected at least one {hidden_multiple, ffn_multiple})");
    for (std::size_t i = 0; i < phases.size(); ++i) {
      const std::string at = f.key_path("phases") + "[" + std::to_string(i) + "]";
      if (!phases[i].is_object()) f.fail("phases", "expected objects {hidden_multiple, ffn_multiple}");
      a.phases.push_back(read_phase(JsonFields(phases[i], f.where(), at)));
    }
  } else {
    a.phases.push_back(read_phase(f));
  }
  a.fp32_elems_per_token = f.optional_number("fp32_elems_per_token", kElemsPerPixel).value_or(0);
  a.attention = f.optional_text("attention").value_or("");
  return a;
}

// The entry's own "activation", else the one inside "arch" (encoders keep it there).
Activation activation_of(const JsonFields& entry, const JsonFields& arch) {
  if (entry.has("activation")) return read_activation(entry.object("activation"));
  if (arch.has("activation")) return read_activation(arch.object("activation"));
  entry.fail("activation", "is missing (expected {phases: [...]} here or in arch)");
}

double value_of(const JsonFields& entry, const char* key) { return entry.object(key).number("value", kFactor); }

ImageConditioning read_conditioning(const JsonFields& arch) {
  const std::string c = arch.optional_text("image_conditioning").value_or("none");
  if (c == "none") return ImageConditioning::None;
  if (c == "clip_concat") return ImageConditioning::ClipConcat;
  if (c == "reference_tokens") return ImageConditioning::ReferenceTokens;
  arch.fail("image_conditioning", "expected none, clip_concat or reference_tokens, got '" + c + "'");
}

// "block_prefetch": {"params": N, "source": "..."}: the model's block loop prefetches the next block
// whole under dynamic VRAM. Absent: layer by layer.
double block_prefetch_of(const JsonFields& arch) {
  const auto p = arch.optional_object("block_prefetch");
  if (!p) return 0;
  p->text("source");  // which upstream loop prefetches: for people, but it must be there
  return p->number("params", kLayerParams);
}

// "levels": [{channels, transformer_depth, res_blocks}, ...] of a UNet, top (full latent size) first.
std::vector<UnetLevel> read_levels(const JsonFields& arch) {
  std::vector<UnetLevel> out;
  if (!arch.has("levels")) return out;
  const auto& levels = arch.array("levels");
  if (levels.empty()) arch.fail("levels", "is empty (expected at least one {channels, transformer_depth, res_blocks})");
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string at = arch.key_path("levels") + "[" + std::to_string(i) + "]";
    if (!levels[i].is_object()) arch.fail("levels", "expected objects {channels, transformer_depth, res_blocks}");
    const JsonFields f(levels[i], arch.where(), at);
    out.push_back({f.integer("channels", kWidth), f.integer("transformer_depth", kBlocks), f.integer("res_blocks", kWidth)});
  }
  return out;
}

DiffusionArch read_diffusion(const JsonFields& entry) {
  const JsonFields arch = entry.object("arch");
  DiffusionArch a;
  a.kind = arch.text("kind");
  a.hidden = arch.integer("hidden", kWidth);
  a.ffn = arch.integer("ffn", kWidth);
  a.heads = arch.integer("heads", kWidth);
  a.head_dim = arch.integer("head_dim", kWidth);
  a.blocks = arch.integer("blocks", kWidth);
  a.double_blocks = arch.optional_integer("double_blocks", kBlocks);
  a.single_blocks = arch.optional_integer("single_blocks", kBlocks);
  if (a.double_blocks && a.single_blocks && *a.double_blocks + *a.single_blocks != a.blocks)
    arch.fail("blocks", "is " + std::to_string(a.blocks) + " but double_blocks + single_blocks is " +
                            std::to_string(*a.double_blocks + *a.single_blocks));
  a.in_channels = arch.integer("in_channels", kWidth);
  a.out_channels = arch.optional_integer("out_channels", kWidth);
  a.latent_channels = arch.integer("latent_channels", kWidth);
  a.vae_stride = arch.triple("vae_stride", kStride);
  a.patch = arch.triple("patch", kStride);
  a.text_tokens = arch.integer("text_tokens", kWidth);
  a.text_in_sequence = arch.flag("text_in_sequence");
  a.largest_linear_params = arch.number("largest_linear_params", kLayerParams);
  a.largest_block_params = arch.number("largest_block_params", kLayerParams);
  a.block_prefetch_params = block_prefetch_of(arch);
  a.image_conditioning = read_conditioning(arch);
  a.latent_layers = arch.optional_flag("latent_layers").value_or(false);
  a.token_latent = arch.optional_flag("token_latent").value_or(false);
  if (a.token_latent && a.latent_layers) arch.fail("token_latent", "a latent is either shape tokens or image layers, not both");
  a.activation = activation_of(entry, arch);
  a.levels = read_levels(arch);
  if (!a.levels.empty()) a.conv_hidden_multiple = arch.number("conv_hidden_multiple", kMultiple);
  if (auto audio = arch.optional_object("audio")) {
    audio->text("source");  // which latent node sets the rate: for people, but it must be there
    a.audio_latents_per_second = audio->number("latents_per_second", kLatentsPerSecond);
    a.audio_rows = audio->integer("rows", kWidth);
    if (auto window = audio->optional_integer("window_latents", kWidth)) {
      a.audio_window_latents = *window;
      a.audio_window_hop = audio->integer("window_hop", kWidth);
      if (a.audio_window_hop > a.audio_window_latents)
        audio->fail("window_hop", "expected at most window_latents (" + std::to_string(*window) +
                                      "): windows that leave gaps would not cover the clip");
    }
    if (a.vae_stride != std::array<int, 3>{1, 1, 1})
      arch.fail("vae_stride", "expected [1, 1, 1] for an audio model (arch.audio sets its latent's length)");
  }
  a.comfy_memory_usage_factor = value_of(entry, "comfy_memory_usage_factor");
  return a;
}

EncoderArch read_encoder(const JsonFields& entry) {
  const JsonFields arch = entry.object("arch");
  EncoderArch a;
  a.kind = arch.text("kind");
  a.hidden = arch.integer("hidden", kWidth);
  a.ffn = arch.integer("ffn", kWidth);
  a.heads = arch.integer("heads", kWidth);
  a.layers = arch.integer("layers", kWidth);
  a.tokens = arch.integer("tokens", kWidth);
  a.attention_bias = arch.optional_flag("attention_bias").value_or(false);
  a.largest_linear_params = arch.number("largest_linear_params", kLayerParams);
  a.block_prefetch_params = block_prefetch_of(arch);
  a.activation = activation_of(entry, arch);
  if (auto gen = arch.optional_object("generation"))
    a.kv_elems_per_token = 2.0 * gen->integer("kv_layers", kWidth) * gen->integer("kv_heads", kWidth) *
                           gen->integer("head_dim", kWidth);
  return a;
}

VaeArch read_vae(const JsonFields& entry) {
  const JsonFields arch = entry.object("arch");
  VaeArch a;
  a.kind = arch.text("kind");
  a.z_channels = arch.integer("z_channels", kWidth);
  a.stride = arch.triple("stride", kStride);
  a.causal = arch.optional_flag("causal").value_or(false);
  if (auto d = arch.optional_text("decoder")) {
    auto kind = decoder_kind_from_name(*d);
    if (!kind) arch.fail("decoder", "expected kl, flux2, wan2.1 or wan2.2 (a native decoder), got '" + *d + "'");
    a.decoder = *kind;
    a.res_blocks = arch.integer("res_blocks", kWidth);
    if (kl_decoder(a.decoder)) {
      a.channels = arch.integers("channels", kWidth);
      a.receptive_field_latent_px = arch.integer("receptive_field_latent_px", kWidth);
    } else {
      a.base_channels = arch.integer("base_channels", kWidth);
      a.multipliers = arch.integers("multipliers", kWidth);
      if (a.multipliers.size() != 5) arch.fail("multipliers", "expected five widths (head and four stages)");
      a.temporal_upsamples = arch.integer("temporal_upsamples", kUpsamples);
      a.out_channels = arch.integer("out_channels", kWidth);
    }
  } else if (arch.has("channels")) {
    a.channels = arch.integers("channels", kWidth);
  }
  a.decoder_params = entry.optional_count("decoder_params", kDecoderParams).value_or(0);

  const JsonFields dec = entry.object("decode");
  const JsonFields enc = entry.object("encode");
  const std::string kind = dec.text("kind");
  if (auto audio = arch.optional_object("audio")) {
    audio->text("source");
    a.audio_sample_rate = audio->number("sample_rate", kSampleRate);
    a.audio_samples_per_latent = audio->integer("samples_per_latent", kWidth);
    if (kind != "audio_samples") dec.fail("kind", "expected audio_samples for an audio VAE (arch.audio), got '" + kind + "'");
  } else if (kind == "audio_samples") {
    dec.fail("kind", "audio_samples needs arch.audio {sample_rate, source}");
  }
  if (kind == "audio_samples") {
    // Live elements per output sample, in the same field the full-frame decoders give per pixel.
    a.decode.elems_per_output_px = dec.number("elems_per_output_sample", kElemsPerPixel);
    a.decode.fixed_elems = dec.optional_number("fixed_elems", kFixedElems).value_or(0);
    a.encode.elems_per_input_px = enc.number("elems_per_input_sample", kElemsPerPixel);
  } else if (kind == "causal_per_latent_frame") {
    a.decode.causal_per_latent_frame = true;
    a.cache_frames = arch.integer("cache_frames", kWidth);
    a.decode.single_frame_elems_per_output_px = dec.number("single_frame_elems_per_output_px", kElemsPerPixel);
    a.decode.chunk_elems_per_output_px = dec.number("chunk_elems_per_output_px", kElemsPerPixel);
    a.decode.cache_elems_per_output_px = dec.optional_number("cache_elems_per_output_px", kElemsPerPixel).value_or(0);
    a.decode.output_copies = dec.number("output_copies", kCopies);
    a.encode.single_frame_elems_per_input_px = enc.number("single_frame_elems_per_input_px", kElemsPerPixel);
    a.encode.chunk_elems_per_input_px = enc.number("chunk_elems_per_input_px", kElemsPerPixel);
  } else if (kind == "full_frame") {
    a.decode.elems_per_output_px = dec.number("elems_per_output_px", kElemsPerPixel);
    a.encode.elems_per_input_px = enc.number("elems_per_input_px", kElemsPerPixel);
  } else if (kind == "latent_tokens") {
    a.decode.latent_tokens = true;
    a.decode.elems_per_latent_token = dec.number("elems_per_latent_token", kElemsPerPixel);
    a.decode.grid_bytes = dec.number("grid_bytes", {0, 1e12});
    a.encode.elems_per_input_px = enc.number("elems_per_input_point", kElemsPerPixel);
  } else {
    dec.fail("kind", "expected full_frame, causal_per_latent_frame, audio_samples or latent_tokens, got '" + kind + "'");
  }
  a.comfy_decode_constant = value_of(entry, "comfy_decode_constant");
  return a;
}

JobDefaults read_defaults(const JsonFields& f) {
  JobDefaults d;
  d.width = f.optional_integer("width", kSide).value_or(d.width);
  d.height = f.optional_integer("height", kSide).value_or(d.height);
  d.frames = f.optional_integer("frames", kFrames).value_or(d.frames);
  d.cfg = f.optional_number("cfg", kCfg).value_or(d.cfg);
  d.reference_images = f.optional_integer("reference_images", kReferenceImages).value_or(d.reference_images);
  d.seconds = f.optional_number("seconds", kSeconds).value_or(d.seconds);
  d.tokens = f.optional_integer("tokens", {1, 65536}).value_or(d.tokens);
  d.block_frames = f.optional_integer("block_frames", {1, 64}).value_or(d.block_frames);
  // Not computed with, but shown to users with the model (headroom models --json, the nodes' catalog).
  f.optional_integer("steps", {1, 10000});
  f.optional_text("source");
  return d;
}

}  // namespace

void read_model_figures(const JsonFields& entry, ModelInfo& m) {
  switch (m.role) {
    case Role::DiffusionModel:
      m.diffusion = read_diffusion(entry);
      break;
    case Role::TextEncoder:
    case Role::ClipVision:
    case Role::AudioEncoder:
      m.encoder = read_encoder(entry);
      break;
    case Role::ModelPatch:  // its weights join the patched model's sample stage: params alone size it
      m.patches = entry.texts("patches");
      break;
    case Role::Vae:
      m.vae = read_vae(entry);
      break;
  }
  if (auto e = entry.optional_object("experts")) {
    m.experts_info.count = e->integer("count", kExperts);
    m.experts_info.active_per_step = e->optional_integer("active_per_step", kExperts).value_or(1);
    m.experts_info.boundary = e->optional_number("boundary", kFraction).value_or(0);
    if (m.experts_info.count < 1 || m.experts_info.active_per_step < 1 || m.experts_info.active_per_step > m.experts_info.count)
      e->fail("count", "expected count >= active_per_step >= 1");
  }
  m.experts = m.experts_info.count;
  if (auto d = entry.optional_object("defaults")) m.defaults = read_defaults(*d);
  m.guidance_distilled = entry.optional_flag("guidance_distilled").value_or(false);
  m.fp8_file = entry.optional_text("fp8_file").value_or("");
  m.one_pass = entry.optional_text("one_pass").value_or("");
  // Weights an official quantised release keeps in 16 bit (the attention and embedding of an nvfp4 MoE encoder):
  // a quantised precision prices them at 2 bytes, so the estimate is the file's and not a lower bound.
  if (auto keep = entry.optional_count("unquantised_params", {1, 1e13})) {
    if (*keep >= m.params) entry.fail("unquantised_params", "expected fewer weights than params (" + std::to_string(m.params) + ")");
    m.unquantised_params = *keep;
    entry.text("unquantised_params_source");
  }
  if (entry.has("dropped_prefixes")) {
    m.dropped_prefixes = entry.texts("dropped_prefixes");
    entry.text("dropped_prefixes_source");  // the ComfyUI code that drops them
  }
  if (entry.has("released_quantized")) {
    m.released_quantized = entry.texts("released_quantized");
    entry.text("released_quantized_source");  // which official file: for people, but it must be there
  }
  // models.json "comfy" {config_class, dim, in_dim}: how ComfyUI names the loaded model. Nothing reads it
  // (a loaded MODEL is recognised by comfy_nodes.json model_configs), but the entries that carry it are
  // still checked, so a typo there fails at load like every other key.
  if (auto c = entry.optional_object("comfy")) {
    c->text("config_class");
    c->optional_integer("dim", kWidth);
    c->optional_integer("in_dim", kWidth);
  }
}

}  // namespace headroom
