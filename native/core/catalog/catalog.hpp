#pragma once
// The model, precision and GPU catalog (native/data/models.json and gpus.json) with name lookup.
// Parsed once and cached; every lookup accepts canonical names and common spellings and throws
// InputError(field) listing the candidates when a name is unknown or ambiguous.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/catalog/file_names.hpp"  // model_from_file_name, precision_from_file_name

#include <nlohmann/json.hpp>

#include "core/catalog/model_arch.hpp"

namespace headroom {

// AudioEncoder: ComfyUI's AudioEncoderLoader (wav2vec2, Whisper), run in its own audio_encode stage. ModelPatch:
// ModelPatchLoader's file (InfiniteTalk, a DiffSynth ControlNet), loaded with the model it patches and counted
// in that model's sample stage.
enum class Role { DiffusionModel, TextEncoder, ClipVision, Vae, AudioEncoder, ModelPatch };
// "diffusion_model", "text_encoder", "clip_vision", "vae", "audio_encoder", "model_patch"
const char* role_name(Role role);

// A storage format of weights. Float and fp8 formats are one element per "block".
// GGUF formats are exact ggml blocks (e.g. Q8_0: 32 weights in 34 bytes, Q4_K: 256 in 144).
// How a precision stores weights (models.json precisions "kind"): plain floats, float8, ComfyUI's
// per-layer quantised formats, or GGUF blocks.
enum class PrecisionKind { Float, Fp8, ComfyQuant, Gguf };
const char* precision_kind_name(PrecisionKind kind);  // "float", "fp8", "comfy_quant", "gguf"

struct PrecisionInfo {
  std::string name;                   // canonical: "bf16", "fp8_e4m3fn", "gguf-q4_k", ...
  std::vector<std::string> aliases;
  PrecisionKind kind = PrecisionKind::Float;
  int elems_per_block = 1;
  int bytes_per_block = 2;
  int ggml_type = -1;                 // GGUF type id (ggml_type enum), -1 when not a GGUF type
  // ComfyUI's per-layer formats (nvfp4, mxfp8, fp8mixed, int8) compute in their own dtype only on cards
  // from this CUDA compute capability; elsewhere each layer is dequantised before its matmul.
  std::optional<double> native_compute_from;
  double bits_per_weight() const { return 8.0 * bytes_per_block / elems_per_block; }
  // Bytes of `elements` weights stored in this format (whole blocks).
  std::uint64_t bytes_for(std::uint64_t elements) const;
  bool quantised() const { return kind != PrecisionKind::Float; }  // needs a cast/dequant to compute
};

struct GpuInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::uint64_t memory_bytes = 0;
  double memory_gb = 0;
  std::optional<double> price_eur_per_hour;
  std::optional<bool> fp8_compute;    // compute capability >= 8.9
  // Optional figures of gpus.json entries (each with a source there).
  std::optional<int> pcie_gen, pcie_lanes;
  std::optional<double> bf16_tflops;  // dense
  std::optional<std::string> vendor;  // "nvidia" | "amd"
  std::optional<std::string> compute_capability;  // "8.9"
};

