#include "core/inspect/inspector.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <unordered_map>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/text.hpp"
#include "core/catalog/file_names.hpp"
#include "core/inspect/gguf_header.hpp"
#include "core/inspect/safetensors_header.hpp"

namespace headroom {
namespace {

using nlohmann::json;

std::string canonical_safetensors_dtype(const std::string& d) {
  if (d == "BF16") return "bf16";
  if (d == "F16") return "fp16";
  if (d == "F32") return "fp32";
  if (d == "F64") return "fp64";
  if (d == "F8_E4M3") return "fp8_e4m3fn";  // torch.float8_e4m3fn is what safetensors writes as F8_E4M3
  if (d == "F8_E5M2") return "fp8_e5m2";
  if (d == "F8_E8M0") return "fp8_e8m0fnu";
  return lower_ascii(d);
}

std::string canonical_ggml_type(const GgmlType& t) {
  std::string n = t.name;
  if (n == "f32") return "fp32";
  if (n == "f16") return "fp16";
  if (n == "f64") return "fp64";
  return n;
}

bool is_fp8(const std::string& dtype) { return dtype.rfind("fp8_", 0) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Scale tensors and the marker of scaled-fp8 files (ComfyUI model_detection: "<prefix>scaled_fp8",
// per-layer "scale_weight"/"scale_input"; other writers use "weight_scale"/"input_scale").
bool is_fp8_scale(const std::string& name) {
  return ends_with(name, "scaled_fp8") || ends_with(name, ".scale_weight") || ends_with(name, ".scale_input") ||
         ends_with(name, ".weight_scale") || ends_with(name, ".input_scale") || ends_with(name, ".weight_scale_2") ||
         ends_with(name, ".comfy_quant");
}

// ComfyUI's per-layer quantised files (comfy/quant_ops.py QUANT_ALGOS) name each layer's format in
// the '_quantization_metadata' header entry or mark it with a '<layer>.comfy_quant' tensor (whose JSON
// lies in the data, not the header). The header still tells the formats apart: nvfp4 packs two
// values per uint8 next to an fp32 weight_scale_2; mxfp8 has an e8m0 block scale; int8 an int8
// weight. Returns the weight's precision name ("" for a plain tensor) and its real element count.
using LayerFormats = std::map<std::string, std::string>;
// Tensors of one component by name; the names stay in the ModelFile, so the index copies none.
using ShapeIndex = std::unordered_map<std::string_view, const TensorRecord*>;

ShapeIndex index_of(const std::vector<const TensorRecord*>& tensors) {
  ShapeIndex index;
  index.reserve(tensors.size());
  for (const TensorRecord* t : tensors) index.emplace(t->name, t);
  return index;
}

std::pair<std::string, std::uint64_t> quant_weight(const TensorRecord& t, const ShapeIndex& by_name,
                                                   const LayerFormats& formats) {
  if (!ends_with(t.name, ".weight")) return {"", t.elements};
  const std::string layer = t.name.substr(0, t.name.size() - 7);
  std::string fmt;
  if (auto f = formats.find(layer); f != formats.end()) fmt = f->second;
  auto scale = by_name.find(layer + ".weight_scale");
  const bool marked = !fmt.empty() || by_name.count(layer + ".comfy_quant");
  if (fmt == "nvfp4" || (t.dtype == "u8" && by_name.count(layer + ".weight_scale_2"))) return {"nvfp4", t.elements * 2};
  if (fmt == "mxfp8" || (is_fp8(t.dtype) && scale != by_name.end() && (scale->second->dtype == "fp8_e8m0fnu" || scale->second->dtype == "u8")))
    return {"mxfp8", t.elements};
  if (fmt.rfind("int8", 0) == 0 || (t.dtype == "i8" && (marked || scale != by_name.end()))) return {"int8", t.elements};
  if (is_fp8(t.dtype) && marked) return {"fp8mixed", t.elements};
  return {"", t.elements};
}

LayerFormats layer_formats(const json& metadata) {
  LayerFormats out;
  auto it = metadata.find("_quantization_metadata");
  if (it == metadata.end() || !it->is_string()) return out;
  json q = json::parse(it->get<std::string>(), nullptr, false);
  if (!q.is_object() || !q.contains("layers") || !q["layers"].is_object()) return out;
  for (auto l = q["layers"].begin(); l != q["layers"].end(); ++l)
    if (l->is_object() && l->contains("format") && (*l)["format"].is_string()) {
      std::string f = (*l)["format"].get<std::string>();
      out[l.key()] = f.rfind("float8", 0) == 0 ? "fp8mixed" : f;
    }
  return out;
}

bool is_lora_key(const std::string& name) {
  return name.find("lora_up") != std::string::npos || name.find("lora_down") != std::string::npos ||
         name.find("lora_A.") != std::string::npos || name.find("lora_B.") != std::string::npos ||
         name.rfind("lora_unet_", 0) == 0 || name.rfind("lora_te", 0) == 0 || name.find(".lokr_") != std::string::npos ||
         name.find(".hada_") != std::string::npos;
}

// Key prefixes ComfyUI uses inside single-file checkpoints (comfy/sd.py load_state_dict_guess_config
// and the model_base/supported_models prefixes). Where a prefix is followed by a per-model name
// (text_encoders.clip_l.), that name belongs to the component's prefix.
struct BundlePrefix {
  const char* prefix;
  const char* role;
  bool named_child;
};
constexpr BundlePrefix kBundlePrefixes[] = {
    {"model.diffusion_model.", "diffusion_model", false},
    {"first_stage_model.", "vae", false},
    {"vae.", "vae", false},
    {"cond_stage_model.", "text_encoder", false},
    {"conditioner.embedders.", "text_encoder", true},
    {"text_encoders.", "text_encoder", true},
    {"clip_vision.", "clip_vision", false},
};

// The bundle prefix of a key ("" when none) and its role.
std::pair<std::string, const char*> bundle_prefix(const std::string& name) {
  for (const auto& p : kBundlePrefixes) {
    const std::size_t n = std::strlen(p.prefix);
    if (name.compare(0, n, p.prefix) != 0) continue;
    if (!p.named_child) return {p.prefix, p.role};
    auto dot = name.find('.', n);
    if (dot == std::string::npos) return {p.prefix, p.role};
    return {name.substr(0, dot + 1), p.role};
  }
  return {"", nullptr};
}

const json& catalog_entries(const json& catalog) {
  static const json empty = json::array();
  if (catalog.is_array()) return catalog;
  if (catalog.is_object()) {
    auto it = catalog.find("models");
    if (it != catalog.end() && it->is_array()) return *it;
  }
  return empty;
}

std::vector<std::string> string_list(const json& section, const char* key) {
  std::vector<std::string> out;
  auto it = section.find(key);
  if (it == section.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

struct Match {
  const json* entry = nullptr;
  std::string prefix;
  std::size_t score = 0;
};

bool shape_equals(const TensorRecord& t, const json& want) {
  if (!want.is_array() || want.size() != t.shape.size()) return false;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (!want[i].is_number_unsigned() && !(want[i].is_number_integer() && want[i].get<std::int64_t>() >= 0))
      return false;
    if (want[i].get<std::uint64_t>() != t.shape[i]) return false;
  }
  return true;
}

// Does `entry` describe the tensors in `index` when its keys sit under `prefix`?
// Score: the number of facts checked, so the most specific matching entry wins.
std::size_t match_at(const json& rec, const ShapeIndex& index, const std::string& prefix) {
  std::size_t score = 0;
  for (const auto& k : string_list(rec, "all_keys")) {
    if (!index.count(prefix + k)) return 0;
    ++score;
  }
  for (const char* absent : {"absent_keys", "none_keys"}) {
    for (const auto& k : string_list(rec, absent)) {
      if (index.count(prefix + k)) return 0;
      ++score;
    }
  }
  if (auto shapes = rec.find("shapes"); shapes != rec.end() && shapes->is_object()) {
    for (auto it = shapes->begin(); it != shapes->end(); ++it) {
      auto t = index.find(prefix + it.key());
      if (t == index.end() || !shape_equals(*t->second, *it)) return 0;
      score += 2;
    }
  }
  return score;
}

// The prefixes under which each anchor key occurs: every name ending in it at a '.' boundary, in file
// order, at most 9 per anchor (a key repeated under many prefixes is no anchor). One pass over the
// names for all the catalog's anchors: asking each anchor of each entry of its own walked every name
// once per catalog entry, most of the time spent on a header of many tensors.
using AnchorPrefixes = std::unordered_map<std::string_view, std::vector<std::string>>;

AnchorPrefixes prefixes_of(const std::vector<const TensorRecord*>& tensors, const std::vector<std::string>& anchors) {
  AnchorPrefixes out;
  std::vector<bool> length_used;
  for (const auto& a : anchors) {
    out.emplace(a, std::vector<std::string>{});
    if (length_used.size() <= a.size()) length_used.resize(a.size() + 1, false);
    length_used[a.size()] = true;
  }
  for (const TensorRecord* t : tensors) {
    const std::string_view name = t->name;
    for (std::size_t begin = 0; begin < name.size();) {
      const std::size_t len = name.size() - begin;
      if (len < length_used.size() && length_used[len]) {
        auto it = out.find(name.substr(begin));
        if (it != out.end() && it->second.size() <= 8) {
          std::string p(name.substr(0, begin));
          if (std::find(it->second.begin(), it->second.end(), p) == it->second.end()) it->second.push_back(std::move(p));
        }
      }
      const std::size_t dot = name.find('.', begin);
      if (dot == std::string_view::npos) break;
      begin = dot + 1;
    }
  }
  return out;
}

// The entry's file_patterns through the catalog's reader and matcher. The catalog given here may be a
// caller's own JSON, unchecked: a malformed pattern matches nothing, the others still count.
std::size_t file_name_score(const json& entry, const std::string& stem) {
  auto patterns = entry.find("file_patterns");
  if (patterns == entry.end() || !patterns->is_array()) return 0;
  std::vector<FilePattern> typed;
  for (const auto& pattern : *patterns)
    if (auto p = read_file_pattern(pattern)) typed.push_back(std::move(*p));
  return file_patterns_score(typed, stem);
}

std::vector<Match> recognise(const std::vector<const TensorRecord*>& tensors, const ShapeIndex& index, const json& catalog,
                             const std::string& stem) {
  std::vector<std::pair<const json*, std::string>> anchored;  // entry, its anchor key
  for (const auto& entry : catalog_entries(catalog)) {
    if (!entry.is_object()) continue;
    auto rec = entry.find("recognise");
    if (rec == entry.end() || !rec->is_object()) continue;
    std::string anchor;
    auto keys = string_list(*rec, "all_keys");
    if (!keys.empty()) anchor = keys.front();
    else if (auto s = rec->find("shapes"); s != rec->end() && s->is_object() && !s->empty()) anchor = s->begin().key();
    if (!anchor.empty()) anchored.emplace_back(&entry, std::move(anchor));
  }
  std::vector<std::string> anchors;
  for (const auto& a : anchored) anchors.push_back(a.second);
  const AnchorPrefixes prefixes = prefixes_of(tensors, anchors);
  std::vector<Match> matches;
  for (const auto& [entry_ptr, anchor] : anchored) {
    const json& entry = *entry_ptr;
    const json& rec = entry.at("recognise");
    // models.json lists the usual "prefixes"; any prefix under which the anchor key sits is tried,
    // so bundles with other conventions (cond_stage_model.transformer.) are recognised too. The
    // keys and shapes, not the prefix, decide.
    Match best;
    for (const auto& p : prefixes.at(anchor)) {
      std::size_t score = match_at(rec, index, p);
      if (score > best.score) best = {&entry, p, score};
    }
    if (best.score > 0) matches.push_back(best);
  }
  std::stable_sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) { return a.score > b.score; });
  // Models with one architecture (Flux dev and Kontext, Wan 2.1 and 2.2 T2V 14B, SD1.5 and SDXL
  // VAEs) match equally well: the file name decides, as models.json same_architecture_as says.
  std::size_t ties = 1;
  while (ties < matches.size() && matches[ties].score == matches[0].score) ++ties;
  if (ties > 1) {
    std::size_t best = 0, best_score = file_name_score(*matches[0].entry, stem);
    for (std::size_t i = 1; i < ties; ++i) {
      std::size_t sc = file_name_score(*matches[i].entry, stem);
      if (sc > best_score) best = i, best_score = sc;
    }
    std::rotate(matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(best),
                matches.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return matches;
}

// ComfyUI runs diffusion models, text encoders and CLIP-vision in 16 bit: unet_dtype() picks
// bf16/fp16 and text_encoder_dtype() fp16 (facts/comfyui-internals.md §4.2, §5); a 32-bit file is
// cast on load. VAEs and unknown files are counted as stored.
bool casts_fp32_to_16bit(const std::string& role) {
  return role == "diffusion_model" || role == "text_encoder" || role == "clip_vision" || role == "audio_encoder";
}

// The tensors ComfyUI keeps of a recognised model: models.json `dropped_prefixes` (after the file's own prefix)
// name those its loader discards, such as a whole Whisper checkpoint's decoder.
std::vector<const TensorRecord*> kept_tensors(const std::vector<const TensorRecord*>& tensors, const Match& m) {
  auto dropped = m.entry->find("dropped_prefixes");
  if (dropped == m.entry->end() || !dropped->is_array()) return tensors;
  std::vector<const TensorRecord*> kept;
  for (const TensorRecord* t : tensors) {
    const std::string& name = t->name;
    const bool under = name.compare(0, m.prefix.size(), m.prefix) == 0;
    const std::string rest = under ? name.substr(m.prefix.size()) : name;
    const bool drop = std::any_of(dropped->begin(), dropped->end(), [&](const json& p) {
      return p.is_string() && rest.compare(0, p.get<std::string>().size(), p.get<std::string>()) == 0;
    });
    if (!drop) kept.push_back(t);
  }
  return kept;
}

ModelSummary measure(const std::vector<const TensorRecord*>& tensors, const ShapeIndex& by_name, const std::string& format,
                     const std::string& role, const LayerFormats& formats = {}) {
  ModelSummary c;
  c.role = role;
  bool has_scale = false;
  std::map<std::string, std::uint64_t> weight_elements;  // dtype -> elements of real weights
  for (const TensorRecord* t : tensors) {
    ++c.tensors;
    auto& share = c.dtype_mix[t->dtype];
    ++share.tensors;
    share.bytes += t->bytes;
    c.stored_bytes += t->bytes;
    const bool scale = is_fp8_scale(t->name);
    has_scale = has_scale || scale;
    const auto [quant, elements] = scale ? std::pair<std::string, std::uint64_t>{"", t->elements} : quant_weight(*t, by_name, formats);
    if (!scale) {
      share.parameters += elements;
      c.parameters += elements;
      weight_elements[quant.empty() ? t->dtype : quant] += elements;
    }
    const bool wide = t->dtype == "fp32" || t->dtype == "fp64";
    c.weight_gpu_bytes += (wide && !scale && casts_fp32_to_16bit(role)) ? t->elements * 2 : t->bytes;
    if (t->quantised || is_fp8(t->dtype) || !quant.empty())
      c.dequant_transient_bytes = std::max(c.dequant_transient_bytes, elements * 2);
  }
  // The dtype holding the most weights names the precision, as comfy.utils.weight_dtype() decides.
  std::string dominant;
  std::uint64_t most = 0;
  for (const auto& [dtype, n] : weight_elements)
    if (n > most || dominant.empty()) dominant = dtype, most = n;
  if (format == "gguf") c.precision = dominant.empty() ? "" : "gguf-" + (dominant == "fp16" ? std::string("f16") : dominant == "fp32" ? std::string("f32") : dominant);
  else if (is_fp8(dominant) && has_scale) c.precision = "fp8_scaled";
  else c.precision = dominant;
  return c;
}

void name_from(ModelSummary& c, const std::vector<Match>& matches, const std::string& fallback_prefix) {
  if (matches.empty()) {
    c.key_prefix = fallback_prefix;
    return;
  }
  const Match& best = matches.front();
  c.model = text_of(*best.entry, "name");
  c.family = text_of(*best.entry, "family");
  c.variant = text_of(*best.entry, "variant");
  std::string role = text_of(*best.entry, "role");
  if (!role.empty()) c.role = role;
  c.key_prefix = best.prefix;
  for (std::size_t i = 1; i < matches.size() && matches[i].score == best.score; ++i)
    c.candidates.push_back(text_of(*matches[i].entry, "name"));
}

ModelSummary recognise_component(const std::vector<const TensorRecord*>& tensors, const std::string& format,
                              const std::string& prefix, const std::string& prefix_role, const json& catalog,
                              const std::string& stem, const LayerFormats& formats) {
  const ShapeIndex index = index_of(tensors);
  const bool lora = std::any_of(tensors.begin(), tensors.end(), [](const TensorRecord* t) { return is_lora_key(t->name); });
  auto matches = lora ? std::vector<Match>{} : recognise(tensors, index, catalog, stem);
  std::string role = lora ? "lora" : !prefix_role.empty() ? prefix_role : "unknown";
  if (!matches.empty()) {
    std::string r = text_of(*matches.front().entry, "role");
    if (!r.empty()) role = r;
  }
  ModelSummary c = matches.empty() ? measure(tensors, index, format, role, formats)
                                    : measure(kept_tensors(tensors, matches.front()), index, format, role, formats);
  name_from(c, matches, prefix);
  return c;
}

json dtype_mix_json(const std::map<std::string, DtypeShare>& mix) {
  json out = json::object();
  for (const auto& [dtype, s] : mix) out[dtype] = {{"tensors", s.tensors}, {"parameters", s.parameters}, {"bytes", s.bytes}};
  return out;
}

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// Metadata can hold whole tokenizers and configs; the report keeps it readable.
json trim_metadata(const json& meta) {
  json out = json::object();
  std::size_t n = 0;
  for (auto it = meta.begin(); it != meta.end() && n < 64; ++it, ++n) {
    if (it->is_string() && it->get<std::string>().size() > 200)
      out[it.key()] = it->get<std::string>().substr(0, 200) + "...";
    else
      out[it.key()] = *it;
  }
  if (meta.size() > n) out["..."] = std::to_string(meta.size() - n) + " more keys";
  return out;
}

}  // namespace

ModelFile read_model_file(ByteSource& source) {
  ModelFile f;
  f.path = source.name();
  f.file_bytes = source.size();
  unsigned char magic[4] = {0, 0, 0, 0};
  if (source.size() >= 4) source.read(0, magic, 4, "magic");
  if (std::memcmp(magic, "GGUF", 4) == 0 || ends_with(f.path, ".gguf")) {
    GgufHeader h = read_gguf_header(source);
    f.format = "gguf";
    f.header_bytes = h.header_bytes;
    f.metadata = std::move(h.metadata);
    f.metadata["gguf.version"] = h.version;
    f.tensors.reserve(h.tensors.size());
    for (const auto& t : h.tensors) {
      TensorRecord r;
      r.name = t.name;
      r.dtype = canonical_ggml_type(*t.type);
      r.shape = t.shape();
      r.elements = t.elements;
      r.bytes = t.bytes;
      r.quantised = t.type->block_elements > 1;
      f.tensors.push_back(std::move(r));
    }
    return f;
  }
  if (std::memcmp(magic, "PK\x03\x04", 4) == 0)
    throw FileFormatError(f.path, "this is a zip (PyTorch .ckpt/.pt pickle) file, not safetensors or GGUF; Headroom reads "
                                  "only .safetensors and .gguf headers (convert the file to safetensors)");
  SafetensorsHeader h = read_safetensors_header(source);
  f.format = "safetensors";
  f.header_bytes = 8 + h.header_bytes;
  f.metadata = std::move(h.metadata);
  f.tensors.reserve(h.tensors.size());
  for (auto& t : h.tensors) {
    TensorRecord r;
    r.name = std::move(t.name);
    r.dtype = canonical_safetensors_dtype(t.dtype);
    r.shape = std::move(t.shape);
    r.elements = t.elements;
    r.bytes = t.end - t.begin;
    f.tensors.push_back(std::move(r));
  }
  return f;
}

ModelFile read_model_file(const std::string& path) {
  FileSource source(path);
  return read_model_file(source);
}

Inspection summarise(const ModelFile& file, const json& catalog) {
  Inspection out;
  out.path = file.path;
  out.format = file.format;
  out.file_bytes = file.file_bytes;
  out.header_bytes = file.header_bytes;
  out.metadata = trim_metadata(file.metadata);
  const LayerFormats formats = layer_formats(file.metadata);

  // Group by checkpoint prefix; two or more groups make a bundle.
  std::map<std::string, std::pair<const char*, std::vector<const TensorRecord*>>> groups;
  std::vector<const TensorRecord*> all;
  all.reserve(file.tensors.size());
  for (const auto& t : file.tensors) {
    all.push_back(&t);
    auto [prefix, role] = bundle_prefix(t.name);
    auto& g = groups[prefix];
    g.first = role;
    g.second.push_back(&t);
  }
  if (groups.size() > kMaxBundleComponents)
    throw FileFormatError(file.path, "its tensor names fall under " + std::to_string(groups.size()) +
                                         " checkpoint prefixes (such as '" + std::next(groups.begin())->first.substr(0, 80) +
                                         "'), more than the " + std::to_string(kMaxBundleComponents) +
                                         " parts a checkpoint bundles; its contents and size are left unknown");
  std::size_t prefixed = 0;
  for (const auto& [prefix, g] : groups)
    if (!prefix.empty()) ++prefixed;

  if (prefixed < 2) {
    std::string prefix, role;
    if (groups.size() == 1 && !groups.begin()->first.empty()) {
      prefix = groups.begin()->first;
      role = groups.begin()->second.first;
    }
    out.whole = recognise_component(all, file.format, prefix, role, catalog, model_file_stem(file.path), formats);
    return out;
  }

  for (const auto& [prefix, g] : groups) {
    out.components.push_back(
        recognise_component(g.second, file.format, prefix, g.first ? g.first : "", catalog, model_file_stem(file.path), formats));
    if (prefix.empty()) out.components.back().role = "unknown";
  }
  // The bundle as a whole: measured over every tensor, named after its diffusion model.
  ModelSummary whole = measure(all, index_of(all), file.format, "checkpoint", formats);
  whole.weight_gpu_bytes = 0;
  whole.dequant_transient_bytes = 0;
  for (const auto& c : out.components) {
    whole.weight_gpu_bytes += c.weight_gpu_bytes;
    // Components run one after another, so only one transient exists at a time.
    whole.dequant_transient_bytes = std::max(whole.dequant_transient_bytes, c.dequant_transient_bytes);
    if (c.role == "diffusion_model" && whole.model.empty()) {
      whole.model = c.model;
      whole.family = c.family;
      whole.variant = c.variant;
      whole.candidates = c.candidates;
      whole.precision = c.precision;
    }
  }
  out.whole = std::move(whole);
  return out;
}

Inspection inspect_file(const std::string& path, const json& catalog) { return summarise(read_model_file(path), catalog); }

WeightSummary weight_summary(const std::string& path, const json& catalog) {
  Inspection i = inspect_file(path, catalog);
  WeightSummary s;
  s.model = i.whole.model;
  s.role = i.whole.role;
  s.precision = i.whole.precision;
  s.parameters = i.whole.parameters;
  s.weight_bytes = i.whole.weight_gpu_bytes;
  s.dequant_transient_bytes = i.whole.dequant_transient_bytes;
  s.gpu_bytes = i.whole.gpu_bytes();
  return s;
}

json ModelSummary::to_json() const {
  json j = {{"key_prefix", key_prefix},
            {"model", or_null(model)},
            {"family", or_null(family)},
            {"role", role},
            {"variant", or_null(variant)},
            {"tensors", tensors},
            {"parameters", parameters},
            {"dtype_mix", dtype_mix_json(dtype_mix)},
            {"precision", or_null(precision)},
            {"stored_bytes", stored_bytes},
            {"weight_gpu_bytes", weight_gpu_bytes},
            {"dequant_transient_bytes", dequant_transient_bytes},
            {"gpu_bytes", gpu_bytes()}};
  if (!candidates.empty()) j["candidates"] = candidates;
  return j;
}

json Inspection::to_json() const {
  json recognised = {{"model", or_null(whole.model)},
                     {"family", or_null(whole.family)},
                     {"role", whole.role},
                     {"variant", or_null(whole.variant)}};
  if (!whole.candidates.empty()) recognised["candidates"] = whole.candidates;
  if (!components.empty()) {
    json parts = json::array();
    for (const auto& c : components) parts.push_back(c.to_json());
    recognised["components"] = std::move(parts);
  }
  return {{"path", path},
          {"format", format},
          {"model", or_null(whole.model)},  // = recognised.model, for callers that want one flat field
          {"recognised", std::move(recognised)},
          {"tensors", whole.tensors},
          {"parameters", whole.parameters},
          {"dtype_mix", dtype_mix_json(whole.dtype_mix)},
          {"precision", or_null(whole.precision)},
          {"file_bytes", file_bytes},
          {"header_bytes", header_bytes},
          {"weight_gpu_bytes", whole.weight_gpu_bytes},
          {"dequant_transient_bytes", whole.dequant_transient_bytes},
          {"gpu_bytes", whole.gpu_bytes()},
          {"key_prefix", whole.key_prefix},
          {"metadata", metadata}};
}

}  // namespace headroom
