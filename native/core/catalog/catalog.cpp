#include "core/catalog/catalog.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/text_distance.hpp"

namespace headroom {
namespace {

using nlohmann::json;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Spellings compare without case and treat '_' and ' ' like '-': "wan2.1_t2v_1.3B" == "wan2.1-t2v-1.3b".
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

// File name without folders and a known extension, lower-case.
std::string file_stem(const std::string& file_name) {
  std::string s = file_name;
  if (auto slash = s.find_last_of("/\\"); slash != std::string::npos) s = s.substr(slash + 1);
  std::string l = lower(s);
  for (const char* ext : {".safetensors", ".gguf", ".pth", ".pt", ".ckpt", ".bin", ".sft"}) {
    std::string e = ext;
    if (l.size() > e.size() && l.compare(l.size() - e.size(), e.size(), e) == 0) return l.substr(0, l.size() - e.size());
  }
  return l;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

Role parse_role(const std::string& name, const std::string& role) {
  if (role == "diffusion_model") return Role::DiffusionModel;
  if (role == "text_encoder") return Role::TextEncoder;
  if (role == "clip_vision") return Role::ClipVision;
  if (role == "vae") return Role::Vae;
  throw Error("models.json: model " + name + " has unknown role '" + role + "'");
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

template <typename T>
T field_or_throw(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw Error(where + ": missing '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw Error(where + ": '" + key + "' has the wrong type: " + e.what());
  }
}

Catalog load() {
  Catalog c;
  const json& models = data_file("models.json");
  const json& gpus = data_file("gpus.json");
  if (!models.contains("models") || !models["models"].is_array()) throw Error("models.json: no 'models' array");
  for (const auto& m : models["models"]) {
    ModelInfo info;
    info.name = field_or_throw<std::string>(m, "name", "models.json entry");
    const std::string where = "models.json model " + info.name;
    info.role = parse_role(info.name, field_or_throw<std::string>(m, "role", where));
    info.family = m.value("family", "");
    info.variant = m.value("variant", "");
    info.aliases = strings(m, "aliases");
    info.params = field_or_throw<std::uint64_t>(m, "params", where);
    info.default_precision = field_or_throw<std::string>(m, "default_precision", where);
    info.compute_dtype = m.value("compute_dtype", "bf16");
    if (m.contains("experts")) info.experts = m["experts"].value("count", 1);
    if (m.contains("companions")) {
      const auto& comp = m["companions"];
      info.companion_text_encoders = strings(comp, "text_encoders");
      info.companion_vae = comp.value("vae", "");
      info.companion_clip_vision = comp.value("clip_vision", "");
    }
    info.data = &m;
    c.models.push_back(std::move(info));
  }
  if (!models.contains("precisions") || !models["precisions"].is_array())
    throw Error("models.json: no 'precisions' array");
  for (const auto& p : models["precisions"]) {
    PrecisionInfo info;
    info.name = field_or_throw<std::string>(p, "name", "models.json precision");
    const std::string where = "models.json precision " + info.name;
    info.aliases = strings(p, "aliases");
    info.kind = field_or_throw<std::string>(p, "kind", where);
    info.elems_per_block = field_or_throw<int>(p, "elems_per_block", where);
    info.bytes_per_block = field_or_throw<int>(p, "bytes_per_block", where);
    info.ggml_type = p.value("ggml_type", -1);
    if (info.elems_per_block <= 0 || info.bytes_per_block <= 0) throw Error(where + ": block sizes must be positive");
    c.precisions.push_back(std::move(info));
  }
  if (!gpus.contains("gpus") || !gpus["gpus"].is_array()) throw Error("gpus.json: no 'gpus' array");
  for (const auto& g : gpus["gpus"]) {
    GpuInfo info;
    info.name = field_or_throw<std::string>(g, "name", "gpus.json entry");
    info.aliases = strings(g, "aliases");
    info.memory_bytes = field_or_throw<std::uint64_t>(g, "memory_bytes", "gpus.json " + info.name);
    info.memory_gb = g.value("memory_gb", 0.0);
    if (g.contains("price_eur_per_hour") && g["price_eur_per_hour"].is_number())
      info.price_eur_per_hour = g["price_eur_per_hour"].get<double>();
    if (g.contains("fp8_compute") && g["fp8_compute"].is_boolean()) info.fp8_compute = g["fp8_compute"].get<bool>();
    c.gpus.push_back(std::move(info));
  }
  if (!models.contains("runtime") || !models["runtime"].is_object()) throw Error("models.json: no 'runtime' object");
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
      if (!found) throw Error("models.json: " + m.name + " names companion '" + n + "' that is not in the catalog");
    }
  }
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

bool pattern_matches(const std::string& stem, const json& pattern, std::size_t* score) {
  if (!pattern.is_array() || pattern.empty()) return false;
  std::size_t total = 0;
  for (const auto& part : pattern) {
    if (!part.is_string()) return false;
    std::string p = part.get<std::string>();
    if (p.empty()) return false;
    if (p[0] == '!') {
      if (stem.find(p.substr(1)) != std::string::npos) return false;
    } else if (p[0] == '=') {
      if (stem != p.substr(1)) return false;
      total += p.size() - 1;
    } else {
      if (stem.find(p) == std::string::npos) return false;
      total += p.size();
    }
  }
  *score = total;
  return true;
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
  if (normalise(text).empty()) throw InputError(field, "is empty; expected a model name such as flux1-dev (see `headroom models`)");
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

std::optional<std::string> model_from_file_name(const std::string& file_name) {
  std::string stem = file_stem(file_name);
  if (stem.empty()) return std::nullopt;
  const ModelInfo* best = nullptr;
  std::size_t best_score = 0;
  for (const auto& m : catalog_data().models) {
    const json& d = *m.data;
    if (!d.contains("file_patterns")) continue;
    for (const auto& pattern : d["file_patterns"]) {
      std::size_t score = 0;
      if (pattern_matches(stem, pattern, &score) && score > best_score) {
        best = &m;
        best_score = score;
      }
    }
  }
  if (!best) return std::nullopt;
  return best->name;
}

std::optional<std::string> precision_from_file_name(const std::string& file_name) {
  std::string stem = file_stem(file_name);
  // Most specific first: "fp8_e4m3fn_scaled" is scaled fp8, not plain e4m3fn.
  struct Rule { const char* needle; const char* precision; };
  static const Rule rules[] = {
      {"fp8_scaled", "fp8_scaled"}, {"e4m3fn_scaled", "fp8_scaled"}, {"fp8_e4m3fn", "fp8_e4m3fn"},
      {"fp8_e5m2", "fp8_e5m2"},     {"e5m2", "fp8_e5m2"},            {"q8_0", "gguf-q8_0"},
      {"q6_k", "gguf-q6_k"},        {"q5_k", "gguf-q5_k"},           {"q5_0", "gguf-q5_0"},
      {"q5_1", "gguf-q5_1"},        {"q4_k", "gguf-q4_k"},           {"q4_0", "gguf-q4_0"},
      {"q4_1", "gguf-q4_1"},        {"q3_k", "gguf-q3_k"},           {"q2_k", "gguf-q2_k"},
      {"fp8", "fp8_e4m3fn"},        {"bf16", "bf16"},                {"fp16", "fp16"},
      {"fp32", "fp32"},
  };
  for (const auto& r : rules)
    if (stem.find(r.needle) != std::string::npos) return std::string(r.precision);
  return std::nullopt;
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
