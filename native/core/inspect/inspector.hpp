#pragma once
// What a .safetensors or .gguf file holds, from its header alone: the model it is (by tensor
// names and shapes, against the `recognise` sections of models.json), its parameters, dtype mix,
// precision, and the bytes it takes on the GPU once ComfyUI loads it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/file_reader.hpp"

namespace headroom {

// One tensor, the same for both formats.
struct TensorRecord {
  std::string name;
  std::string dtype;                  // canonical: bf16 fp16 fp32 fp64 fp8_e4m3fn fp8_e5m2 q8_0 q4_k ...
  std::vector<std::uint64_t> shape;   // PyTorch order (GGUF dims reversed, as ComfyUI-GGUF does)
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;            // stored bytes
  bool quantised = false;             // a GGUF block type: dequantised per layer at run time
};

struct ModelFile {
  std::string path;
  std::string format;  // "safetensors" | "gguf"
  std::uint64_t file_bytes = 0;
  std::uint64_t header_bytes = 0;
  std::vector<TensorRecord> tensors;
  nlohmann::json metadata = nlohmann::json::object();
};

// Recognises the format by its first bytes (GGUF magic, else a safetensors length prefix) and
// reads only the header. Throws FileFormatError for malformed files, Error when unreadable.
ModelFile read_model_file(ByteSource& source);
ModelFile read_model_file(const std::string& path);

struct DtypeShare {
  std::uint64_t tensors = 0;
  std::uint64_t parameters = 0;
  std::uint64_t bytes = 0;
};

// A model, or one model inside a checkpoint bundle.
struct ModelSummary {
  std::string key_prefix;  // e.g. "model.diffusion_model."; "" when keys are bare
  std::string model;       // canonical catalog name; "" when not recognised
  std::string family;
  std::string role;        // diffusion_model | text_encoder | vae | clip_vision | checkpoint | lora | unknown
  std::string variant;
  std::vector<std::string> candidates;  // other catalog entries whose keys match equally well
  std::uint64_t tensors = 0;
  std::uint64_t parameters = 0;  // elements, without fp8 scale tensors and markers
  std::map<std::string, DtypeShare> dtype_mix;
  std::string precision;  // bf16 fp16 fp32 fp8_e4m3fn fp8_e5m2 fp8_scaled gguf-q8_0 ...
  std::uint64_t stored_bytes = 0;
  // Weights as ComfyUI holds them: fp8 and GGUF stay in their storage dtype, fp32 diffusion
  // models and text encoders are cast to 16 bit.
  std::uint64_t weight_gpu_bytes = 0;
  // fp8 and GGUF layers are dequantised one at a time to the 16-bit compute dtype: the largest
  // such layer is the transient.
  std::uint64_t dequant_transient_bytes = 0;
  std::uint64_t gpu_bytes() const { return weight_gpu_bytes + dequant_transient_bytes; }
  nlohmann::json to_json() const;
};

struct Inspection {
  std::string path;
  std::string format;
  std::uint64_t file_bytes = 0;
  std::uint64_t header_bytes = 0;
  ModelSummary whole;                     // role "checkpoint" for bundles
  std::vector<ModelSummary> components;   // filled for bundles only
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json to_json() const;
};

// A checkpoint bundles a handful of models (diffusion model, VAE, two or three text encoders, CLIP
// vision). A file whose keys name more bundle prefixes than this ("text_encoders.<name>." each) is no
// checkpoint ComfyUI loads, and summarising each part would cost per part: summarise refuses it with a
// FileFormatError naming the limit, so its size is unknown rather than the sum of thousands of guesses.
constexpr std::size_t kMaxBundleComponents = 64;

// `catalog` is models.json (an object with "models") or its array of entries; entries without
// a "recognise" section are ignored.
Inspection summarise(const ModelFile& file, const nlohmann::json& catalog);
Inspection inspect_file(const std::string& path, const nlohmann::json& catalog);
Inspection inspect_file(const std::string& path);  // with the built-in models.json

// What the planner needs to know about a user's file.
struct WeightSummary {
  std::string model;      // "" when not recognised
  std::string role;
  std::string precision;
  std::uint64_t parameters = 0;
  std::uint64_t weight_bytes = 0;             // = ModelSummary::weight_gpu_bytes
  std::uint64_t dequant_transient_bytes = 0;
  std::uint64_t gpu_bytes = 0;                // weight_bytes + dequant_transient_bytes
};
WeightSummary weight_summary(const std::string& path);
WeightSummary weight_summary(const std::string& path, const nlohmann::json& catalog);

}  // namespace headroom
