#pragma once
// `plan --models DIR`: find the files a workflow names under a ComfyUI models folder and read
// what their headers say (through api::inspect), so the estimate uses real sizes, not names.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace headroom::workflow {

// DIR/<file>, then the ComfyUI subfolders for the loader's role (diffusion_models/, unet/,
// checkpoints/, text_encoders/, clip/, vae/, loras/, clip_vision/), then anywhere below DIR.
// A name with "..", or an absolute one, is refused (nullopt): workflows must not point outside DIR.
// Backslashes count as separators (Windows workflows name subfolders "flux\\x.safetensors").
// The walk below DIR is bounded (kMaxEntriesScanned entries). Give `index` to share one walk between
// the lookups of a workflow: without it, every loader that names a missing file walks DIR again, and
// a workflow of thousands of loaders costs thousands of walks.
class ModelsFolderIndex;

// `dir`/`name` as a UTF-8 path, or nullopt when `name` is empty, absolute or leaves `dir` (".."); backslashes
// count as separators. The one rule for every file a workflow names inside a folder Headroom was given.
std::optional<std::string> path_below(const std::string& dir, const std::string& name);

std::optional<std::string> find_model_file(const std::string& dir, const std::string& file, const std::string& role,
                                           ModelsFolderIndex* index = nullptr);

// ComfyUI's own folder lists (folder_paths: "loras" -> every directory it searches, extra_model_paths.yaml
// included), asked the way ComfyUI resolves a name: <dir>/<file> for each folder the loader's role reads
// (comfy_nodes.json loader_roles), in order. The same refusals as find_model_file; no walk.
std::optional<std::string> find_in_model_folders(const std::map<std::string, std::vector<std::string>>& folders,
                                                 const std::string& file, const std::string& role);

// File names below one models folder, walked once on first use; first match in walk order wins,
// as in find_model_file's own walk.
class ModelsFolderIndex {
 public:
  const std::string* find(const std::string& dir, const std::string& filename);

 private:
  bool built_ = false;
  std::unordered_map<std::string, std::string> first_;
};

struct HeaderFacts {
  std::string model;                      // canonical catalog name, "" if not recognised
  std::string precision;                  // dominant canonical precision, "" if unknown
  std::optional<std::uint64_t> gpu_bytes; // bytes once loaded
  std::string error;                      // why the header could not be used ("" = fine)
  std::string role;                       // the inspector's role: diffusion_model, text_encoder, vae,
                                          // clip_vision, checkpoint, lora, unknown
  // What is wrong with the file itself, not with its fit for the loader: "" (nothing), "empty" (0 bytes),
  // "truncated" (shorter than its header says), "bad_header" (a header that does not parse), "unreadable".
  std::string file_problem;
};

// The header facts of `path` for a loader of `loader_role` (diffusion, checkpoint, text_encoder, vae,
// clip_vision, lora). Never throws: a header that cannot be read gives `error`, and the caller falls
// back to names. A file of a kind that loader cannot load (a VAE in UNETLoader) gives `error` rather than a
// model the estimator would refuse; a diffusion loader given a checkpoint gets its diffusion model.
// The header is read through the process-wide cache (core/inspect/header_cache.hpp): the same file
// under another spelling, or asked for again by the next prompt, is not read again.
HeaderFacts read_header_facts(const std::string& path, const std::string& loader_role);

}  // namespace headroom::workflow
