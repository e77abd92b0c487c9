#pragma once
// A loader's file -> the Component it loads: recognised by name, then by its header where the
// workflow's model folders are given (ComfyUI's folder lists, --models).
#include <optional>
#include <string>

#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// The loader roles of comfy_nodes.json ("loads") that are read differently, parsed once per loader;
// a role added to the data without code reads as Other (its files are recognised, nothing more).
enum class LoaderKind { Diffusion, Checkpoint, TextEncoder, Vae, ClipVision, Lora, StyleModel, AudioEncoder, ModelPatch, Other };
LoaderKind loader_kind(const std::string& role);

// The file's model and precision by name, then by header; records on `rec` where its size comes from.
Component component(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec);

// ComfyUI's own folder lists first (they hold extra_model_paths.yaml's folders), then the models folder.
std::optional<std::string> find_file(ReaderState& st, const std::string& file, const std::string& role);

// The header of `path` read once per file identity and role.
const HeaderFacts& header_facts(ReaderState& st, const std::string& path, const std::string& role);

}  // namespace headroom::workflow
