#include "core/catalog/file_names.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/base/text.hpp"
#include "core/catalog/catalog.hpp"

namespace headroom {
namespace {

// A part's test: its operator ('!' refuses, '=' is the whole stem, '~' reads the squashed stem) and text.
struct Part {
  bool refuse = false, whole = false, squashed = false;
  std::string text;
};

Part parse_part(const std::string& p) {
  Part part;
  std::size_t at = 0;
  if (at < p.size() && p[at] == '!') part.refuse = true, ++at;
  if (!part.refuse && at < p.size() && p[at] == '=') part.whole = true, ++at;
  if (at < p.size() && p[at] == '~') part.squashed = true, ++at;
  part.text = p.substr(at);
  return part;
}

// A pattern matches when every part does; its score is the matched length (longest wins). The squashed
// stem is made only for a pattern that asks for it.
bool pattern_matches(const std::string& stem, std::string& squashed, const FilePattern& pattern, std::size_t* score) {
  if (pattern.empty()) return false;
  std::size_t total = 0;
  for (const std::string& p : pattern) {
    const Part part = parse_part(p);
    if (part.text.empty()) return false;
    if (part.squashed && squashed.empty()) squashed = squash(stem);
    const std::string& in = part.squashed ? squashed : stem;
    const bool found = part.whole ? in == part.text : in.find(part.text) != std::string::npos;
    if (found == part.refuse) return false;
    if (!part.refuse) total += part.text.size();
  }
  *score = total;
  return total > 0;
}

}  // namespace

std::size_t file_patterns_score(const std::vector<FilePattern>& patterns, const std::string& stem) {
  std::size_t best = 0;
  std::string squashed;
  for (const auto& pattern : patterns) {
    std::size_t score = 0;
    if (pattern_matches(stem, squashed, pattern, &score)) best = std::max(best, score);
  }
  return best;
}

std::optional<FilePattern> read_file_pattern(const nlohmann::json& v) {
  if (!v.is_array() || v.empty()) return std::nullopt;
  FilePattern out;
  bool positive = false;
  for (const auto& part : v) {
    if (!part.is_string() || parse_part(part.get<std::string>()).text.empty()) return std::nullopt;
    out.push_back(part.get<std::string>());
    positive = positive || !parse_part(out.back()).refuse;
  }
  if (!positive) return std::nullopt;
  return out;
}

std::vector<FilePattern> read_file_patterns(const nlohmann::json& v, const std::string& key, const PatternFailure& fail) {
  std::vector<FilePattern> out;
  if (!v.is_array() || v.empty()) {
    fail(key, "expected a non-empty array of patterns such as [[\"flux1\", \"dev\"], [\"=ae\"]]");
    return {};
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto pattern = read_file_pattern(v[i]);
    if (!pattern) {
      fail(key + "[" + std::to_string(i) + "]",
           "expected a non-empty array of non-empty strings ('x', '!x', '=x', '~x' or '!~x', the operator followed by "
           "text), at least one of them not a '!' refusal");
      return {};
    }
    out.push_back(std::move(*pattern));
  }
  return out;
}

std::string model_file_stem(const std::string& file_name) {
  std::string s = file_name;
  if (auto slash = s.find_last_of("/\\"); slash != std::string::npos) s = s.substr(slash + 1);
  s = lower_ascii(s);
  for (const char* ext : {".safetensors", ".gguf", ".pth", ".pt", ".ckpt", ".bin", ".sft"}) {
    std::string e = ext;
    if (s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0) return s.substr(0, s.size() - e.size());
  }
  return s;
}

const ModelInfo* model_from_file_name(const std::string& file_name) {
  std::string stem = model_file_stem(file_name);
  if (stem.empty()) return nullptr;
  const ModelInfo* best = nullptr;
  std::size_t best_score = 0;
  for (const auto& m : catalog_data().models) {
    if (const std::size_t score = file_patterns_score(m.file_patterns, stem); score > best_score) {
      best = &m;
      best_score = score;
    }
  }
  return best;
}

namespace {

bool has(const std::string& hay, const char* needle) { return hay.find(needle) != std::string::npos; }

// A precision spelt as a whole token of the name, from the catalog's names and aliases (the longest wins:
// "fp8_e4m3fn_scaled" is scaled fp8, "fp8mixed" is not plain fp8). Only spellings with a digit count, so
// words like "full" or "half" in a name are not read as precisions. GGUF types
// only where a GGUF file can be meant, the safetensors-only kinds (int8, nvfp4, mxfp8) never in a .gguf
// file, float spellings anywhere.
std::string precision_token(const std::string& stem, bool gguf_allowed, bool gguf_file) {
  // (spelling, precision, kind) once: a workflow with thousands of loaders asks for every file name.
  struct Spelling { std::string text, precision; bool gguf, any; };
  static const std::vector<Spelling> spellings = [] {
    std::vector<Spelling> out;
    for (const auto& p : catalog_data().precisions) {
      std::vector<std::string> all = p.aliases;
      all.push_back(p.name);
      for (std::string sp : all) {
        for (auto& c : sp) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (sp.rfind("gguf_", 0) == 0) sp = sp.substr(5);
        if (std::none_of(sp.begin(), sp.end(), [](unsigned char c) { return std::isdigit(c); })) continue;
        out.push_back({"_" + sp + "_", p.name, p.kind == PrecisionKind::Gguf, p.kind == PrecisionKind::Float});
      }
    }
    return out;
  }();
  std::string tokens = "_";
  for (char c : stem) tokens.push_back(c == '-' || c == '.' || c == ' ' ? '_' : c);
  tokens.push_back('_');
  const Spelling* best = nullptr;
  for (const auto& sp : spellings) {
    if (sp.gguf ? !gguf_allowed : !sp.any && gguf_file) continue;
    if ((!best || sp.text.size() > best->text.size()) && tokens.find(sp.text) != std::string::npos) best = &sp;
  }
  return best ? best->precision : std::string();
}

}  // namespace

std::optional<std::string> precision_from_file_name(const std::string& file_name) {
  std::string base = file_name;
  if (auto slash = base.find_last_of("/\\"); slash != std::string::npos) base = base.substr(slash + 1);
  base = lower_ascii(base);
  const std::string stem = model_file_stem(file_name);
  const bool gguf_file = base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0;
  // GGUF block types exist only in GGUF files; a bare name (a model typed in a request, no extension)
  // may still name one.
  const bool gguf_allowed = gguf_file || stem == base;
  if (std::string p = precision_token(stem, gguf_allowed, gguf_file); !p.empty()) return p;
  if (gguf_allowed) {
    // Mixed K-quants (Q4_K_M = Q4_K with some Q6_K tensors) are named after their main block type,
    // spelt as the catalog's ggml-type alias ("q4_k", "q8_0"); the first in catalog order wins.
    for (const auto& p : catalog_data().precisions) {
      if (p.kind != PrecisionKind::Gguf) continue;
      for (const auto& a : p.aliases)
        if (a.size() == 4 && a[0] == 'q' && a[2] == '_' && has(stem, a.c_str())) return p.name;
    }
  }
  if (gguf_file) {
    if (has(stem, "bf16")) return std::string("bf16");
    if (has(stem, "f16")) return std::string("fp16");
    return std::nullopt;
  }
  if (has(stem, "fp8_scaled") || has(stem, "fp8scaled") || (has(stem, "fp8") && has(stem, "scaled")))
    return std::string("fp8_scaled");
  if (has(stem, "e4m3fn") || has(stem, "e4m3")) return std::string("fp8_e4m3fn");
  if (has(stem, "e5m2")) return std::string("fp8_e5m2");
  if (has(stem, "fp8")) return std::string("fp8_e4m3fn");  // Comfy-Org's plain "-fp8" files are e4m3fn
  if (has(stem, "bf16")) return std::string("bf16");
  if (has(stem, "fp16") || has(stem, "f16")) return std::string("fp16");
  if (has(stem, "fp32") || has(stem, "f32")) return std::string("fp32");
  return std::nullopt;
}

}  // namespace headroom
