#pragma once
// Loader nodes (comfy_nodes.json "loads") -> the components they load, read by role from a table of
// role -> reader: a diffusion model with its weight_dtype, a checkpoint with the companions it bundles,
// text encoders, VAE, CLIP vision, LoRAs by their bytes.
#include <string>
#include <vector>

#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// Reads every file `n` names for loader role `role` into `st` (components, loaders, notes, knobs).
void read_loader(ReaderState& st, const Node& n, const std::string& role);

// ComfyUI caches a node's output by its class and inputs, not by its id, so loaders of the same file
// with the same settings give one model: whether `a` and `b` are that one model.
bool same_load(const Component& a, const Component& b);

// True (and a note) when `c` is already in `loaded` (same_load).
bool already_loaded(ReaderState& st, const std::vector<Component>& loaded, const Component& c, const Node& n);

}  // namespace headroom::workflow
