#pragma once
// Internal to catalog/: fills the typed figures of a ModelInfo from its models.json entry.
#include "core/catalog/catalog.hpp"
#include "core/catalog/json_fields.hpp"

namespace headroom {

// Reads the sections the model's role needs (arch, activation, decode/encode, ComfyUI constants)
// and the optional experts, defaults, fp8_file and comfy hints; throws Error naming the file, model and key.
void read_model_figures(const JsonFields& entry, ModelInfo& model);

}  // namespace headroom
