#pragma once
// `plan --models DIR`: find the files a workflow names under a ComfyUI models folder and read
// what their headers say (through api::inspect), so the estimate uses real sizes, not names.
#include <cstdint>
#include <optional>
#include <string>

namespace headroom::workflow {

// DIR/<file>, then the ComfyUI subfolders for the loader's role (diffusion_models/, unet/,
// checkpoints/, text_encoders/, clip/, vae/, loras/, clip_vision/), then anywhere below DIR.
// A name with "..", or an absolute one, is refused (nullopt): workflows must not point outside DIR.
std::optional<std::string> find_model_file(const std::string& dir, const std::string& file, const std::string& role);

struct HeaderFacts {
  std::string model;                      // canonical catalog name, "" if not recognised
  std::string precision;                  // dominant canonical precision, "" if unknown
  std::optional<std::uint64_t> gpu_bytes; // bytes once loaded
  std::string error;                      // why the header could not be used ("" = fine)
};

// Never throws: a header that cannot be read gives `error`, and the caller falls back to names.
HeaderFacts read_header_facts(const std::string& path);

}  // namespace headroom::workflow
