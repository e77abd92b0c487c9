#pragma once
// What a model file's name says: which catalog model (models.json file_patterns) and which
// precision ("..._fp8_e4m3fn_scaled", "...-Q4_K_M.gguf"). Names are a hint, weaker than the tensors
// the inspector reads; both answers are empty when the name says nothing.
#include <optional>
#include <string>

namespace headroom {

// Guesses from a file name such as "wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors"
// (models.json file_patterns; the longest matching pattern wins). Empty when nothing matches.
std::optional<std::string> model_from_file_name(const std::string& file_name);
std::optional<std::string> precision_from_file_name(const std::string& file_name);

// The name without folders and a known model-file extension, lower-case: what patterns match.
std::string model_file_stem(const std::string& file_name);

}  // namespace headroom
