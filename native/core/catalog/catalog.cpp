#include "core/catalog/catalog.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/text_distance.hpp"
#include "core/catalog/model_reader.hpp"

namespace headroom {
namespace {

using nlohmann::json;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Spellings compare without case and treat '_' and ' ' like '-': "Wan_T2V 1.3B" == "wan-t2v-1.3b".
std::string normalise(const std::string& s) {
  std::string out = lower(s);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  std::size_t start = 0;
  while (start < out.size() && std::isspace(static_cast<unsigned char>(out[start]))) ++start;
  out = out.substr(start);
  for (auto& c : out)
    if (c == '_' || c == ' ') c = '-';
  return out;
}

Role parse_role(const JsonFields& entry, const std::string& role) {
  if (role == "diffusion_model") return Role::DiffusionModel;
  if (role == "text_encoder") return Role::TextEncoder;
  if (role == "clip_vision") return Role::ClipVision;
  if (role == "vae") return Role::Vae;
  entry.fail("role", "expected diffusion_model, text_encoder, clip_vision or vae, got '" + role + "'");
}

// Every spelling of every item -> the first item it names, with the same first-wins order as a
// linear scan over names and aliases. Raw spellings point where their normalised form points.
template <typename T>
std::unordered_map<std::string, std::size_t> build_keys(const std::vector<T>& items) {
  std::unordered_map<std::string, std::size_t> keys;
  for (std::size_t i = 0; i < items.size(); ++i) {
    keys.emplace(normalise(items[i].name), i);
    for (const auto& a : items[i].aliases) keys.emplace(normalise(a), i);
  }
  for (const auto& item : items) {
    std::size_t at = keys.at(normalise(item.name));
    keys.emplace(item.name, at);
    for (const auto& a : item.aliases) keys.emplace(a, keys.at(normalise(a)));
  }
  return keys;
}

// "models.json", or the override's path when HEADROOM_DATA_DIR supplies the file (data_files.hpp).
std::string data_file_label(const std::string& name) {
  if (const char* dir = std::getenv("HEADROOM_DATA_DIR"); dir && *dir) {
    std::error_code ec;
    const std::string path = std::string(dir) + "/" + name;
    if (std::filesystem::exists(std::filesystem::u8path(path), ec)) return path;
  }
  return name;
}

std::vector<FilePattern> file_patterns_of(const JsonFields& entry) {
  std::vector<FilePattern> out;
  if (!entry.has("file_patterns")) return out;
  const json& all = entry.array("file_patterns");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string at = "file_patterns[" + std::to_string(i) + "]";
    FilePattern p;
    if (all[i].is_array())
      for (const auto& part : all[i])
        if (part.is_string() && !part.get<std::string>().empty()) p.push_back(part.get<std::string>());
    if (!all[i].is_array() || p.empty() || p.size() != all[i].size())
      entry.fail(at.c_str(), "expected a non-empty array of non-empty strings");
    out.push_back(std::move(p));
  }
  return out;
}

ModelInfo read_model(const json& m, const std::string& file, std::size_t index) {
  if (!m.is_object()) throw Error(file + ": models[" + std::to_string(index) + "] is not an object");
  ModelInfo info;
  info.name = JsonFields(m, file + ": models[" + std::to_string(index) + "]").text("name");
  const JsonFields f(m, file + ": model " + info.name);
  info.role = parse_role(f, f.text("role"));
  info.family = f.optional_text("family").value_or("");
  info.variant = f.optional_text("variant").value_or("");
  if (f.has("aliases")) info.aliases = f.texts("aliases");
  info.params = f.count("params");
  info.default_precision = f.text("default_precision");
  info.compute_dtype = f.optional_text("compute_dtype").value_or("bf16");
  if (auto comp = f.optional_object("companions")) {
    if (comp->has("text_encoders")) info.companion_text_encoders = comp->texts("text_encoders");
    info.companion_vae = comp->optional_text("vae").value_or("");
    info.companion_clip_vision = comp->optional_text("clip_vision").value_or("");
  }
  info.file_patterns = file_patterns_of(f);
  read_model_figures(f, info);
  info.data = &m;
  return info;
}

GpuInfo read_gpu(const json& g, const std::string& file, std::size_t index) {
  if (!g.is_object()) throw Error(file + ": gpus[" + std::to_string(index) + "] is not an object");
  GpuInfo info;
  info.name = JsonFields(g, file + ": gpus[" + std::to_string(index) + "]").text("name");
  const JsonFields f(g, file + ": gpu " + info.name);
  if (f.has("aliases")) info.aliases = f.texts("aliases");
  info.memory_bytes = f.count("memory_bytes");
  info.memory_gb = f.optional_number("memory_gb").value_or(0.0);
  info.price_eur_per_hour = f.optional_number("price_eur_per_hour");
  info.fp8_compute = f.optional_flag("fp8_compute");
  info.pcie_gen = f.optional_integer("pcie_gen");
  info.pcie_lanes = f.optional_integer("pcie_lanes");
  info.bf16_tflops = f.optional_number("bf16_tflops");
  info.vendor = f.optional_text("vendor");
  if (info.vendor && *info.vendor != "nvidia" && *info.vendor != "amd")
    f.fail("vendor", "expected nvidia or amd, got '" + *info.vendor + "'");
  info.compute_capability = f.optional_text("compute_capability");
  return info;
}

Catalog load() {
  Catalog c;
  const json& models = data_file("models.json");
  const json& gpus = data_file("gpus.json");
  const std::string models_file = data_file_label("models.json"), gpus_file = data_file_label("gpus.json");
  if (!models.contains("models") || !models["models"].is_array()) throw Error(models_file + ": no 'models' array");
  for (std::size_t i = 0; i < models["models"].size(); ++i) c.models.push_back(read_model(models["models"][i], models_file, i));
  if (!models.contains("precisions") || !models["precisions"].is_array())
    throw Error(models_file + ": no 'precisions' array");
  for (const auto& p : models["precisions"]) {
    PrecisionInfo info;
    info.name = JsonFields(p, models_file + ": precision").text("name");
    const JsonFields f(p, models_file + ": precision " + info.name);
    if (f.has("aliases")) info.aliases = f.texts("aliases");
    info.kind = f.text("kind");
    info.elems_per_block = f.integer("elems_per_block");
    info.bytes_per_block = f.integer("bytes_per_block");
    info.ggml_type = f.optional_integer("ggml_type").value_or(-1);
    info.native_compute_from = f.optional_number("native_compute_from");
    if (info.elems_per_block <= 0 || info.bytes_per_block <= 0) f.fail("elems_per_block", "and bytes_per_block must be positive");
    c.precisions.push_back(std::move(info));
  }
  if (!gpus.contains("gpus") || !gpus["gpus"].is_array()) throw Error(gpus_file + ": no 'gpus' array");
  for (std::size_t i = 0; i < gpus["gpus"].size(); ++i) c.gpus.push_back(read_gpu(gpus["gpus"][i], gpus_file, i));
  if (!models.contains("runtime") || !models["runtime"].is_object()) throw Error(models_file + ": no 'runtime' object");
  c.runtime = &models["runtime"];
  for (auto it = c.runtime->begin(); it != c.runtime->end(); ++it) {
    const json& v = it.value();
    if (v.is_number())
      c.runtime_values.emplace(it.key(), v.get<double>());
    else if (v.is_object() && v.contains("value") && v["value"].is_number())
      c.runtime_values.emplace(it.key(), v["value"].get<double>());
  }
  // Companions must exist so that estimate() never meets a dangling name.
  for (const auto& m : c.models) {
    std::vector<std::string> names = m.companion_text_encoders;
    if (!m.companion_vae.empty()) names.push_back(m.companion_vae);
    if (!m.companion_clip_vision.empty()) names.push_back(m.companion_clip_vision);
    for (const auto& n : names) {
      bool found = std::any_of(c.models.begin(), c.models.end(), [&](const ModelInfo& o) { return o.name == n; });
      if (!found) throw Error(models_file + ": " + m.name + " names companion '" + n + "' that is not in the catalog");
    }
  }
  if (c.models.empty()) throw Error(models_file + ": 'models' is empty");
  c.model_keys = build_keys(c.models);
  c.precision_keys = build_keys(c.precisions);
  c.gpu_keys = build_keys(c.gpus);
  return c;
}

// Name or alias equal to `text` after normalising both (canonical spellings hit without normalising).
template <typename T>
const T* exact_match(const std::vector<T>& items, const std::unordered_map<std::string, std::size_t>& keys,
                     const std::string& text) {
  auto it = keys.find(text);
  if (it == keys.end()) it = keys.find(normalise(text));
  return it == keys.end() ? nullptr : &items[it->second];
}

// Letters and digits only, so that "rtx40" finds "RTX 4090 24GB".
std::string squash(const std::string& s) {
  std::string out;
  for (char c : lower(s))
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  return out;
}

// Items whose name or an alias contains the text (used for "4090", "H100", "kontext").
template <typename T>
std::vector<const T*> substring_matches(const std::vector<T>& items, const std::string& text) {
  std::vector<const T*> out;
  std::string key = squash(text);
  if (key.empty()) return out;
  for (const auto& item : items) {
    bool hit = squash(item.name).find(key) != std::string::npos;
    for (const auto& a : item.aliases) hit = hit || squash(a).find(key) != std::string::npos;
    if (hit) out.push_back(&item);
  }
  return out;
}

template <typename T>
std::string join_names(const std::vector<const T*>& items) {
  std::string out;
  for (const auto* i : items) out += (out.empty() ? "" : ", ") + i->name;
  return out;
}

template <typename T>
std::string close_names(const std::vector<T>& items, const std::string& text) {
  std::string key = normalise(text);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& item : items) {
    std::size_t best = edit_distance(key, normalise(item.name));
    for (const auto& a : item.aliases) best = std::min(best, edit_distance(key, normalise(a)));
    scored.emplace_back(best, item.name);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out += (i ? ", " : "") + scored[i].second;
  return out;
}

template <typename T>
std::string all_names(const std::vector<T>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i.name;
  return out;
}

}  // namespace

