#pragma once
// The flags of `estimate` and `plan` that say which ComfyUI runs the job: --runtime dynamic|legacy,
// --reserve-vram GB, --vram-headroom GB, --async-offload N / --disable-async-offload as ComfyUI spells
// them, --os linux|windows, --ram GIB (the host RAM the weights must fit in). Absent flags leave the
// core's defaults (api::runtime_defaults), the same a JSON request gets.
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"

namespace headroom::cli {

const std::set<std::string>& runtime_flag_names();    // take a value
const std::set<std::string>& runtime_switch_names();  // take none
// `flags` with `runtime` added: a command's own flags (or switches) and the runtime ones.
std::set<std::string> with_runtime_flags(std::set<std::string> flags, const std::set<std::string>& runtime);
void add_runtime_flags(const Args& args, nlohmann::json& request);
// Request field -> the flag it came from, for error messages.
const std::map<std::string, std::string>& runtime_flag_of_field();
extern const char* const kRuntimeFlagsHelp;

}  // namespace headroom::cli
