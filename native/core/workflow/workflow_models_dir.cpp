// Model files named by a workflow, looked up under a ComfyUI models folder.
#include "core/workflow/workflow_models_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/base/error.hpp"
#include "core/inspect/header_cache.hpp"
#include "core/workflow/comfy_nodes.hpp"

namespace headroom::workflow {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxEntriesScanned = 20000;  // a models folder, not a whole disk

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The name as a path below a folder, or nullopt when it would leave the folder. ComfyUI on Windows names
// files in subfolders "flux\\x.safetensors" (os.path.relpath); the separator is read as one here too, so
// those names are found and "..\\x" is caught as the escape it is. Paths are UTF-8 throughout
// (u8path/u8string): a narrow fs::path is the ANSI code page on Windows.
std::optional<fs::path> relative_name(const std::string& file) {
  std::string name = file;
  for (auto& ch : name)
    if (ch == '\\') ch = '/';
  const fs::path rel = fs::u8path(name);
  if (name.empty() || rel.is_absolute() || rel.has_root_name()) return std::nullopt;
  for (const auto& part : rel)
    if (part == "..") return std::nullopt;
  return rel;
}

}  // namespace

std::optional<std::string> path_below(const std::string& dir, const std::string& name) {
  const auto rel = relative_name(name);
  if (!rel) return std::nullopt;
  return (fs::u8path(dir) / *rel).u8string();
}

std::optional<std::string> find_in_model_folders(const std::map<std::string, std::vector<std::string>>& folders,
                                                 const std::string& file, const std::string& role) {
  const auto rel = relative_name(file);
  const auto& roles = comfy_nodes().loader_roles;
  auto it = roles.find(role);
  if (!rel || it == roles.end()) return std::nullopt;
  for (const auto& folder : it->second.folders) {
    auto dirs = folders.find(folder);
    if (dirs == folders.end()) continue;
    for (const auto& dir : dirs->second)
      if (is_regular(fs::u8path(dir) / *rel)) return (fs::u8path(dir) / *rel).u8string();
  }
  return std::nullopt;
}

std::optional<std::string> find_model_file(const std::string& dir, const std::string& file, const std::string& role,
                                           ModelsFolderIndex* index) {
  const auto named = relative_name(file);
  if (!named) return std::nullopt;
  const fs::path& rel = *named;
  const fs::path root = fs::u8path(dir);
  if (is_regular(root / rel)) return (root / rel).u8string();
  // ComfyUI's folder_paths names (and their legacy aliases) for the loader's role.
  const auto& roles = comfy_nodes().loader_roles;
  auto it = roles.find(role);
  if (it != roles.end())
    for (const auto& sub : it->second.folders)
      if (is_regular(root / fs::u8path(sub) / rel)) return (root / fs::u8path(sub) / rel).u8string();
  // Anywhere below (custom subfolders such as diffusion_models/wan/); bounded walk.
  if (index) {
    const std::string* found = index->find(dir, rel.filename().u8string());
    if (found && is_regular(fs::u8path(*found))) return *found;
    return std::nullopt;
  }
  std::error_code ec;
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator i(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && i != end && seen < kMaxEntriesScanned; i.increment(ec), ++seen) {
    if (i->path().filename() == rel.filename() && is_regular(i->path())) return i->path().u8string();
  }
  return std::nullopt;
}

const std::string* ModelsFolderIndex::find(const std::string& dir, const std::string& filename) {
  if (!built_) {
    built_ = true;
    std::error_code ec;
    std::size_t seen = 0;
    for (fs::recursive_directory_iterator i(fs::u8path(dir), fs::directory_options::skip_permission_denied, ec), end;
         !ec && i != end && seen < kMaxEntriesScanned; i.increment(ec), ++seen)
      if (is_regular(i->path())) first_.emplace(i->path().filename().u8string(), i->path().u8string());
  }
  auto it = first_.find(filename);
  return it == first_.end() ? nullptr : &it->second;
}

