// Model files named by a workflow, looked up under a ComfyUI models folder.
#include "core/workflow_models_dir.hpp"

#include <filesystem>
#include <map>
#include <vector>

#include "core/api.hpp"
#include "core/error.hpp"

namespace headroom::workflow {

namespace fs = std::filesystem;

namespace {

// ComfyUI's folder_paths names (and their legacy aliases) per loader role.
const std::map<std::string, std::vector<std::string>>& subfolders() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"diffusion", {"diffusion_models", "unet"}},
      {"checkpoint", {"checkpoints"}},
      {"text_encoder", {"text_encoders", "clip"}},
      {"vae", {"vae"}},
      {"clip_vision", {"clip_vision"}},
      {"lora", {"loras"}},
      {"style_model", {"style_models"}},
  };
  return m;
}

constexpr std::size_t kMaxEntriesScanned = 20000;  // a models folder, not a whole disk

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::optional<std::string> find_model_file(const std::string& dir, const std::string& file, const std::string& role) {
  fs::path rel(file);
  if (file.empty() || rel.is_absolute()) return std::nullopt;
  for (const auto& part : rel)
    if (part == "..") return std::nullopt;
  fs::path root(dir);
  if (is_regular(root / rel)) return (root / rel).string();
  auto it = subfolders().find(role);
  if (it != subfolders().end())
    for (const auto& sub : it->second)
      if (is_regular(root / sub / rel)) return (root / sub / rel).string();
  // Anywhere below (custom subfolders such as diffusion_models/wan/); bounded walk.
  std::error_code ec;
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator i(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && i != end && seen < kMaxEntriesScanned; i.increment(ec), ++seen) {
    if (i->path().filename() == rel.filename() && is_regular(i->path())) return i->path().string();
  }
  return std::nullopt;
}

HeaderFacts read_header_facts(const std::string& path) {
  HeaderFacts f;
  try {
    api::json r = api::inspect({path});
    const api::json& one = r.is_array() && !r.empty() ? r[0] : r;
    auto str = [&](const char* k) {
      return one.contains(k) && one[k].is_string() ? one[k].get<std::string>() : std::string();
    };
    f.model = str("model");
    f.precision = str("precision");
    // Weights as loaded; the estimator adds GGUF/fp8 dequantisation transients itself.
    for (const char* k : {"weight_gpu_bytes", "gpu_bytes"})
      if (one.contains(k) && one[k].is_number_unsigned()) {
        f.gpu_bytes = one[k].get<std::uint64_t>();
        break;
      }
    if (one.contains("error") && one["error"].is_string()) f.error = one["error"].get<std::string>();
  } catch (const Error& e) {
    f.error = e.what();
  }
  return f;
}

}  // namespace headroom::workflow
