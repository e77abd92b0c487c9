#pragma once
// What a model file's name says: which catalog model (models.json file_patterns) and which
// precision ("..._fp8_e4m3fn_scaled", "...-Q4_K_M.gguf"). Names are a hint, weaker than the tensors
// the inspector reads; both answers are empty when the name says nothing.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

// One models.json file_patterns entry: every part must occur in the lower-case file stem ('!x': must
// not occur, '=x': the stem is x).
using FilePattern = std::vector<std::string>;

// The characters the best matching pattern matches in `stem` (a model_file_stem), 0 when none matches:
// the one file-pattern matcher, for the name recogniser and the inspector's tie-break alike.
std::size_t file_patterns_score(const std::vector<FilePattern>& patterns, const std::string& stem);

// Guesses from a file name such as "wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors": the model from
// models.json file_patterns (the longest matching pattern wins); the precision from the catalog's
// spellings as whole tokens (the longest wins), then the usual loose spellings ("fp8" alone is e4m3fn).
// GGUF block types count in .gguf files and in bare names (a model typed in a request). Empty when
// nothing matches.
std::optional<std::string> model_from_file_name(const std::string& file_name);
std::optional<std::string> precision_from_file_name(const std::string& file_name);

// The name without folders and a known model-file extension, lower-case: what patterns match.
std::string model_file_stem(const std::string& file_name);

}  // namespace headroom