// One catalog model, typed; exactly one of diffusion / encoder / vae is set, by role.
// `data` is its whole models.json entry, for the inspector's "recognise" section and the API's
// "defaults" echo; the estimator and planner read only the typed fields.
struct ModelInfo {
  std::string name;
  Role role = Role::DiffusionModel;
  std::string family;                 // "flux", "wan", "t5_encoder", "kl", "wan_vae", ...
  std::string variant;
  std::vector<std::string> aliases;
  std::uint64_t params = 0;           // per expert for Wan 2.2 A14B
  std::string default_precision;
  std::string compute_dtype;          // dtype activations run in under ComfyUI
  int experts = 1;                    // 2 for Wan 2.2 A14B (one active per step) = experts_info.count
  Experts experts_info;
  std::vector<std::string> companion_text_encoders;
  std::string companion_vae;
  std::string companion_clip_vision;
  std::vector<FilePattern> file_patterns;
  std::optional<DiffusionArch> diffusion;   // role diffusion_model
  std::optional<EncoderArch> encoder;       // roles text_encoder, clip_vision, audio_encoder
  std::optional<VaeArch> vae;               // role vae
  std::optional<JobDefaults> defaults;
  bool guidance_distilled = false;          // trained to follow guidance at cfg 1
  std::string fp8_file;                     // text encoders: the usual fp8 release's file name, "" if none
  // A model its node runs as one forward pass (a detector, segmenter, depth or pose estimator): why, or ""
  // for a sampled model. Such a model never stands for a workflow's sampled model, and guidance does not apply.
  std::string one_pass;
  // VAEs: quantised precisions an official file ships in (ComfyUI loads it with mixed-precision ops), which
  // a VAE otherwise cannot take; empty for most.
  std::vector<std::string> released_quantized;
  // Of `params`, the weights official quantised files keep in 16 bit; 0 = every weight takes the precision.
  std::uint64_t unquantised_params = 0;
  // Tensor-name prefixes ComfyUI drops when it loads the file (a whole Whisper checkpoint's "decoder."):
  // `params` leaves them out, and a header's bytes are counted without them.
  std::vector<std::string> dropped_prefixes;
  // Model patches: the families of the diffusion models it patches (documentation, shown with the model).
  std::vector<std::string> patches;
  const nlohmann::json* data = nullptr;
};

struct Catalog {
  std::vector<ModelInfo> models;
  std::vector<PrecisionInfo> precisions;
  std::vector<GpuInfo> gpus;
  const nlohmann::json* runtime = nullptr;  // models.json "runtime": constants with sources
  // Lookup indexes built once with the catalog, because the planner resolves the same names
  // hundreds of times per plan: each spelling (name or alias, as written and normalised) -> the
  // position of the first item that claims it, so lookups cost one hash instead of normalising
  // every alias of every entry.
  std::unordered_map<std::string, std::size_t> model_keys, precision_keys, gpu_keys;
  // Numeric "runtime" constants; the keys view the strings of models.json's parsed JSON (static).
  std::unordered_map<std::string_view, double> runtime_values;
};

// Parsed and validated once (thread-safe); throws Error if the data files are malformed.
const Catalog& catalog_data();

// Lookups. `field` names the input in the error ("model", "--precision", ...).
const ModelInfo& resolve_model(const std::string& text, const std::string& field = "model");
const PrecisionInfo& resolve_precision(const std::string& text, const std::string& field = "precision");
const GpuInfo& resolve_gpu(const std::string& text, const std::string& field = "gpu");
// What a typed GPU name means, for callers that word the answer themselves (the settings of the nodes):
// the card, else the cards it could mean (several match) or the three closest names (none does).
struct GpuLookup {
  const GpuInfo* gpu = nullptr;
  std::vector<std::string> matches, closest;
};
GpuLookup look_up_gpu(const std::string& text);

// Non-throwing variants for callers that probe (nullptr when unknown).
const ModelInfo* find_model(const std::string& text);
// The catalog models a typed name may mean: the one find_model finds, else every model the name is a
// part of. Empty for a model the catalog does not cover (resolve_model would say "unknown model");
// several for an ambiguous name such as a family word (it would say "matches several models").
std::vector<const ModelInfo*> models_named(const std::string& text);
const PrecisionInfo* find_precision(const std::string& text);
const PrecisionInfo* precision_by_ggml_type(int ggml_type);

// The first catalog VAE whose native decoder is `kind` (its figures stand in for a decoder known
// only by kind); nullptr when none.
const ModelInfo* vae_with_decoder(DecoderKind kind);

// Precisions a role can use (a VAE takes no fp8/GGUF). Throws InputError(field) otherwise.
void check_precision_for_role(const ModelInfo& model, const PrecisionInfo& precision,
                              const std::string& field);

// Weight bytes of a model stored in a precision (params in whole blocks).
std::uint64_t weight_bytes(const ModelInfo& model, const PrecisionInfo& precision);

// A numeric constant of models.json "runtime" (throws Error when missing).
double runtime_constant(std::string_view key);

// Bytes per element of a compute dtype name ("fp32" 4, "bf16"/"fp16" 2).
int dtype_bytes(const std::string& dtype);

}  // namespace headroom