const char* role_name(Role role) {
  switch (role) {
    case Role::DiffusionModel: return "diffusion_model";
    case Role::TextEncoder: return "text_encoder";
    case Role::ClipVision: return "clip_vision";
    case Role::Vae: return "vae";
  }
  return "unknown";
}

std::uint64_t PrecisionInfo::bytes_for(std::uint64_t elements) const {
  std::uint64_t blocks = (elements + static_cast<std::uint64_t>(elems_per_block) - 1) / elems_per_block;
  return blocks * static_cast<std::uint64_t>(bytes_per_block);
}

const Catalog& catalog_data() {
  static std::once_flag once;
  static Catalog cat;
  std::call_once(once, [] { cat = load(); });
  return cat;
}

const ModelInfo* find_model(const std::string& text) {
  const auto& c = catalog_data();
  if (const auto* m = exact_match(c.models, c.model_keys, text)) return m;
  if (auto name = model_from_file_name(text)) return exact_match(c.models, c.model_keys, *name);
  auto subs = substring_matches(c.models, text);
  if (subs.size() == 1) return subs[0];
  return nullptr;
}

const ModelInfo& resolve_model(const std::string& text, const std::string& field) {
  const auto& c = catalog_data();
  if (auto it = c.model_keys.find(text); it != c.model_keys.end()) return c.models[it->second];
  if (normalise(text).empty()) throw InputError(field, "is empty; expected a model name such as " + c.models.front().name + " (see `headroom models`)");
  if (const auto* m = find_model(text)) return *m;
  auto subs = substring_matches(c.models, text);
  if (subs.size() > 1)
    throw InputError(field, "'" + text + "' matches several models: " + join_names(subs) + "; give the full name");
  throw InputError(field, "unknown model '" + text + "'; closest: " + close_names(c.models, text) +
                              ". Known models: " + all_names(c.models));
}

