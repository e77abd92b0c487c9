#pragma once
// native/data/presets.json: the planner's change kinds (cost order, what a preset may apply) and
// the named presets. Parsed and validated once.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom {

struct ChangeSpec {
  std::string kind;
  int cost = 0;
  bool widget = false;     // a preset can apply it by rewriting widget values
  std::string effect;      // what it costs in quality or speed, for descriptions
  std::string precision;   // target precision of gguf_* kinds
};

struct SearchSpec {
  std::vector<int> tile_sizes_px;
  int tile_overlap_px = 64;
  std::vector<double> resolution_scales;
  int resolution_multiple_px = 32;
  int min_frames = 17;
  int frames_step = 4;
};

struct PresetSpec {
  std::string name;
  std::string description;
  std::optional<double> target_memory_gb;  // "fit N GB": the smallest card of that size in gpus.json
  bool target_request = false;             // "fit this card": the request's gpu / vram_bytes
  nlohmann::json set = nlohmann::json::object();  // fixed settings: weight_dtype, decode, text_encoder_device
  std::vector<std::string> until_fits;     // planner kinds tried in order until the job fits
};

struct PresetData {
  std::vector<ChangeSpec> changes;  // sorted by cost
  SearchSpec search;
  std::vector<PresetSpec> presets;
  const ChangeSpec* change(const std::string& kind) const;
  const PresetSpec* preset(const std::string& name) const;  // case-insensitive
};

// Throws Error naming the entry when presets.json is malformed.
const PresetData& preset_data();

}  // namespace headroom
