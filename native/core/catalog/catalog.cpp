#include "core/catalog/catalog.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/load_once.hpp"
#include "core/base/text_distance.hpp"
#include "core/catalog/model_reader.hpp"
#include "core/base/text.hpp"

namespace headroom {
namespace {

using nlohmann::json;

// Spellings compare without case and treat '_' and ' ' like '-': "Wan_T2V 1.3B" == "wan-t2v-1.3b".
std::string normalise(const std::string& s) {
  std::string out = lower_ascii(s);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  std::size_t start = 0;
  while (start < out.size() && std::isspace(static_cast<unsigned char>(out[start]))) ++start;
  out = out.substr(start);
  for (auto& c : out)
    if (c == '_' || c == ' ') c = '-';
  return out;
}

Role parse_role(const JsonFields& entry, const std::string& role) {
  for (Role r : {Role::DiffusionModel, Role::TextEncoder, Role::ClipVision, Role::Vae, Role::AudioEncoder, Role::ModelPatch})
    if (role == role_name(r)) return r;
  entry.fail("role", "expected diffusion_model, text_encoder, clip_vision, vae, audio_encoder or model_patch, got '" + role + "'");
}

PrecisionKind read_precision_kind(const JsonFields& f) {
  const std::string kind = f.text("kind");
  for (PrecisionKind k : {PrecisionKind::Float, PrecisionKind::Fp8, PrecisionKind::ComfyQuant, PrecisionKind::Gguf})
    if (kind == precision_kind_name(k)) return k;
  f.fail("kind", "expected float, fp8, comfy_quant or gguf, got '" + kind + "'");
}

// Every spelling of every item -> the item it names. Raw spellings point where their normalised form
// points. A spelling two items share is refused: with first-wins, a copy of an entry added to a data file
// (say with other figures) would silently decide every estimate of that name.
template <typename T>
std::unordered_map<std::string, std::size_t> build_keys(const std::vector<T>& items, const std::string& file,
                                                        const char* what) {
  std::unordered_map<std::string, std::size_t> keys;
  auto add = [&](const std::string& spelling, std::size_t i) {
    auto [at, added] = keys.emplace(normalise(spelling), i);
    if (!added && at->second != i)
      throw Error(file + ": " + what + " '" + items[i].name + "': the spelling '" + spelling + "' already names " + what +
                  " '" + items[at->second].name + "' (names and aliases must each name one " + what + ")");
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    add(items[i].name, i);
    for (const auto& a : items[i].aliases) add(a, i);
  }
  for (const auto& item : items) {
    std::size_t at = keys.at(normalise(item.name));
    keys.emplace(item.name, at);
    for (const auto& a : item.aliases) keys.emplace(a, keys.at(normalise(a)));
  }
  return keys;
}

std::vector<FilePattern> file_patterns_of(const JsonFields& entry) {
  if (!entry.has("file_patterns")) return {};
  return read_file_patterns(entry.array("file_patterns"), "file_patterns",
                            [&](const std::string& key, const std::string& what) { entry.fail(key.c_str(), what); });
}

// The inspector reads "recognise" as it stands (inspect/inspector.cpp): its shape is checked here, so a
// mistyped key list or shape is an error at load instead of a model that is quietly never recognised.
void check_recognise(const JsonFields& entry, const json& m) {
  const auto rec = entry.optional_object("recognise");
  if (!rec) return;
  for (const char* key : {"prefixes", "all_keys", "absent_keys", "same_architecture_as"})
    if (rec->has(key)) rec->texts(key);
  rec->optional_text("source");
  if (!rec->has("all_keys") && !rec->has("shapes")) rec->fail("all_keys", "is missing (expected all_keys or shapes)");
  if (const auto shapes = rec->optional_object("shapes"))
    for (const auto& kv : m.at("recognise").at("shapes").items()) shapes->integers(kv.key().c_str(), {1, 1 << 24});
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
  info.params = f.count("params", {1, 1e13});
  info.default_precision = f.text("default_precision");
  info.compute_dtype = f.optional_text("compute_dtype").value_or("bf16");
  if (auto comp = f.optional_object("companions")) {
    if (comp->has("text_encoders")) info.companion_text_encoders = comp->texts("text_encoders");
    info.companion_vae = comp->optional_text("vae").value_or("");
    info.companion_clip_vision = comp->optional_text("clip_vision").value_or("");
  }
  info.file_patterns = file_patterns_of(f);
  check_recognise(f, m);
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
  info.memory_bytes = f.count("memory_bytes", {256.0 * (1 << 20), 64.0 * (1ull << 40)});
  info.memory_gb = f.optional_number("memory_gb", {0.25, 65536}).value_or(0.0);
  info.price_eur_per_hour = f.optional_number("price_eur_per_hour", {0, 1e4});
  info.fp8_compute = f.optional_flag("fp8_compute");
  info.pcie_gen = f.optional_integer("pcie_gen", {1, 9});
  info.pcie_lanes = f.optional_integer("pcie_lanes", {1, 32});
  info.bf16_tflops = f.optional_number("bf16_tflops", {0.1, 1e6});
  info.vendor = f.optional_text("vendor");
  if (info.vendor && *info.vendor != "nvidia" && *info.vendor != "amd")
    f.fail("vendor", "expected nvidia or amd, got '" + *info.vendor + "'");
  info.compute_capability = f.optional_text("compute_capability");
  return info;
}

// The runtime constants the estimator reads, with the values each can take. The table is the schema of
// models.json "runtime": a constant missing, unknown (a misspelt key would be ignored) or out of range
// is refused at load, never met mid-estimate or used as given.
struct RuntimeConstantSpec {
  const char* key;
  Range range;
  bool whole;
};
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr RuntimeConstantSpec kRuntimeConstants[] = {
    {"pcie_lane_bytes_per_s_gen3", {1e8, 1e11}, false},
    {"pcie_lane_bytes_per_s_gen4", {1e8, 1e11}, false},
    {"pcie_lane_bytes_per_s_gen5", {1e8, 1e11}, false},
    {"pcie_efficiency", {0.05, 1}, false},
    {"gpu_flops_utilisation", {0.01, 1}, false},
    {"aimdo_headroom_bytes", {0, 16 * kGiB}, true},
    {"aimdo_headroom_bytes_windows", {0, 16 * kGiB}, true},
    {"offload_streams", {0, 16}, true},
    {"cuda_context_bytes", {0, 16 * kGiB}, true},
    {"comfy_reserve_bytes_linux", {0, 16 * kGiB}, true},
    {"comfy_reserve_bytes_windows", {0, 16 * kGiB}, true},
    {"comfy_reserve_bytes_windows_16gb_extra", {0, 16 * kGiB}, true},
    {"allocator_overhead_fraction", {0, 2}, false},
    {"min_lowvram_weights_bytes", {0, 64 * kGiB}, true},
    {"max_weights_share", {0.05, 1}, false},
    {"minimum_inference_bytes", {0, 64 * kGiB}, true},
    {"cfg_batch_free_factor", {1, 100}, false},
    {"tight_margin_fraction", {0, 1}, false},
    {"pcie_bytes_per_s", {1e8, 1e13}, false},
    {"gpu_flops_per_s", {1e11, 1e18}, false},
    {"tiled_decode_default_tile_px", {64, 8192}, true},
    {"tiled_decode_default_overlap_px", {0, 1024}, true},
    {"fallback_tile_px_video", {64, 8192}, true},
    {"fallback_tile_px_image", {64, 8192}, true},
    {"tiled_retry_slowdown_image", {1, 100}, false},
    {"tiled_retry_budget_share", {0.05, 1}, false},
    {"pageable_copy_fraction", {0.05, 1}, false},
    {"tiled_retry_slowdown_video", {1, 100}, false},
    {"audio_retry_tile_latents", {8, 1 << 16}, true},
    {"audio_retry_slowdown", {1, 100}, false},
    {"unfinished_run_ram_low_fraction", {0, 1}, false},
    {"calibration_min_runs", {1, 100}, true},
    {"calibration_max_runs", {1, 1000}, true},
    {"calibration_factor_min", {0.1, 1}, false},
    {"calibration_factor_max", {1, 10}, false},
};

std::unordered_map<std::string_view, double> read_runtime_constants(const json& runtime, const std::string& file) {
  std::string known;
  for (const auto& spec : kRuntimeConstants) known += (known.empty() ? "" : ", ") + std::string(spec.key);
  const JsonFields all(runtime, file, "runtime");
  for (auto it = runtime.begin(); it != runtime.end(); ++it) {
    const bool listed = std::any_of(std::begin(kRuntimeConstants), std::end(kRuntimeConstants),
                                    [&](const RuntimeConstantSpec& s) { return it.key() == s.key; });
    if (!listed) all.fail(it.key().c_str(), "is not a runtime constant Headroom reads (expected one of " + known + ")");
  }
  std::unordered_map<std::string_view, double> values;
  for (const auto& spec : kRuntimeConstants) {
    if (!all.has(spec.key)) all.fail(spec.key, "is missing (expected {\"value\": <number>, \"source\": ...})");
    const json& entry = runtime.at(spec.key);
    // Either a bare number or {"value": n, "source": "..."}; the source is for people, the value is checked.
    const double v = entry.is_object() ? all.object(spec.key).number("value", spec.range) : all.number(spec.key, spec.range);
    // The source is shown with the constant (headroom models --json, the nodes' catalog): a text or absent.
    if (entry.is_object()) all.object(spec.key).optional_text("source");
    if (spec.whole && v != std::floor(v)) all.fail(spec.key, "is " + json_preview(json(v)) + "; expected a whole number");
    values.emplace(spec.key, v);
  }
  return values;
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
    info.kind = read_precision_kind(f);
    info.elems_per_block = f.integer("elems_per_block", {1, 4096});
    info.bytes_per_block = f.integer("bytes_per_block", {1, 1 << 16});
    info.ggml_type = f.optional_integer("ggml_type", {0, 1023}).value_or(-1);
    info.native_compute_from = f.optional_number("native_compute_from", {1, 100});
    // Below 1 bit a weight (the smallest GGUF type is 1.56) or above fp64, a format is a typo that would
    // scale every weight byte of the models stored in it.
    if (info.bits_per_weight() < 1 || info.bits_per_weight() > 64)
      f.fail("bytes_per_block", "gives " + std::to_string(info.bits_per_weight()) +
                                    " bits per weight with elems_per_block; expected 1 to 64");
    c.precisions.push_back(std::move(info));
  }
  if (!gpus.contains("gpus") || !gpus["gpus"].is_array()) throw Error(gpus_file + ": no 'gpus' array");
  for (std::size_t i = 0; i < gpus["gpus"].size(); ++i) c.gpus.push_back(read_gpu(gpus["gpus"][i], gpus_file, i));
  if (!models.contains("runtime") || !models["runtime"].is_object()) throw Error(models_file + ": no 'runtime' object");
  c.runtime = &models["runtime"];
  c.runtime_values = read_runtime_constants(*c.runtime, models_file);
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
  c.model_keys = build_keys(c.models, models_file, "model");
  c.precision_keys = build_keys(c.precisions, models_file, "precision");
  c.gpu_keys = build_keys(c.gpus, gpus_file, "gpu");
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
std::vector<std::string> closest_names(const std::vector<T>& items, const std::string& text) {
  std::string key = normalise(text);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& item : items) {
    std::size_t best = edit_distance(key, normalise(item.name));
    for (const auto& a : item.aliases) best = std::min(best, edit_distance(key, normalise(a)));
    scored.emplace_back(best, item.name);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

template <typename T>
std::string close_names(const std::vector<T>& items, const std::string& text) {
  std::string out;
  for (const auto& name : closest_names(items, text)) out += (out.empty() ? "" : ", ") + name;
  return out;
}

template <typename T>
std::string all_names(const std::vector<T>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i.name;
  return out;
}

}  // namespace

const char* precision_kind_name(PrecisionKind kind) {
  switch (kind) {
    case PrecisionKind::Fp8: return "fp8";
    case PrecisionKind::ComfyQuant: return "comfy_quant";
    case PrecisionKind::Gguf: return "gguf";
    case PrecisionKind::Float: break;
  }
  return "float";
}

const char* role_name(Role role) {
  switch (role) {
    case Role::DiffusionModel: return "diffusion_model";
    case Role::TextEncoder: return "text_encoder";
    case Role::ClipVision: return "clip_vision";
    case Role::Vae: return "vae";
    case Role::AudioEncoder: return "audio_encoder";
    case Role::ModelPatch: return "model_patch";
  }
  return "unknown";
}

std::uint64_t PrecisionInfo::bytes_for(std::uint64_t elements) const {
  std::uint64_t blocks = (elements + static_cast<std::uint64_t>(elems_per_block) - 1) / elems_per_block;
  return blocks * static_cast<std::uint64_t>(bytes_per_block);
}

const Catalog& catalog_data() {
  static LoadOnce<Catalog> cat;
  return cat.get(load);
}

const ModelInfo* find_model(const std::string& text) {
  const auto& c = catalog_data();
  if (const auto* m = exact_match(c.models, c.model_keys, text)) return m;
  if (const ModelInfo* m = model_from_file_name(text)) return m;
  auto subs = substring_matches(c.models, text);
  if (subs.size() == 1) return subs[0];
  return nullptr;
}

std::vector<const ModelInfo*> models_named(const std::string& text) {
  if (const ModelInfo* m = find_model(text)) return {m};
  return substring_matches(catalog_data().models, text);
}

const ModelInfo& resolve_model(const std::string& text, const std::string& field) {
  const auto& c = catalog_data();
  if (auto it = c.model_keys.find(text); it != c.model_keys.end()) return c.models[it->second];
  if (normalise(text).empty()) throw InputError(field, "is empty; expected a model name such as " + c.models.front().name + " (see `headroom models`)");
  if (const auto* m = find_model(text)) return *m;
  auto subs = substring_matches(c.models, text);
  if (subs.size() > 1)
    throw InputError(field, "'" + text_preview(text) + "' matches several models: " + join_names(subs) + "; give the full name");
  // The catalog has over a hundred models: naming them all buries the three that are close.
  throw InputError(field, "unknown model '" + text_preview(text) + "'; closest: " + close_names(c.models, text) +
                              "; `headroom models` lists all " + std::to_string(c.models.size()) + " known models");
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
  throw InputError(field, "unknown precision '" + text_preview(text) + "'; closest: " + close_names(c.precisions, text) +
                              ". Known precisions: " + all_names(c.precisions));
}

const PrecisionInfo* precision_by_ggml_type(int ggml_type) {
  for (const auto& p : catalog_data().precisions)
    if (p.ggml_type == ggml_type && ggml_type >= 0) return &p;
  return nullptr;
}

GpuLookup look_up_gpu(const std::string& text) {
  const auto& c = catalog_data();
  GpuLookup out;
  if (auto it = c.gpu_keys.find(text); it != c.gpu_keys.end()) return {&c.gpus[it->second], {}, {}};
  if (normalise(text).empty()) return out;
  if (const auto* g = exact_match(c.gpus, c.gpu_keys, text)) return {g, {}, {}};
  auto subs = substring_matches(c.gpus, text);
  if (subs.size() == 1) return {subs[0], {}, {}};
  for (const auto* g : subs) out.matches.push_back(g->name);
  if (subs.empty()) out.closest = closest_names(c.gpus, text);
  return out;
}

const GpuInfo& resolve_gpu(const std::string& text, const std::string& field) {
  const auto& c = catalog_data();
  const GpuLookup found = look_up_gpu(text);
  if (found.gpu) return *found.gpu;
  if (normalise(text).empty()) throw InputError(field, "is empty; expected a GPU name such as 4090 or H100");
  if (!found.matches.empty())
    throw InputError(field, "'" + text_preview(text) + "' matches several GPUs: " + join_names(substring_matches(c.gpus, text)) +
                                "; give more of the name, or --vram GIB");
  throw InputError(field, "unknown GPU '" + text_preview(text) + "'; closest: " + close_names(c.gpus, text) +
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
    case Role::AudioEncoder:
    case Role::ModelPatch:
      ok = precision.kind != PrecisionKind::Gguf;
      allowed = "fp32, bf16, fp16 or fp8";
      break;
    case Role::Vae: {
      const auto& q = model.released_quantized;
      ok = precision.kind == PrecisionKind::Float || std::find(q.begin(), q.end(), precision.name) != q.end();
      allowed = "fp32, bf16 or fp16";
      for (const auto& name : q) allowed += ", " + name;
      break;
    }
  }
  if (!ok)
    throw InputError(field, precision.name + " is not available for " + model.name + " (a " + role_name(model.role) +
                                "); use " + allowed);
}

std::uint64_t weight_bytes(const ModelInfo& model, const PrecisionInfo& precision) {
  const std::uint64_t keep = precision.quantised() && precision.bits_per_weight() < 16 ? model.unquantised_params : 0;
  return precision.bytes_for(model.params - keep) + keep * 2;
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
