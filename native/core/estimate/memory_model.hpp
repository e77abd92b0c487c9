#pragma once
// The memory model: what each stage of a ComfyUI run needs on the GPU when nothing limits it
// (weights, activations, transients, output buffers), computed from the architecture figures in
// models.json. runtime_policy.hpp then fits these demands onto a card.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog/catalog.hpp"
#include "core/estimate/job.hpp"

namespace headroom {

// A Job component resolved against the catalog.
struct ResolvedComponent {
  const ModelInfo* model = nullptr;
  const PrecisionInfo* precision = nullptr;
  std::uint64_t weight_bytes = 0;  // from the file header when known, else params x precision
  bool from_header = false;
  bool native_compute = false;  // the card computes in this precision: no per-layer dequantisation
};

// A Job validated and resolved (names, precisions, shapes); throws InputError naming the field.
struct ResolvedJob {
  std::optional<ResolvedComponent> diffusion;
  std::vector<ResolvedComponent> text_encoders;
  std::vector<ResolvedComponent> generators;  // one per job.text_generations entry, in order
  std::optional<ResolvedComponent> clip_vision;
  std::optional<ResolvedComponent> audio_encoder;
  std::vector<ResolvedComponent> model_patches;  // job.model_patches, in order
  std::optional<ResolvedComponent> vae;
  std::vector<ResolvedComponent> other_diffusion;  // job.other_diffusion, in order
  std::vector<ResolvedComponent> other_text_encoders;  // job.other_text_encoders, in order
  const Job* job = nullptr;
  std::vector<std::string> notes;
};
ResolvedJob resolve_job(const Job& job);

// Token and latent geometry of the sampling stage.
struct SampleGeometry {
  std::uint64_t latent_frames = 1;     // T of the latent (1 for images)
  std::uint64_t latent_h = 0, latent_w = 0;
  std::uint64_t image_tokens = 0;      // per batch element, including Kontext reference tokens
  std::uint64_t sequence_tokens = 0;   // attention sequence per batch element (+ text for Flux)
  std::uint64_t comfy_area = 0;        // ComfyUI's memory_required area per batch element
  std::uint64_t windows = 1;           // passes per step of a windowed audio DiT, each over image_tokens
};
SampleGeometry sample_geometry(const ModelInfo& model, const Job& job);

// One stage's unconstrained need, before any card policy.
struct StageDemand {
  std::string name;
  std::vector<std::pair<std::string, std::uint64_t>> weights;  // (label, bytes) of models needed on the GPU
  std::map<std::string, std::uint64_t> transient;   // activations etc., allocated bytes (get allocator overhead)
  std::map<std::string, std::uint64_t> reserved;    // already reserved-level bytes (no overhead added)
  bool partial_loadable = false;        // ComfyUI can stream these weights per layer (lowvram)
  std::uint64_t stream_layer_bytes = 0; // one layer cast to the compute dtype while streaming
  std::uint64_t stored_layer_bytes = 0; // the same layer as stored (what an offload stream copies in)
  std::uint64_t prefetch_block_bytes = 0;  // the block prefetched whole under dynamic VRAM; 0 = none
  std::uint64_t comfy_minimum_bytes = 0;  // ComfyUI's own estimate it keeps free for inference
  double flops_per_pass = 0;            // work per forward, for the offload slowdown
  double passes = 1;                    // forward passes per step that stream the weights
  double slowdown = 1.0;                // already known slowdown (tiled decode passes)
  std::uint64_t streamed_bytes = 0;     // weights copied in per forward pass (explicit block swap)
  std::vector<std::string> notes;
  std::vector<std::string> resident_labels;
  // VAE decode/encode: what ComfyUI's automatic tiled retry needs after an OOM.
  std::vector<StageDemand> fallback;
};

struct DemandOptions {
  bool cfg_batched = false;   // cond and uncond in one batch (decided by the runtime policy)
  int vae_batch = 0;          // images decoded per VAE call; 0 = the whole batch
  std::uint64_t decode_budget_bytes = 0;  // for DecodeMode::Headroom; 0 = no limit
  std::uint64_t card_total_bytes = 0;     // the card's total memory (the 3-D tiled retry's budget); 0 = unknown
  bool lora_in_host = false;  // dynamic VRAM: LoRA patches stay in pinned host memory
};

// The prompt upsamplers of job.text_generations, one after another: weights, the prompt's pass and the
// key/value cache of the prompt plus every token written. nullopt when the job has none.
std::optional<StageDemand> text_generate_demand(const ResolvedJob& job);
StageDemand text_encode_demand(const ResolvedJob& job);
StageDemand clip_vision_demand(const ResolvedJob& job);
StageDemand audio_encode_demand(const ResolvedJob& job);  // needs job.audio_encoder
std::optional<StageDemand> vae_encode_demand(const ResolvedJob& job);   // I2V video / Kontext reference
StageDemand sample_demand(const ResolvedJob& job, const DemandOptions& options);
StageDemand vae_decode_demand(const ResolvedJob& job, const DemandOptions& options);

// ComfyUI's own sampling estimate (model_base.memory_required, SDPA branch) for `batch` latents.
std::uint64_t comfy_sampling_estimate(const ResolvedJob& job, int batch);
// ComfyUI's own per-image VAE decode estimate (comfy/sd.py memory_used_decode).
std::uint64_t comfy_decode_estimate(const ResolvedJob& job);
// The same for a latent of lh x lw (one tile of a tiled decode).
std::uint64_t comfy_decode_estimate(const ResolvedJob& job, std::uint64_t latent_h, std::uint64_t latent_w);

// Compute-dtype bytes of the VAE for a precision ("fp32" VAE runs in fp32, else 16-bit).
int vae_compute_bytes(const ResolvedComponent& vae);

}  // namespace headroom
