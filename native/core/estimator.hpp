#pragma once
// The memory model: per-stage peak VRAM of a Job under ComfyUI's loading policy.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job.hpp"

namespace headroom {

// The card and ComfyUI's settings that decide what stays loaded.
struct Runtime {
  std::uint64_t vram_bytes = 0;        // total memory of the card; 0 = unknown (no policy applied)
  std::uint64_t reserve_bytes = 0;     // ComfyUI's reserve; 0 = ComfyUI's default for the platform
  bool windows = false;                // ComfyUI reserves more on Windows
  bool allow_lowvram = true;           // partial loading when weights do not fit (ComfyUI default)
};

struct Stage {
  std::string name;                                 // "text_encode", "sample", "vae_decode", ...
  std::uint64_t peak_bytes = 0;                     // reserved memory at this stage's peak
  std::map<std::string, std::uint64_t> breakdown;   // what makes up peak_bytes (sums to it)
  std::vector<std::string> resident;                // models on the GPU during the stage
  double slowdown = 1.0;                            // >1 when partial loading streams weights
  std::vector<std::string> notes;
};

struct Estimate {
  std::vector<Stage> stages;
  std::uint64_t peak_bytes = 0;
  std::string peak_stage;
  std::vector<std::string> notes;
  nlohmann::json to_json() const;   // {peak_bytes, peak_stage, stages:[{name, peak_bytes, breakdown, ...}], notes}
};

// Throws InputError naming the field when the job is inconsistent (unknown model, bad precision,
// non-positive sizes, a VAE given where a diffusion model is expected...).
Estimate estimate(const Job& job, const Runtime& runtime);

}  // namespace headroom
