#pragma once
// The architecture figures of a catalog model, typed: models.json "arch", "activation", "decode",
// "encode", "experts" and the ComfyUI constants, read once when the catalog loads (model_arch.cpp)
// so that a missing or wrong-typed figure fails at start-up naming the file, model and key, and the
// estimator, the decode plans and the planner read fields instead of looking JSON up per call.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// Which of Headroom's native VAE decoders runs a VAE (models.json vae "arch.decoder").
// None: no native decoder; its Headroom decode is estimated as ComfyUI's tiled one.
// Flux2: the KL decoder behind FLUX.2's front end (inverse BatchNorm, 2x2 unpatchify), planned as KL.
enum class DecoderKind { None, Kl, Flux2, Wan21, Wan22 };
const char* decoder_kind_name(DecoderKind kind);  // "none", "kl", "flux2", "wan2.1", "wan2.2"
bool kl_decoder(DecoderKind kind);                // Kl or Flux2: an image decoder with KL's blocks
std::optional<DecoderKind> decoder_kind_from_name(std::string_view name);

// Live elements per token at one phase of a block's peak: hidden_multiple*hidden + ffn_multiple*ffn.
struct ActivationPhase {
  std::string name;
  double hidden_multiple = 0;
  double ffn_multiple = 0;
};

struct Activation {
  std::vector<ActivationPhase> phases;  // the largest phase sets the peak
  double fp32_elems_per_token = 0;      // fp32 tensors per token beside them (RoPE tables)
  std::string attention;                // "sdpa": no N x N score matrix is kept
  double elems_per_token(double hidden, double ffn) const;
};

// How the diffusion model takes an input image (decides the VAE encode stage).
enum class ImageConditioning {
  None,             // text only
  ClipConcat,       // the VAE encodes the whole conditioning clip (WanImageToVideo style)
  ReferenceTokens,  // reference images are encoded and appended to the sequence as tokens (Kontext)
};

// One resolution level of a UNet (SD 1.5, SDXL; ComfyUI comfy/ldm/modules/diffusionmodules/openaimodel.py):
// level l runs at 1/2^l of the latent side, with `res_blocks` resblocks of `channels` width each followed
// by `transformer_depth` transformer blocks (0: convolutions only). A UNet's activations are set per level,
// not per token of one width, and the input blocks' outputs stay alive for the skip connections.
struct UnetLevel {
  int channels = 0;
  int transformer_depth = 0;
  int res_blocks = 0;
};

struct DiffusionArch {
  std::string kind;                 // "flux_dit", "wan_dit", ...
  int hidden = 0, ffn = 0, heads = 0, head_dim = 0;
  int blocks = 0;                   // transformer blocks (double + single for Flux)
  std::optional<int> double_blocks, single_blocks;
  int in_channels = 0;
  std::optional<int> out_channels;
  int latent_channels = 0;
  std::array<int, 3> vae_stride{};  // T, H, W of the VAE it samples for
  std::array<int, 3> patch{};       // T, H, W of a token
  int text_tokens = 0;
  bool text_in_sequence = false;    // text tokens join the attention sequence (Flux)
  double largest_linear_params = 0;
  double largest_block_params = 0;
  // Parameters of the block ComfyUI prefetches whole under dynamic VRAM (comfy/model_prefetch.py
  // make_prefetch_queue, used by the model's block loop); 0 = the model streams layer by layer.
  double block_prefetch_params = 0;
  ImageConditioning image_conditioning = ImageConditioning::None;
  // "arch.latent_layers": the latent's frame axis stacks separate images (a composite and its layers)
  // that share one sequence, without temporal compression; each is decoded as an image of its own.
  bool latent_layers = false;
  // "arch.token_latent": the latent is a set of shape tokens ([batch, latent_channels, tokens], the
  // Hunyuan3D DiTs), sized by the job's tokens rather than by pixels; each token is one sequence position.
  bool token_latent = false;
  Activation activation;
  // UNets only ("arch.levels"): empty for transformers. At a level with attention the activation phases
  // apply with hidden = its channels and ffn = channels x ffn/hidden; a convolution-only level keeps
  // conv_hidden_multiple x channels elements per pixel.
  std::vector<UnetLevel> levels;
  double conv_hidden_multiple = 0;
  double comfy_memory_usage_factor = 0;
  // Audio models ("arch.audio"): the latent is `audio_rows` x (seconds x audio_latents_per_second)
  // positions, patched by patch[1] x patch[2]; 0 = an image or video model, sized in pixels.
  double audio_latents_per_second = 0;
  int audio_rows = 1;
  // A DiT that runs on windows of at most `audio_window_latents` positions, `audio_window_hop` apart, and
  // averages the overlaps (MiniMax Music 3): one pass holds a window's tokens, a step runs every window.
  // 0 = the whole clip in one pass.
  int audio_window_latents = 0;
  int audio_window_hop = 0;
  bool audio() const { return audio_latents_per_second > 0; }
  int temporal_stride() const { return vae_stride[0]; }
  int spatial_stride() const { return vae_stride[2]; }
  bool video() const { return temporal_stride() > 1; }
};