namespace {

// What each loader role of comfy_nodes.json can load, in the inspector's roles, and how an error
// names the loader. A role not listed (lora, style_model) loads whatever it is given.
struct LoaderFiles {
  const char* loader_role;
  std::vector<std::string> file_roles;
  const char* words;
};

const std::vector<LoaderFiles>& loader_files() {
  static const std::vector<LoaderFiles> t = {
      {"diffusion", {"diffusion_model"}, "a diffusion model loader"},
      {"checkpoint", {"checkpoint", "diffusion_model"}, "a checkpoint loader"},
      {"text_encoder", {"text_encoder"}, "a text encoder (CLIP) loader"},
      {"vae", {"vae"}, "a vae loader"},
      {"clip_vision", {"clip_vision"}, "a CLIP vision loader"},
      {"audio_encoder", {"audio_encoder"}, "an audio encoder loader"},
      {"model_patch", {"model_patch"}, "a model patch loader"},
  };
  return t;
}

const LoaderFiles* loader_files_of(const std::string& loader_role) {
  for (const auto& l : loader_files())
    if (loader_role == l.loader_role) return &l;
  return nullptr;
}

bool loads(const std::string& loader_role, const std::string& file_role) {
  const LoaderFiles* l = loader_files_of(loader_role);
  return !l || std::find(l->file_roles.begin(), l->file_roles.end(), file_role) != l->file_roles.end();
}

std::string loader_word(const std::string& loader_role) {
  const LoaderFiles* l = loader_files_of(loader_role);
  return l ? l->words : "a " + loader_role + " loader";
}

}  // namespace

namespace {

std::string classify_file_problem(std::uint64_t file_bytes, const std::string& error) {
  if (file_bytes == 0) return "empty";
  // Both header readers say "truncated" whenever the file ends before what its header promises (the
  // length prefix, a tensor's data offsets, the GGUF tensor infos): a download that stopped early.
  if (error.find("truncated") != std::string::npos) return "truncated";
  return "bad_header";
}

}  // namespace

HeaderFacts read_header_facts(const std::string& path, const std::string& loader_role) {
  HeaderFacts f;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(fs::u8path(path), ec);
  if (!ec && size == 0) {
    // Nothing to parse: a download that never started, or a placeholder.
    f.error = "the file is empty (0 bytes)";
    f.file_problem = "empty";
    return f;
  }
  try {
    const Inspection ins = inspect_file_cached(path);
    // Weights as loaded; the estimator adds GGUF/fp8 dequantisation transients itself.
    auto take = [&f](const ModelSummary& s) {
      f.model = s.model;
      f.precision = s.precision;
      f.gpu_bytes = s.weight_gpu_bytes;
      f.role = s.role;
    };
    take(ins.whole);
    if (loader_role.empty() || loader_role == "lora" || f.model.empty()) return f;
    // A diffusion loader given a whole checkpoint loads only its diffusion model (ComfyUI's
    // load_diffusion_model strips the "model.diffusion_model." prefix): count that component alone.
    if (loader_role == "diffusion" && f.role == "checkpoint") {
      for (const auto& c : ins.components)
        if (c.role == "diffusion_model" && !c.model.empty()) {
          take(c);
          return f;
        }
    }
    if (!loads(loader_role, f.role)) {
      // The estimator would refuse the model for this slot; the caller falls back to the name instead.
      f.error = "it holds " + f.model + " (a " + f.role + "), which " + loader_word(loader_role) + " cannot load";
      f.model.clear();
      f.precision.clear();
      f.gpu_bytes.reset();
    }
  } catch (const FileFormatError& e) {
    f.error = e.what();
    f.file_problem = classify_file_problem(ec ? 1 : static_cast<std::uint64_t>(size), f.error);
  } catch (const Error& e) {
    f.error = e.what();
    f.file_problem = "unreadable";
  }
  return f;
}

}  // namespace headroom::workflow
