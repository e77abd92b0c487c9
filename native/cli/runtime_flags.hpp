#pragma once
// The flags of `estimate` and `plan` that say which ComfyUI runs the job: --runtime dynamic|legacy
// (default dynamic: ComfyUI 0.15 and later on NVIDIA), --reserve-vram GB and --vram-headroom GB as
// ComfyUI spells them, --ram GIB (the host RAM the weights must fit in).
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"

namespace headroom::cli {

const std::set<std::string>& runtime_flag_names();
void add_runtime_flags(const Args& args, nlohmann::json& request);
// Request field -> the flag it came from, for error messages.
const std::map<std::string, std::string>& runtime_flag_of_field();
extern const char* const kRuntimeFlagsHelp;

}  // namespace headroom::cli
