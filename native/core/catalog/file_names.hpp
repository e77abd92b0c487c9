#pragma once
// What a model file's name says: which catalog model (models.json file_patterns) and which
// precision ("..._fp8_e4m3fn_scaled", "...-Q4_K_M.gguf"). Names are a hint, weaker than the tensors
// the inspector reads; both answers are empty when the name says nothing.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom {

struct ModelInfo;

// One file-name pattern, the one rule format of native/data (models.json `file_patterns`, comfy_nodes.json
// `file_names`): every part must occur in the lower-case file stem; '!x': x must not occur; '=x': the stem
// is x; '~x': x occurs in the squashed stem (letters and digits only, so "~wan22" is found in "wan2.2_i2v"
// and "Wan2_2-I2V"), '!~x' must not. A pattern scores the characters its positive parts match.
using FilePattern = std::vector<std::string>;

// The characters the best matching pattern matches in `stem` (a model_file_stem), 0 when none matches:
// the one file-pattern matcher, for the catalog's longest match, the comfy_nodes.json rules' first match
// and the inspector's tie-break alike.
std::size_t file_patterns_score(const std::vector<FilePattern>& patterns, const std::string& stem);

// The one reader of that format: `v` (found at `key`) as a list of patterns. A pattern is a non-empty
// array of parts with at least one positive part (a pattern of refusals alone would match by what a name
// lacks), each a non-empty string whose operator is followed by text. On anything else calls `fail` with
// the key of the faulty element ("file_patterns[2]") and what was expected; `fail` throws the caller's
// data-file error.
using PatternFailure = std::function<void(const std::string& key, const std::string& what)>;
std::vector<FilePattern> read_file_patterns(const nlohmann::json& v, const std::string& key, const PatternFailure& fail);
// One pattern of that list; nullopt when malformed (the inspector's unchecked caller catalogs skip it).
std::optional<FilePattern> read_file_pattern(const nlohmann::json& v);

// Guesses from a file name such as "wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors": the model from
// models.json file_patterns (the longest matching pattern wins); the precision from the catalog's
// spellings as whole tokens (the longest wins), then the usual loose spellings ("fp8" alone is e4m3fn).
// GGUF block types count in .gguf files and in bare names (a model typed in a request). The model is the
// catalog entry itself (nullptr when no pattern matches), the precision its canonical name (empty when
// nothing matches).
const ModelInfo* model_from_file_name(const std::string& file_name);
std::optional<std::string> precision_from_file_name(const std::string& file_name);

// The name without folders and a known model-file extension, lower-case: what patterns match.
std::string model_file_stem(const std::string& file_name);

}  // namespace headroom
