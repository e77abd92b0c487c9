// api::recognise: which catalog model and precision something is, through the one recogniser
// (core/inspect/recognise.hpp), from exactly one of:
//   tensors      {name: {dtype, shape}}: a state dict as ComfyUI holds it after loading a file whose path
//                we do not know; the same answer as `inspect` gives for the file;
//   file_name    a loader's file name, with an optional role (diffusion, checkpoint, text_encoder, vae,
//                clip_vision; without one, the first role that recognises it);
//   comfy_config {config_class, dim, in_channels}: a loaded MODEL's ComfyUI config;
//   vae_keys     the key names of a VAE state dict: its native decoder family (vae_key_rules);
//   gpu          a typed card name: the catalog's card, or what it could mean (the nodes' settings word
//                the answer for the UI; the CLI's resolve_gpu words it for its flags).
#include <algorithm>
#include <map>
#include <set>

#include "core/api/api.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/inspector.hpp"
#include "core/inspect/recognise.hpp"
#include "core/base/json_reader.hpp"

namespace headroom::api {
namespace {

// Bytes per element of the dtypes a loaded state dict can hold, in the catalog's spelling.
const std::map<std::string, std::uint64_t>& element_bytes() {
  static const std::map<std::string, std::uint64_t> t = {
      {"fp64", 8}, {"fp32", 4}, {"fp16", 2}, {"bf16", 2}, {"fp8_e4m3fn", 1}, {"fp8_e5m2", 1},
      {"int64", 8}, {"int32", 4}, {"int16", 2}, {"int8", 1}, {"uint8", 1}, {"bool", 1}};
  return t;
}

// A state dict has at most a few thousand tensors; the cap keeps a hostile request from costing more.
constexpr std::size_t kMaxTensors = 200000;
constexpr std::size_t kMaxRank = 8;

// A dtype as torch spells it ("torch.bfloat16", "float16") or the catalog does ("bf16"), in the catalog's spelling.
std::string canonical_dtype(std::string d) {
  if (d.rfind("torch.", 0) == 0) d = d.substr(6);
  if (element_bytes().count(d)) return d;
  if (const PrecisionInfo* p = find_precision(d); p && element_bytes().count(p->name)) return p->name;
  return d;
}

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json from_file_name(const json& request) {
  const json& f = request["file_name"];
  if (!f.is_string() || f.get<std::string>().empty() || f.get<std::string>().size() > 4096)
    throw InputError("file_name", "expected a file name such as \"flux1-dev-fp8.safetensors\", got " + json_preview(f));
  static const std::vector<std::string> roles = {"diffusion", "checkpoint", "text_encoder", "vae", "clip_vision"};
  std::vector<std::string> tried = roles;
  if (request.contains("role")) {
    const json& r = request["role"];
    if (!r.is_string() || std::find(roles.begin(), roles.end(), r.get<std::string>()) == roles.end())
      throw InputError("role", "expected diffusion, checkpoint, text_encoder, vae or clip_vision, got " + json_preview(r));
    tried = {r.get<std::string>()};
  }
  NameRecognition best;
  std::string role;
  for (const auto& r : tried) {
    NameRecognition g = recognise_file_name(f.get<std::string>(), r);
    if (role.empty() || (!g.model.empty() && best.model.empty())) best = g, role = r;
    if (!g.model.empty()) break;
  }
  return {{"from", "file_name"}, {"model", or_null(best.model)}, {"role", best.model.empty() ? json(nullptr) : json(role)},
          {"precision", or_null(best.precision)}, {"notes", best.notes}};
}

json from_comfy_config(const json& c) {
  if (!c.is_object()) throw InputError("comfy_config", "expected {config_class, dim, in_channels}, got " + json_preview(c));
  for (const auto& kv : c.items())
    if (kv.key() != "config_class" && kv.key() != "dim" && kv.key() != "in_channels")
      throw InputError("comfy_config." + kv.key(), "unknown field; comfy_config takes config_class, dim, in_channels");
  ComfyModelConfig config;
  if (!c.contains("config_class") || !c["config_class"].is_string())
    throw InputError("comfy_config.config_class", "expected the ComfyUI model-config class name such as \"Flux\", got " +
                                                     json_preview(c.value("config_class", json(nullptr))));
  config.config_class = c["config_class"].get<std::string>();
  for (const char* key : {"dim", "in_channels"}) {
    if (!c.contains(key) || c[key].is_null()) continue;
    if (!c[key].is_number_integer() || c[key].get<long long>() < 0 || c[key].get<long long>() > (1ll << 30))
      throw InputError(std::string("comfy_config.") + key, "expected a whole number from 0 to 2^30 or null, got " +
                                                             json_preview(c[key]));
    (std::string(key) == "dim" ? config.dim : config.in_channels) = c[key].get<long long>();
  }
  return {{"from", "comfy_config"}, {"model", or_null(recognise_comfy_config(config))}};
}

// A VAE state dict has a few hundred keys; the cap is the tensors cap.
json from_vae_keys(const json& keys) {
  if (!keys.is_array() || keys.empty() || keys.size() > kMaxTensors)
    throw InputError("vae_keys", "expected an array of 1 to " + std::to_string(kMaxTensors) +
                                     " state-dict key names, got " + json_preview(keys));
  std::set<std::string> names;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!keys[i].is_string())
      throw InputError("vae_keys[" + std::to_string(i) + "]", "expected a key name, got " + json_preview(keys[i]));
    names.insert(keys[i].get<std::string>());
  }
  const std::string family = vae_decoder_family([&names](const std::string& k) { return names.count(k) > 0; });
  return {{"from", "vae_keys"}, {"vae_family", or_null(family)}};
}

