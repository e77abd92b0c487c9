#pragma once
// Access to the JSON data of native/data (models, GPUs, presets, LLMs).
#include <string>
#include <nlohmann/json.hpp>

namespace headroom {

// Parsed native/data/<name>. The copy compiled into the binary is used unless the
// environment variable HEADROOM_DATA_DIR names a folder holding a file of that name,
// so users can add a GPU or a model without rebuilding. Throws Error when missing or invalid.
const nlohmann::json& data_file(const std::string& name);

// Where data_file(name) comes from, for messages: the override's path, or the bare name for the
// embedded copy.
std::string data_file_label(const std::string& name);

}  // namespace headroom