// Text encoders and CLIP vision towers.
struct EncoderArch {
  std::string kind;                 // "t5_encoder", "clip_text", "clip_vision"
  int hidden = 0, ffn = 0, heads = 0, layers = 0;
  int tokens = 0;                   // sequence length ComfyUI pads to
  bool attention_bias = false;      // T5's heads x seq x seq position bias
  double largest_linear_params = 0;
  // Language models that also write text (ComfyUI's TextGenerate): key and value elements cached per
  // token over the attention layers, 2 x kv_layers x kv_heads x head_dim; 0 = it only encodes.
  double kv_elems_per_token = 0;
  double block_prefetch_params = 0; // as DiffusionArch: the layer prefetched whole, 0 = none
  Activation activation;
};

// Per-pixel working set of a VAE pass, in elements of the compute dtype.
struct VaeDecodeCost {
  bool causal_per_latent_frame = false;       // Wan: one latent frame at a time (else a whole frame)
  double elems_per_output_px = 0;             // full-frame decoders
  double single_frame_elems_per_output_px = 0, chunk_elems_per_output_px = 0;
  double cache_elems_per_output_px = 0;       // causal cache, part of the chunk figure
  double output_copies = 0;                   // RGB clip copies alive while it grows on the GPU
  double fixed_elems = 0;                     // audio decoders: live elements whatever the clip's length
  // Token VAEs (kind latent_tokens, the Hunyuan3D ShapeVAE): elements per latent token (its decoder
  // transformer) and the bytes of the query grid it evaluates, which follow the node's grid, not the tokens.
  bool latent_tokens = false;
  double elems_per_latent_token = 0;
  double grid_bytes = 0;
};

struct VaeEncodeCost {
  double elems_per_input_px = 0;
  double single_frame_elems_per_input_px = 0, chunk_elems_per_input_px = 0;
};

struct VaeArch {
  std::string kind;                 // "kl_vae", "wan_vae"
  int z_channels = 0;
  std::array<int, 3> stride{};      // T, H, W compression
  DecoderKind decoder = DecoderKind::None;
  int res_blocks = 0;               // residual blocks per decoder level
  // KL: width of every decoder level (encoder order), the fast mode's halo (latent px).
  std::vector<int> channels;
  int receptive_field_latent_px = 0;
  // Wan: decoder widths are base_channels x multipliers; time doubles in the first
  // temporal_upsamples resamples; the head writes out_channels (12 = 3 RGB x 2x2 patch for 2.2).
  int base_channels = 0;
  std::vector<int> multipliers;
  int temporal_upsamples = 0;
  int out_channels = 0;
  bool causal = false;
  int cache_frames = 0;             // input frames each causal conv keeps
  std::uint64_t decoder_params = 0;
  VaeDecodeCost decode;
  VaeEncodeCost encode;
  double comfy_decode_constant = 0;
  // Audio VAEs ("arch.audio"): output samples per second per channel; the decode's working set is
  // decode.elems_per_output_px per output sample. 0 = an image or video VAE.
  double audio_sample_rate = 0;
  int audio_samples_per_latent = 0;  // output samples per latent position (ComfyUI's upscale_ratio)
  bool audio() const { return audio_sample_rate > 0; }
  int temporal_stride() const { return stride[0]; }
  int spatial_stride() const { return stride[2]; }
  bool video() const { return temporal_stride() > 1; }
};

struct Experts {
  int count = 1;                    // 2 for Wan 2.2 A14B
  int active_per_step = 1;
  double boundary = 0;              // noise level where the second expert takes over
};

// The shape a diffusion model runs at when the user gives none.
struct JobDefaults {
  int width = 1024, height = 1024, frames = 1, reference_images = 0;
  double cfg = 1.0;
  double seconds = 0;  // audio models: the clip length their latent node starts with
  int tokens = 0;      // token-latent models: the shape tokens their latent node starts with
  // > 0: a block-autoregressive checkpoint, sampled this many latent frames at a time with a key/value cache
  // (ComfyUI's ar_video sampler: Causal Forcing); 0: every step runs over the whole latent.
  int block_frames = 0;
};

}  // namespace headroom