const PrecisionInfo* find_precision(const std::string& text) {
  const auto& c = catalog_data();
  if (const auto* p = exact_match(c.precisions, c.precision_keys, text)) return p;
  // "gguf-Q4_K_M" and "Q8_0" spelt with a gguf prefix or none.
  std::string key = normalise(text);
  if (key.rfind("gguf-", 0) == 0) return exact_match(c.precisions, c.precision_keys, key.substr(5));
  return nullptr;
}

const PrecisionInfo& resolve_precision(const std::string& text, const std::string& field) {
  if (const auto* p = find_precision(text)) return *p;
  const auto& c = catalog_data();
  throw InputError(field, "unknown precision '" + text + "'; closest: " + close_names(c.precisions, text) +
                              ". Known precisions: " + all_names(c.precisions));
}

const PrecisionInfo* precision_by_ggml_type(int ggml_type) {
  for (const auto& p : catalog_data().precisions)
    if (p.ggml_type == ggml_type && ggml_type >= 0) return &p;
  return nullptr;
}

const GpuInfo& resolve_gpu(const std::string& text, const std::string& field) {
  const auto& c = catalog_data();
  if (auto it = c.gpu_keys.find(text); it != c.gpu_keys.end()) return c.gpus[it->second];
  if (normalise(text).empty()) throw InputError(field, "is empty; expected a GPU name such as 4090 or H100");
  if (const auto* g = exact_match(c.gpus, c.gpu_keys, text)) return *g;
  auto subs = substring_matches(c.gpus, text);
  if (subs.size() == 1) return *subs[0];
  if (subs.size() > 1)
    throw InputError(field, "'" + text + "' matches several GPUs: " + join_names(subs) +
                                "; give more of the name, or --vram GIB");
  throw InputError(field, "unknown GPU '" + text + "'; closest: " + close_names(c.gpus, text) +
                              ". Known GPUs: " + all_names(c.gpus) + ". Or give the memory with --vram GIB");
}

