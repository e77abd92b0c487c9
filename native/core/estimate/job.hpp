#pragma once
// A generation job as the estimator sees it: which models, at which precision, on what shapes.
// Built from CLI flags (estimate), from a ComfyUI workflow (plan) or from node inputs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct ModelInfo;

// One model file that ComfyUI will load.
struct Component {
  std::string model;      // canonical catalog name (models.json "name")
  std::string precision;  // canonical precision ("bf16", "fp16", "fp32", "fp8_e4m3fn", "fp8_e5m2",
                          // "fp8_scaled", "gguf-q8_0", ...); empty = the catalog's default
  std::optional<std::uint64_t> weight_bytes;  // exact bytes read from the file header, when known
  std::string file;       // file name it came from ("" when chosen by name only)
  // The catalog entry of `model`, set once by resolve_models (job_models.hpp) so that the many estimates
  // of a plan do not look the name up again; null = not resolved (model_of looks it up by name).
  const ModelInfo* info = nullptr;
};

// A text encoder run as a language model before the prompt is encoded (ComfyUI's TextGenerate, the
// prompt upsampler of the FLUX 3 Klein and Krea 2 templates).
struct TextGeneration {
  Component model;
  int new_tokens = 0;  // max_length: the most tokens it writes
};

// How the VAE decode is run.
enum class DecodeMode {
  Full,      // ComfyUI's VAE Decode: whole latent at once (falls back to tiled on OOM)
  Tiled,     // ComfyUI's VAE Decode (Tiled) / Headroom blend: tile_px tiles
  Headroom,  // Headroom exact tiled decode sized to the budget
};

// How a sampler steps the latent. Standard: every step runs the model over the whole latent. KvCacheBlocks:
// block by block in time, each block denoised against a key/value cache of the blocks before it (ComfyUI's
// ar_video sampler for Causal Forcing and Self-Forcing checkpoints, comfy/k_diffusion/sampling.py
// sample_ar_video); one pass holds one block's tokens, the cache holds the whole clip's.
enum class SamplingKind { Standard, KvCacheBlocks };
// A node of the workflow, as a person finds it on the canvas.
struct NodeRef {
  std::string id, type, title;  // "7", "LTXVLatentUpsampler", "" (no title given)
};

// One sampler node of a workflow and what it samples: its own model, shape, cfg and LoRAs (issue 19:
// each sampler is its own job). The estimate sizes each one's sample stage and names the worst.
struct SamplerJob {
  std::string node_id, type;               // "12", "KSamplerAdvanced"
  std::optional<Component> diffusion;      // the model its MODEL input comes from; none when not traced
  int width = 0, height = 0, frames = 1, batch = 1;
  double seconds = 0;                      // an audio latent's length
  int tokens = 0;                          // a token latent's length (EmptyLatentHunyuan3Dv2)
  bool size_known = false;                 // false: the latent it denoises has no size Headroom reads
  double cfg = -1;                         // -1: no cfg read for it (the job's is used)
  std::uint64_t lora_bytes = 0;            // LoRAs patched into its model (read from headers)
  std::vector<Component> model_patches;    // ModelPatchLoader files applied on its model's way (InfiniteTalk)
  std::string unknown;                     // why its model or size is not known, naming the node
  // The node its model or size stops at ("model" or "size" in unknown_what): no verdict may rest on the
  // workflow while it runs. Empty when both are known (a model the catalog lacks is told by the estimate).
  std::optional<NodeRef> unknown_node;
  std::string unknown_what;
  std::optional<NodeRef> model_loader;     // the loader its MODEL input comes from
  // The text encoders its conditioning reads (CLIPTextEncode and the CLIP loader feeding it), each once,
  // and which CLIP object loads each (text_encoder_loads, as in Job). encoders_traced: a loader was found.
  std::vector<Component> text_encoders;
  std::vector<std::string> text_encoder_loads;
  bool encoders_traced = false;
  std::string continues;                   // the earlier sampler whose latent it samples again ("" = none)
  std::string title;                       // the node's title in the workflow ("" = none given)
  SamplingKind sampling = SamplingKind::Standard;  // the SAMPLER it runs (SamplerARVideo: KvCacheBlocks)
  int block_frames = 1;                    // latent frames per block of a KvCacheBlocks sampler
};

// A model another sampler of the workflow loads, a diffusion model or a text encoder (issue 19: every
// loaded model is counted).
struct OtherModel {
  Component model;
  bool runs_before = false;  // its sampler runs before the job's: ComfyUI may still hold it on the card
};

struct Job {
  std::optional<Component> diffusion;      // the diffusion model (for Wan 2.2 A14B: either expert)
  std::vector<Component> text_encoders;    // CLIP-L + T5-XXL for Flux, umT5-XXL for Wan
  // Per text encoder, the CLIP object that loads it (a workflow's loader node id): encoders of one load
  // are on the card together, separate loads run one after another. Empty (or shorter): one load.
  std::vector<std::string> text_encoder_loads;
  std::vector<TextGeneration> text_generations;  // prompt upsamplers, run one after another
  std::optional<Component> clip_vision;    // CLIP-vision-H for Wan 2.1 I2V
  std::optional<Component> audio_encoder;  // wav2vec2 / Whisper, run in its own audio_encode stage (S2V, HuMo)
  std::optional<Component> vae;
  std::uint64_t lora_bytes = 0;            // LoRA weights patched into the diffusion model
  // Model patches loaded beside the diffusion model and sampled with it (InfiniteTalk's audio layers, a
  // DiffSynth ControlNet): their weights join the sample stage's.
  std::vector<Component> model_patches;

  int width = 1024;                        // output pixels
  int height = 1024;
  int frames = 1;                          // output frames (video); 1 for images
  // Length of an audio model's clip (EmptyLatentAudio's seconds): its latent is 1-D, so width, height and
  // frames do not size it. 0 for image and video jobs.
  double seconds = 0;
  // Shape tokens of a token latent (EmptyLatentHunyuan3Dv2's resolution: [batch, 64, tokens]); 0 for
  // the other jobs, which pixels size.
  int tokens = 0;
  int batch = 1;
  double cfg = 1.0;                        // cfg != 1 runs cond and uncond in one batch in ComfyUI
  SamplingKind sampling = SamplingKind::Standard;
  int block_frames = 1;                    // latent frames per block when sampling is KvCacheBlocks
  int reference_images = 0;                // Kontext reference latents appended as tokens (output-sized)

  DecodeMode decode_mode = DecodeMode::Full;
  int decode_tile_px = 0;                  // tile edge in output pixels for Tiled/Headroom; 0 = choose

  int blocks_swapped = 0;                  // transformer blocks kept in RAM and streamed (block swap)
  bool text_encoder_on_cpu = false;        // text encoders run on the CPU (--clip-on-cpu style)

  std::vector<SamplerJob> samplers;        // a workflow's samplers, each traced to its model and latent
  // Set by bind_worst_sampler: the sampler whose job this is ("" = the workflow's job as assembled), and
  // the other samplers' models and text encoders, cached on the card while they fit and held in host RAM
  // by the legacy loader.
  std::string bound_sampler;
  std::vector<OtherModel> other_diffusion;
  std::vector<OtherModel> other_text_encoders;  // the other samplers' text encoders the job's do not hold
  // The decoded image over the sampled latent, per side: a later pass that samples the bound sampler's
  // latent again at a larger size (a 2x upscale pass) decodes the larger one. Size changes scale both.
  double decode_scale = 1.0;
  std::vector<std::string> notes;          // what was inferred rather than read ("precision from file name")
};

}  // namespace headroom
