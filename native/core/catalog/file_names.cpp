#include "core/catalog/file_names.hpp"

#include <cctype>

#include "core/catalog/catalog.hpp"

namespace headroom {
namespace {

// A pattern matches when every part does; its score is the matched length (longest wins).
bool pattern_matches(const std::string& stem, const FilePattern& pattern, std::size_t* score) {
  if (pattern.empty()) return false;
  std::size_t total = 0;
  for (const std::string& p : pattern) {
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

std::string model_file_stem(const std::string& file_name) {
  std::string s = file_name;
  if (auto slash = s.find_last_of("/\\"); slash != std::string::npos) s = s.substr(slash + 1);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ext : {".safetensors", ".gguf", ".pth", ".pt", ".ckpt", ".bin", ".sft"}) {
    std::string e = ext;
    if (s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0) return s.substr(0, s.size() - e.size());
  }
  return s;
}

std::optional<std::string> model_from_file_name(const std::string& file_name) {
  std::string stem = model_file_stem(file_name);
  if (stem.empty()) return std::nullopt;
  const ModelInfo* best = nullptr;
  std::size_t best_score = 0;
  for (const auto& m : catalog_data().models) {
    for (const auto& pattern : m.file_patterns) {
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
  std::string stem = model_file_stem(file_name);
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

}  // namespace headroom
