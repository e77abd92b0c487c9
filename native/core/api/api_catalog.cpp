// api::catalog() and api::estimate(): the catalog as JSON and an estimate from a JSON request.
#include <cctype>
#include <cmath>
#include <set>

#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/catalog/catalog.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/estimate/estimator.hpp"
#include "core/base/units.hpp"

namespace headroom::api {
namespace {

const std::set<std::string>& known_fields() {
  static const std::set<std::string> k = {
      "model", "precision", "text_encoder_precision", "vae_precision", "clip_vision_precision",
      "width", "height", "frames", "batch", "cfg", "reference_images", "gpu", "vram_bytes", "vram", "free_bytes",
      "decode_mode", "decode_tile_px", "blocks_swapped", "text_encoder_on_cpu", "lora_bytes",
      "windows", "reserve_bytes", "allow_lowvram", "fp8_compute", "runtime", "vram_headroom_bytes", "ram_bytes"};
  return k;
}

std::string get_string(const json& r, const char* key) {
  const json& v = r[key];
  if (!v.is_string()) throw InputError(key, "expected a string, got " + json_preview(v));
  return v.get<std::string>();
}

long long get_int(const json& r, const char* key, long long lo, long long hi) {
  const json& v = r[key];
  if (!v.is_number()) throw InputError(key, "expected a whole number, got " + json_preview(v));
  double d = v.get<double>();
  if (!(d == std::floor(d)) || d < static_cast<double>(lo) || d > static_cast<double>(hi))
    throw InputError(key, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                              ", got " + json_preview(v));
  return static_cast<long long>(d);
}

double get_number(const json& r, const char* key) {
  const json& v = r[key];
  if (!v.is_number()) throw InputError(key, "expected a number, got " + json_preview(v));
  return v.get<double>();
}

bool get_bool(const json& r, const char* key) {
  const json& v = r[key];
  if (!v.is_boolean()) throw InputError(key, "expected true or false, got " + json_preview(v));
  return v.get<bool>();
}

std::string normalised_name(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(c == '_' || c == ' ' ? '-' : std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Sets the precision of `c` after checking it suits the model (field names the request key).
void set_precision(Component& c, const std::string& text, const std::string& field) {
  const PrecisionInfo& p = resolve_precision(text, field);
  check_precision_for_role(resolve_model(c.model, "model"), p, field);
  c.precision = p.name;
}

}  // namespace

json catalog() {
  const Catalog& c = catalog_data();
  json out;
  out["models"] = json::array();
  for (const auto& m : c.models) {
    const PrecisionInfo& p = resolve_precision(m.default_precision, "default_precision");
    json j = {{"name", m.name},
              {"role", role_name(m.role)},
              {"family", m.family},
              {"variant", m.variant},
              {"aliases", m.aliases},
              {"params", m.params},
              {"default_precision", m.default_precision},
              {"default_weight_bytes", weight_bytes(m, p)},
              {"experts", m.experts}};
    json comp = json::object();
    if (!m.companion_text_encoders.empty()) comp["text_encoders"] = m.companion_text_encoders;
    if (!m.companion_vae.empty()) comp["vae"] = m.companion_vae;
    if (!m.companion_clip_vision.empty()) comp["clip_vision"] = m.companion_clip_vision;
    j["companions"] = comp;
    if (m.data->contains("defaults")) j["defaults"] = (*m.data)["defaults"];
    out["models"].push_back(j);
  }
  out["precisions"] = json::array();
  for (const auto& p : c.precisions) {
    json j = {{"name", p.name},
              {"aliases", p.aliases},
              {"kind", p.kind},
              {"bits_per_weight", p.bits_per_weight()},
              {"elems_per_block", p.elems_per_block},
              {"bytes_per_block", p.bytes_per_block}};
    j["ggml_type"] = p.ggml_type >= 0 ? json(p.ggml_type) : json(nullptr);
    out["precisions"].push_back(j);
  }
  out["runtime"] = c.runtime ? *c.runtime : json::object();  // constants with sources, for the Python nodes
  out["gpus"] = json::array();
  for (const auto& g : c.gpus) {
    out["gpus"].push_back({{"name", g.name},
                           {"aliases", g.aliases},
                           {"memory_bytes", g.memory_bytes},
                           {"memory_gb", g.memory_gb},
                           {"price_eur_per_hour", g.price_eur_per_hour ? json(*g.price_eur_per_hour) : json(nullptr)},
                           {"fp8_compute", g.fp8_compute ? json(*g.fp8_compute) : json(nullptr)}});
  }
  out["presets"] = json::array();
  try {
    const json& presets = data_file("presets.json");
    if (presets.contains("presets")) out["presets"] = presets["presets"];
  } catch (const Error&) {
    // presets.json is optional for the catalog listing
  }
  return out;
}

json estimate(const json& request) {
  if (!request.is_object()) throw InputError("request", "expected a JSON object such as {\"model\": \"flux1-dev\"}");
  for (const auto& kv : request.items())
    if (!known_fields().count(kv.key())) {
      std::string known;
      for (const auto& k : known_fields()) known += (known.empty() ? "" : ", ") + k;
      throw InputError(kv.key(), "unknown field; an estimate request takes: " + known);
    }
  if (!request.contains("model")) throw InputError("model", "is required (a catalog name such as flux1-dev; see `headroom models`)");
  Job job = default_job(get_string(request, "model"));
  const ModelInfo& named = resolve_model(get_string(request, "model"), "model");

  if (request.contains("precision")) {
    const std::string p = get_string(request, "precision");
    switch (named.role) {
      case Role::DiffusionModel: set_precision(*job.diffusion, p, "precision"); break;
      case Role::TextEncoder: set_precision(job.text_encoders.front(), p, "precision"); break;
      case Role::ClipVision: set_precision(*job.clip_vision, p, "precision"); break;
      case Role::Vae: set_precision(*job.vae, p, "precision"); break;
    }
  }
  else if (auto guessed = precision_from_file_name(get_string(request, "model")); guessed && named.name != normalised_name(get_string(request, "model"))) {
    // A file name such as flux1-dev-fp8.safetensors names the precision too.
    Component* c = named.role == Role::DiffusionModel ? &*job.diffusion
                   : named.role == Role::TextEncoder  ? &job.text_encoders.front()
                   : named.role == Role::ClipVision   ? &*job.clip_vision
                                                      : &*job.vae;
    const PrecisionInfo& p = resolve_precision(*guessed, "model");
    if (named.role != Role::Vae || p.kind == "float") {
      c->precision = p.name;
      job.notes.push_back("precision " + p.name + " taken from the name '" + get_string(request, "model") + "'");
    }
  }
  if (request.contains("text_encoder_precision")) {
    const std::string p = get_string(request, "text_encoder_precision");
    if (job.text_encoders.empty())
      throw InputError("text_encoder_precision", named.name + " uses no text encoder");
    // The setting targets the big T5-family encoder; CLIP-L (0.25 GB) keeps its default.
    bool any = false;
    for (auto& t : job.text_encoders)
      if (resolve_model(t.model).family == "t5_encoder" || job.text_encoders.size() == 1) {
        set_precision(t, p, "text_encoder_precision");
        any = true;
      }
    if (!any) set_precision(job.text_encoders.back(), p, "text_encoder_precision");
  }
  if (request.contains("vae_precision")) {
    if (!job.vae) throw InputError("vae_precision", named.name + " uses no VAE");
    set_precision(*job.vae, get_string(request, "vae_precision"), "vae_precision");
  }
  if (request.contains("clip_vision_precision")) {
    if (!job.clip_vision) throw InputError("clip_vision_precision", named.name + " uses no CLIP vision model");
    set_precision(*job.clip_vision, get_string(request, "clip_vision_precision"), "clip_vision_precision");
  }
  if (request.contains("width")) job.width = static_cast<int>(get_int(request, "width", 16, 16384));
  if (request.contains("height")) job.height = static_cast<int>(get_int(request, "height", 16, 16384));
  if (request.contains("frames")) job.frames = static_cast<int>(get_int(request, "frames", 1, 10001));
  if (request.contains("batch")) job.batch = static_cast<int>(get_int(request, "batch", 1, 1024));
  if (request.contains("cfg")) {
    job.cfg = get_number(request, "cfg");
    if (!(job.cfg >= 0 && job.cfg <= 100)) throw InputError("cfg", "expected a CFG scale from 0 to 100");
  }
  if (request.contains("reference_images"))
    job.reference_images = static_cast<int>(get_int(request, "reference_images", 0, 16));
  if (request.contains("decode_mode")) {
    const std::string m = get_string(request, "decode_mode");
    if (m == "full") job.decode_mode = DecodeMode::Full;
    else if (m == "tiled") job.decode_mode = DecodeMode::Tiled;
    else if (m == "headroom") job.decode_mode = DecodeMode::Headroom;
    else throw InputError("decode_mode", "expected full, tiled or headroom, got '" + m + "'");
  }
  if (request.contains("decode_tile_px")) {
    job.decode_tile_px = static_cast<int>(get_int(request, "decode_tile_px", 0, 16384));
    if (job.decode_tile_px != 0 && job.decode_tile_px < 64)
      throw InputError("decode_tile_px", "expected 0 (choose) or a tile edge of at least 64 px");
  }
  if (request.contains("blocks_swapped")) job.blocks_swapped = static_cast<int>(get_int(request, "blocks_swapped", 0, 1000));
  if (request.contains("text_encoder_on_cpu")) job.text_encoder_on_cpu = get_bool(request, "text_encoder_on_cpu");
  if (request.contains("lora_bytes")) job.lora_bytes = static_cast<std::uint64_t>(get_int(request, "lora_bytes", 0, 1ll << 42));

  Runtime rt;
  json gpu_json = nullptr;
  const int card_fields = request.contains("gpu") + request.contains("vram_bytes") + request.contains("vram");
  if (card_fields > 1) throw InputError("gpu", "give either gpu or vram_bytes (or vram), not both");
  if (request.contains("gpu")) {
    const GpuInfo& g = resolve_gpu(get_string(request, "gpu"), "gpu");
    rt.vram_bytes = g.memory_bytes;
    if (g.fp8_compute) rt.fp8_compute = *g.fp8_compute ? 1 : 0;
    apply_gpu_rates(g, rt);
    gpu_json = {{"name", g.name}, {"memory_bytes", g.memory_bytes},
                {"price_eur_per_hour", g.price_eur_per_hour ? json(*g.price_eur_per_hour) : json(nullptr)},
                {"fp8_compute", g.fp8_compute ? json(*g.fp8_compute) : json(nullptr)}};
  }
  if (request.contains("vram_bytes")) {
    rt.vram_bytes = static_cast<std::uint64_t>(get_int(request, "vram_bytes", 0, static_cast<long long>(kMaxMemoryBytes)));
    if (rt.vram_bytes != 0 && rt.vram_bytes < 256 * MiB)
      throw InputError("vram_bytes", "a card smaller than 256 MiB cannot run ComfyUI; give bytes (24 GiB = 25769803776)");
  }
  if (request.contains("vram")) {
    rt.vram_bytes = request["vram"].is_string() ? parse_size(get_string(request, "vram"), "vram", GiB)
                                                : static_cast<std::uint64_t>(get_number(request, "vram") * GiB);
    if (rt.vram_bytes < 256 * MiB) throw InputError("vram", "a card smaller than 256 MiB cannot run ComfyUI");
  }
  if (request.contains("free_bytes")) {
    rt.free_bytes = static_cast<std::uint64_t>(get_int(request, "free_bytes", 1, static_cast<long long>(kMaxMemoryBytes)));
    if (rt.vram_bytes && rt.free_bytes > rt.vram_bytes)
      throw InputError("free_bytes", "is more than the card's memory (" + std::to_string(rt.vram_bytes) + " bytes)");
  }
  if (request.contains("windows")) rt.windows = get_bool(request, "windows");
  if (request.contains("reserve_bytes")) rt.reserve_bytes = static_cast<std::uint64_t>(get_int(request, "reserve_bytes", 0, 1ll << 40));
  if (request.contains("allow_lowvram")) rt.allow_lowvram = get_bool(request, "allow_lowvram");
  if (request.contains("fp8_compute")) rt.fp8_compute = get_bool(request, "fp8_compute") ? 1 : 0;
  apply_runtime_fields(request, rt);

  Estimate est = headroom::estimate(job, rt);
  json out = est.to_json();
  out["job"] = job_to_json(job);
  if (!gpu_json.is_null()) out["gpu"] = gpu_json;
  if (rt.free_bytes) {
    out["budget_bytes"] = rt.free_bytes;
    out["free_bytes"] = rt.free_bytes;
    if (rt.vram_bytes) out["vram_bytes"] = rt.vram_bytes;  // the card's total; the verdict is against free
  } else if (rt.vram_bytes) {
    out["budget_bytes"] = rt.vram_bytes;
  }
  return out;
}

}  // namespace headroom::api
