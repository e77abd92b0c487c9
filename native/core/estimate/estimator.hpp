#pragma once
// The memory model: per-stage peak VRAM of a Job under ComfyUI's loading policy.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/calibrate/calibration.hpp"
#include "core/catalog/verdict.hpp"
#include "core/estimate/job.hpp"

namespace headroom {

// The card and ComfyUI's settings that decide what stays loaded.
struct Runtime {
  std::uint64_t vram_bytes = 0;        // total memory of the card; 0 = unknown (no policy applied)
  std::uint64_t reserve_bytes = 0;     // ComfyUI's reserve; 0 = ComfyUI's default for the platform
  bool windows = false;                // ComfyUI reserves more on Windows
  bool allow_lowvram = true;           // partial loading when weights do not fit (ComfyUI default)
  // Added by the estimator work (additive): whether the card computes in fp8 (compute capability
  // >= 8.9). -1 unknown, 0 no, 1 yes. Without it ComfyUI upcasts fp8 diffusion weights to 16 bit
  // when 16 bit fits (comfy/model_management.py unet_dtype).
  int fp8_compute = -1;
  // Added by core polish (additive): memory free for this run as ComfyUI counts it
  // (torch.cuda.mem_get_info().free + reserved - active, comfy/model_management.get_free_memory).
  // 0 = not given. When given it is the usable memory: the CUDA context and other processes are
  // already outside it (no context is added again), ComfyUI's reserve is still kept out of it, and
  // verdicts are against it. vram_bytes, when also given, is then only the card's total (ComfyUI's
  // fp8 upcast rule and the Windows reserve depend on the total).
  std::uint64_t free_bytes = 0;
  // Which ComfyUI loader runs the models. Legacy: the estimate-based loader of ComfyUI before 0.15
  // (and with --disable-dynamic-vram, --highvram, --gpu-only, --novram; GGUF models always). Dynamic:
  // comfy-aimdo's dynamic VRAM, the default on NVIDIA since 0.15: weights are evictable for
  // activations and stream per layer when they do not fit (runtime_dynamic.hpp).
  enum class Loader { Legacy, Dynamic };
  Loader loader = Loader::Legacy;
  std::uint64_t vram_headroom_bytes = 0;  // ComfyUI --vram-headroom: kept free counting other programs
  std::uint64_t ram_bytes = 0;            // host RAM for the weights that are not resident; 0 = unchecked
  double pcie_bytes_per_s = 0;            // the card's host-to-device rate; 0 = models.json's default
  double flops_per_s = 0;                 // the card's effective bf16 throughput; 0 = models.json's default
  double compute_capability = 0;          // CUDA compute capability of the card ("8.9" -> 8.9); 0 = unknown
  // Corrections learned from this card's measured runs (api::calibrate); applied to the matching stages'
  // peaks before the verdict (core/estimate/apply_calibration.hpp). Empty = the model's figures alone.
  std::vector<calibrate::Correction> calibration;
  // ComfyUI's offload streams (model_management.NUM_STREAMS: --async-offload N, 0 with
  // --disable-async-offload); -1 = ComfyUI's default (models.json offload_streams).
  int offload_streams = -1;
  std::uint64_t swap_bytes = 0;           // swap (Linux) beside ram_bytes, for ComfyUI's pinned-memory cap
  bool pinned_memory = true;              // false with ComfyUI --disable-pinned-memory
  bool has_card() const { return vram_bytes != 0 || free_bytes != 0; }
};
const char* loader_name(Runtime::Loader loader);  // "legacy" | "dynamic"

// How a stage runs on the card; the JSON spells it with stage_mode_name (the last two as the verdicts
// of the same name) and gives stage_mode_id beside it.
enum class StageMode {
  Full,           // every model it needs resident
  Partial,        // ComfyUI's lowvram partial loading streams weights
  TiledFallback,  // ComfyUI's tiled retry after an OOM of the decode
  Streams,        // dynamic VRAM copies part of the weights in per step
  DoesNotFit,     // the stage cannot run on the card
};
const std::string& stage_mode_name(StageMode mode);  // "full", "partial", "tiled_fallback", "streams", "does not fit"
const char* stage_mode_id(StageMode mode);           // the same with "does_not_fit"

struct Stage {
  std::string name;                                 // "text_encode", "sample", "vae_decode", ...
  std::uint64_t peak_bytes = 0;                     // reserved memory at this stage's peak
  std::map<std::string, std::uint64_t> breakdown;   // what makes up peak_bytes (sums to it)
  std::vector<std::string> resident;                // models on the GPU during the stage
  double slowdown = 1.0;                            // >1 when partial loading streams weights
  std::vector<std::string> notes;
  // Added by the estimator work (additive):
  StageMode mode = StageMode::Full;
  std::uint64_t full_load_bytes = 0;                // need with every needed model fully resident
  std::uint64_t min_bytes = 0;                      // need with the most streaming ComfyUI allows
  std::vector<std::string> cached;                  // earlier models that stay loaded because they fit
  // Added for the two runtimes:
  // The least this stage runs in without an OOM: min_bytes under its loader's most streaming.
  std::uint64_t required_bytes() const { return min_bytes; }
  std::uint64_t cached_bytes = 0;                   // of `cached`, counted in peak_bytes (the card holds them)
  std::uint64_t cache_floor_bytes = 0;              // what the loader keeps for the stage itself before it
                                                    // lets earlier models stay (legacy: ComfyUI's estimate)
  std::map<std::string, std::uint64_t> resident_bytes;  // per model: weights on the card during the stage
  std::map<std::string, std::uint64_t> streamed_bytes;  // per model: weights copied in per forward pass
  double seconds_per_step = 0;                      // sampling: estimated time of one step on this card
  Runtime::Loader loader = Runtime::Loader::Legacy;  // which loader ran the stage (legacy for GGUF always)
  // Set when a learned correction moved peak_bytes: the correction, and the peak before it (what a
  // recorder stores as the prediction, so a correction is never learned from its own output).
  std::optional<calibrate::Correction> calibration;
  std::uint64_t uncalibrated_peak_bytes = 0;
};

// One sampler's own sample stage (Job::samplers): what it samples and the peak it reaches.
struct SamplerPeak {
  SamplerJob job;
  std::string model;                       // the catalog model it samples ("" when not known)
  std::optional<std::uint64_t> peak_bytes;  // none: not sized (job.unknown, or a model not in the catalog)
  std::string unsized;                     // why it is not sized
  bool binding = false;                    // the worst of the workflow's samplers
  // Its own prompt's text-encode stage (the encoders its conditioning reads, nothing cached): the worst
  // job binds, by the larger of the two. None when its encoders were not traced.
  std::optional<std::uint64_t> encode_peak_bytes;
};

struct Estimate {
  std::vector<Stage> stages;
  std::vector<SamplerPeak> samplers;       // each sampler of a workflow, the binding one marked
  std::uint64_t peak_bytes = 0;
  std::string peak_stage;
  std::vector<std::string> notes;
  // Added by the estimator work (additive):
  std::uint64_t vram_bytes = 0;            // the card (0 = none given; no policy, no verdict); with
                                           // Runtime::free_bytes, the free memory the verdict is against
  std::optional<Verdict> verdict;          // none without a card
  std::uint64_t full_load_peak_bytes = 0;  // peak with every stage's models fully resident (no lowvram):
                                           // the smallest card that runs it unchanged
  std::uint64_t min_peak_bytes = 0;        // peak with the most streaming/tiling ComfyUI does by itself
  double slowdown = 1.0;                   // worst stage slowdown from partial loading / tiling
  // Added for the two runtimes:
  Runtime::Loader runtime = Runtime::Loader::Legacy;
  // The least the run needs on the card without an OOM (the largest stage's required_bytes).
  std::uint64_t required_bytes() const { return min_peak_bytes; }
  std::uint64_t own_peak_bytes = 0;        // peak_bytes without the models cached from earlier stages
  std::uint64_t host_ram_bytes = 0;        // host RAM the weights need (staged on the CPU / offloaded)
  // The part of host_ram_bytes that cannot be read again from the model files (below: the run dies
  // without it). Legacy loader: all of it; dynamic VRAM: LoRA patches and models on the legacy path.
  std::uint64_t host_ram_held_bytes = 0;
  std::uint64_t ram_bytes = 0;             // the host RAM checked against (0 = not given)
  std::string verdict_reason;              // where it runs out, or why it streams; "" when it fits
  // The limit a verdict that does not run stops at: "vram" (in limit_stage) or "host_ram"; "" otherwise.
  // Renderers name it in the headline rather than reading verdict_reason's words.
  std::string limit, limit_stage;
  nlohmann::json to_json() const;   // {peak_bytes, peak_stage, stages:[{name, peak_bytes, breakdown, ...}], notes}
};

// Throws InputError naming the field when the job is inconsistent (unknown model, bad precision,
// non-positive sizes, a VAE given where a diffusion model is expected...).
Estimate estimate(const Job& job, const Runtime& runtime);

// The usual job for one catalog model: a diffusion model with its companions (Flux: CLIP-L, T5-XXL,
// Flux VAE; Wan: umT5-XXL, its VAE, CLIP-vision-H for Wan 2.1 I2V) and its default shape, or a
// text encoder / CLIP vision / VAE alone. `model` accepts aliases; throws InputError("model").
Job default_job(const std::string& model);

// The job as JSON (models with precisions and weight bytes, shape, decode mode, samplers) for reports.
nlohmann::json job_to_json(const Job& job);
nlohmann::json sampler_job_json(const SamplerJob& s);  // {node_id, type, diffusion, width, ..., unknown}

}  // namespace headroom