json from_gpu(const json& g) {
  if (!g.is_string() || g.get<std::string>().size() > 200)
    throw InputError("gpu", "expected a GPU name of up to 200 characters such as \"RTX 4090 24GB\", got " + json_preview(g));
  const GpuLookup found = look_up_gpu(g.get<std::string>());
  if (found.gpu)
    return {{"from", "gpu"}, {"gpu", found.gpu->name}, {"memory_bytes", found.gpu->memory_bytes},
            {"matches", json::array()}, {"closest", json::array()}};
  return {{"from", "gpu"}, {"gpu", nullptr}, {"memory_bytes", nullptr}, {"matches", found.matches},
          {"closest", found.closest}};
}

}  // namespace

const request::Fields& recognise_fields() {
  using request::Kind;
  static const request::Fields f = {
      {"tensors", Kind::Object, "{name: {dtype, shape}} of a state dict"},
      {"file_name", Kind::String, "a loader's file name, e.g. flux1-dev-fp8.safetensors"},
      {"role", Kind::Enum, "with file_name: the loader's role", 0, 0, "diffusion|checkpoint|text_encoder|vae|clip_vision"},
      {"comfy_config", Kind::Object, "{config_class, dim, in_channels} of a loaded ComfyUI model"},
      {"vae_keys", Kind::List, "the key names of a VAE state dict: its native decoder family"},
      {"gpu", Kind::String, "a typed GPU name, e.g. RTX 4090 24GB: the catalog's card or the closest names"},
  };
  return f;
}

json recognise(const json& body) {
  const request::Request checked(body, "recognise", recognise_fields());
  const json& request = body;
  const int given = request.contains("tensors") + request.contains("file_name") + request.contains("comfy_config") +
                    request.contains("vae_keys") + request.contains("gpu");
  if (given == 0) throw InputError("tensors", "give one of tensors, file_name, comfy_config, vae_keys and gpu");
  if (given > 1) throw InputError("request", "give one of tensors, file_name, comfy_config, vae_keys and gpu, not several");
  if (request.contains("role") && !request.contains("file_name"))
    throw InputError("role", "is read only with file_name");
  if (request.contains("gpu")) return from_gpu(request["gpu"]);
  if (request.contains("file_name")) return from_file_name(request);
  if (request.contains("comfy_config")) return from_comfy_config(request["comfy_config"]);
  if (request.contains("vae_keys")) return from_vae_keys(request["vae_keys"]);
  auto it = request.find("tensors");
  if (it == request.end() || !it->is_object() || it->empty())
    throw InputError("tensors", "expected an object {name: {dtype, shape}} with at least one tensor");
  if (it->size() > kMaxTensors)
    throw InputError("tensors", "expected at most " + std::to_string(kMaxTensors) + " tensors, got " +
                                    std::to_string(it->size()));
  ModelFile file;
  file.path = "(state dict)";
  file.format = "state_dict";
  for (const auto& kv : it->items()) {
    const std::string field = "tensors." + kv.key();
    const json& t = kv.value();
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array())
      throw InputError(field, "expected {\"dtype\": \"bf16\", \"shape\": [..]}, got " + json_preview(t));
    TensorRecord r;
    r.name = kv.key();
    r.dtype = canonical_dtype(t["dtype"].get<std::string>());
    auto eb = element_bytes().find(r.dtype);
    if (eb == element_bytes().end())
      throw InputError(field + ".dtype", "expected bf16, fp16, fp32, fp64, fp8_e4m3fn, fp8_e5m2 or an integer type, got " +
                                             json_preview(t["dtype"]));
    if (t["shape"].size() > kMaxRank) throw InputError(field + ".shape", "expected at most 8 dimensions");
    r.elements = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40))
        throw InputError(field + ".shape", "expected sizes from 0 to 2^40, got " + json_preview(d));
      r.shape.push_back(d.get<std::uint64_t>());
      // Checked before the product: [2^40, 2^40] would wrap to 0 elements after it.
      if (r.shape.back() != 0 && r.elements > (1ull << 40) / r.shape.back())
        throw InputError(field + ".shape", "expected at most 2^40 elements, got the product of " + json_preview(t["shape"]));
      r.elements *= r.shape.back();
    }
    r.bytes = r.elements * eb->second;
    // 2^40 elements of 8 bytes each, so a sum past 2^60 takes over a million such tensors: refused, not wrapped.
    if (file.file_bytes > (1ull << 60) - r.bytes)
      throw InputError("tensors", "add up to more than 2^60 bytes (1 EiB); expected a real state dict");
    file.file_bytes += r.bytes;
    file.tensors.push_back(std::move(r));
  }
  json out = recognise_tensors(file).to_json();
  out.erase("path");
  return out;
}

}  // namespace headroom::api