const ModelInfo* vae_with_decoder(DecoderKind kind) {
  for (const auto& m : catalog_data().models)
    if (m.vae && m.vae->decoder == kind && kind != DecoderKind::None) return &m;
  return nullptr;
}

void check_precision_for_role(const ModelInfo& model, const PrecisionInfo& precision, const std::string& field) {
  bool ok = true;
  std::string allowed;
  switch (model.role) {
    case Role::DiffusionModel:
    case Role::TextEncoder: break;
    case Role::ClipVision:
      ok = precision.kind != "gguf";
      allowed = "fp32, bf16, fp16 or fp8";
      break;
    case Role::Vae:
      ok = precision.kind == "float";
      allowed = "fp32, bf16 or fp16";
      break;
  }
  if (!ok)
    throw InputError(field, precision.name + " is not available for " + model.name + " (a " + role_name(model.role) +
                                "); use " + allowed);
}

std::uint64_t weight_bytes(const ModelInfo& model, const PrecisionInfo& precision) {
  return precision.bytes_for(model.params);
}

double runtime_constant(std::string_view key) {
  const Catalog& c = catalog_data();
  if (auto it = c.runtime_values.find(key); it != c.runtime_values.end()) return it->second;
  if (!c.runtime->contains(key)) throw Error("models.json runtime: missing '" + std::string(key) + "'");
  throw Error("models.json runtime: '" + std::string(key) + "' has no numeric value");
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  throw Error("unknown compute dtype '" + dtype + "'");
}

}  // namespace headroom
