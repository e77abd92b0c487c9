#pragma once
// From a loader's file name to a catalog model and a precision. File names are all a workflow
// carries without --models, so everything decided here is a guess and says so in `notes`. The
// answer is the one recogniser's (core/inspect/recognise.hpp); this file only adapts it.
#include <string>

#include "core/inspect/recognise.hpp"

namespace headroom::workflow {

using NameGuess = NameRecognition;

// `role` is what the loader loads: "diffusion", "checkpoint", "text_encoder", "vae", "clip_vision".
// comfy_nodes.json file_names first, then models.json file_patterns (see recognise_file_name).
NameGuess resolve_file(const std::string& file, const std::string& role);

// UNETLoader's weight_dtype widget -> canonical precision ("" for "default"/"auto": keep the file's),
// from comfy_nodes.json weight_dtypes.
std::string precision_from_weight_dtype(const std::string& weight_dtype);

}  // namespace headroom::workflow
