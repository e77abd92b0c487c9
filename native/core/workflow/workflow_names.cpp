// File name -> model and precision. The patterns follow the file names of the official ComfyUI
// templates (../shared/real-workflows/INDEX.md, "Loaders -> model files") and of the Comfy-Org
// repackaged repositories they download from.
#include "core/workflow/workflow_names.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "core/catalog/catalog.hpp"

namespace headroom::workflow {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Lower case without separators, so "wan2.1_t2v_1.3B", "Wan2_1-T2V-1_3B" and "wan21t2v13b" compare equal.
std::string squash(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool has(const std::string& hay, const char* needle) { return hay.find(needle) != std::string::npos; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct Guess {
  const char* model;
  const char* note;  // why a near relative stands in, or nullptr
};

Guess diffusion_from(const std::string& n) {
  if (has(n, "flux")) {
    if (has(n, "kontext")) return {"flux1-kontext-dev", nullptr};
    if (has(n, "schnell")) return {"flux1-schnell", nullptr};
    if (has(n, "fill"))
      return {"flux1-dev", "Flux.1 Fill dev estimated as Flux.1 dev: same transformer, only the input projection "
                           "takes 384 instead of 64 channels"};
    if (has(n, "dev") || has(n, "flux1")) return {"flux1-dev", nullptr};
  }
  bool wan22 = has(n, "wan22");
  bool wan21 = has(n, "wan21") || (has(n, "wan") && !wan22);
  if (wan22) {
    if (has(n, "ti2v") || has(n, "5b")) return {"wan2.2-ti2v-5b", nullptr};
    if (has(n, "i2v")) return {"wan2.2-i2v-a14b", nullptr};
    if (has(n, "t2v") || has(n, "14b")) return {"wan2.2-t2v-a14b", nullptr};
  }
  if (wan21) {
    bool small = has(n, "13b");
    if (has(n, "vace"))
      return {small ? "wan2.1-t2v-1.3b" : "wan2.1-t2v-14b",
              "Wan 2.1 VACE estimated as the Wan 2.1 T2V model of its size; the VACE blocks add weights that "
              "are not counted"};
    if (has(n, "i2v") || has(n, "flf2v") || has(n, "fun")) return {small ? "wan2.1-t2v-1.3b" : "wan2.1-i2v-14b", nullptr};
    if (has(n, "t2v") || small || has(n, "14b")) return {small ? "wan2.1-t2v-1.3b" : "wan2.1-t2v-14b", nullptr};
  }
  return {nullptr, nullptr};
}

Guess text_encoder_from(const std::string& n) {
  if (has(n, "umt5")) return {"umt5-xxl", nullptr};
  if (has(n, "t5xxl") || has(n, "t5v11xxl") || has(n, "googlet5")) return {"t5-xxl", nullptr};
  if (has(n, "clipl")) return {"clip-l", nullptr};
  return {nullptr, nullptr};
}

Guess vae_from(const std::string& n) {
  if (has(n, "wan22") && has(n, "vae")) return {"wan2.2-vae", nullptr};
  if (has(n, "wan") && has(n, "vae")) return {"wan2.1-vae", nullptr};
  if (n == "aesafetensors" || (has(n, "flux") && has(n, "vae")) || has(n, "fluxae")) return {"flux-vae", nullptr};
  if (has(n, "sdxl") && has(n, "vae")) return {"sdxl-vae", nullptr};
  if (has(n, "vaeftmse") || has(n, "vaeftema") || (has(n, "sd15") && has(n, "vae"))) return {"sd15-vae", nullptr};
  return {nullptr, nullptr};
}

}  // namespace

std::string precision_from_name(const std::string& file) {
  std::string n = lower(base_name(file));
  if (ends_with(n, ".gguf")) {
    // Mixed K-quants (Q4_K_M = Q4_K with some Q6_K tensors) are named after their main block type.
    static const std::pair<const char*, const char*> quants[] = {
        {"q8_0", "gguf-q8_0"}, {"q6_k", "gguf-q6_k"}, {"q5_k", "gguf-q5_k"}, {"q5_0", "gguf-q5_0"},
        {"q5_1", "gguf-q5_1"}, {"q4_k", "gguf-q4_k"}, {"q4_0", "gguf-q4_0"}, {"q4_1", "gguf-q4_1"},
        {"q3_k", "gguf-q3_k"}, {"q2_k", "gguf-q2_k"}, {"bf16", "bf16"}, {"f16", "fp16"}};
    for (const auto& [tag, canon] : quants)
      if (has(n, tag)) return canon;
    return "";
  }
  if (has(n, "fp8_scaled") || has(n, "fp8scaled") || (has(n, "fp8") && has(n, "scaled"))) return "fp8_scaled";
  if (has(n, "e4m3fn") || has(n, "e4m3")) return "fp8_e4m3fn";
  if (has(n, "e5m2")) return "fp8_e5m2";
  if (has(n, "fp8")) return "fp8_e4m3fn";  // Comfy-Org's plain "-fp8" files are e4m3fn
  if (has(n, "bf16")) return "bf16";
  if (has(n, "fp16") || has(n, "f16")) return "fp16";
  if (has(n, "fp32") || has(n, "f32")) return "fp32";
  return "";
}

std::string precision_from_weight_dtype(const std::string& weight_dtype) {
  if (weight_dtype == "fp8_e4m3fn" || weight_dtype == "fp8_e4m3fn_fast") return "fp8_e4m3fn";
  if (weight_dtype == "fp8_e5m2") return "fp8_e5m2";
  return "";  // "default" (ComfyUI keeps the file's dtype) or Headroom's "auto"
}

std::string family_of(const std::string& model) {
  if (model.rfind("flux", 0) == 0) return "flux";
  if (model == "wan2.2-ti2v-5b") return "wan2.2-5b";
  if (model.rfind("wan2.2", 0) == 0) return "wan2.2-a14b";
  if (model.rfind("wan2.1", 0) == 0) return "wan2.1";
  return "";
}

// Canonical names of the catalog, for exact checks without the alias search of find_model.
bool in_catalog(const char* name) {
  static const std::unordered_set<std::string> names = [] {
    std::unordered_set<std::string> n;
    for (const auto& m : catalog_data().models) n.insert(m.name);
    return n;
  }();
  return names.count(name) > 0;
}

bool role_matches(const ModelInfo& m, const std::string& role) {
  switch (m.role) {
    case Role::DiffusionModel: return role == "diffusion" || role == "checkpoint";
    case Role::TextEncoder: return role == "text_encoder";
    case Role::ClipVision: return role == "clip_vision";
    case Role::Vae: return role == "vae";
  }
  return false;
}

NameGuess resolve_file(const std::string& file, const std::string& role) {
  NameGuess g;
  std::string n = squash(base_name(file));
  Guess m{nullptr, nullptr};
  if (role == "diffusion" || role == "checkpoint") m = diffusion_from(n);
  else if (role == "text_encoder") m = text_encoder_from(n);
  else if (role == "vae") m = vae_from(n);
  else if (role == "clip_vision" && has(n, "clipvisionh")) m = {"clip-vision-h", nullptr};
  if (m.model && !in_catalog(m.model)) m = {nullptr, nullptr};
  std::string from_catalog;  // asked only when our patterns do not know the name (catalog lookups scan)
  if (!m.model)
    if (auto name = model_from_file_name(base_name(file))) {
      const ModelInfo* info = find_model(*name);
      if (info && role_matches(*info, role)) from_catalog = info->name;
    }
  // Our patterns carry the caveats (Fill, VACE); a pattern naming a model the catalog lacks is dropped.
  if (m.model) {
    g.model = m.model;
    g.notes.push_back("'" + file + "' taken for " + g.model + " from its file name");
    if (m.note) g.notes.push_back(m.note);
  } else if (!from_catalog.empty()) {
    g.model = from_catalog;
    g.notes.push_back("'" + file + "' taken for " + g.model + " from its file name (catalog file patterns)");
  }
  g.precision = precision_from_name(file);
  if (g.precision.empty())
    if (auto p = precision_from_file_name(base_name(file))) g.precision = *p;
  if (!g.precision.empty())
    g.notes.push_back("precision " + g.precision + " of '" + file + "' taken from its file name");
  return g;
}

}  // namespace headroom::workflow
