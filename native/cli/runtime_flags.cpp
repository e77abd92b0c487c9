#include "cli/runtime_flags.hpp"

#include "core/api/runtime_fields.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {

const char* const kRuntimeFlagsHelp =
    "  --runtime R        dynamic (ComfyUI 0.15+ with dynamic VRAM, the default) or legacy (before 0.15,\n"
    "                     --disable-dynamic-vram, --highvram, --gpu-only, --novram); GGUF is always legacy\n"
    "  --reserve-vram GB  ComfyUI's --reserve-vram\n"
    "  --vram-headroom GB ComfyUI's --vram-headroom (kept free, other programs' memory counted)\n"
    "  --async-offload N  ComfyUI's offload streams (default 2); --disable-async-offload for none\n"
    "  --os OS            linux (default) or windows: ComfyUI's reserve and dynamic VRAM's WDDM headroom\n"
    "  --ram GIB          host RAM: the run does not fit when the weights need more\n"
    "  --swap GIB         swap beside --ram (ComfyUI's pinned-memory cap on Linux)\n"
    "  --disable-pinned-memory  ComfyUI's flag: streamed weights are copied from pageable memory\n";

const std::set<std::string>& runtime_flag_names() {
  static const std::set<std::string> names = {"runtime", "reserve-vram", "vram-headroom", "ram", "async-offload", "os",
                                                   "swap"};
  return names;
}

const std::set<std::string>& runtime_switch_names() {
  static const std::set<std::string> names = {"disable-async-offload", "disable-pinned-memory"};
  return names;
}

std::set<std::string> with_runtime_flags(std::set<std::string> flags, const std::set<std::string>& runtime) {
  flags.insert(runtime.begin(), runtime.end());
  return flags;
}

void add_runtime_flags(const Args& args, nlohmann::json& req) {
  // No flag, no field: the core's defaults (api::runtime_defaults) are the CLI's, so the CLI and a JSON
  // request without these fields get one answer.
  if (auto runtime = args.get("runtime")) {
    if (*runtime != "dynamic" && *runtime != "legacy")
      throw InputError("--runtime", "expected dynamic or legacy, got '" + *runtime + "'");
    req["runtime"] = *runtime;
  }
  if (auto v = args.get("reserve-vram")) req["reserve_bytes"] = parse_size(*v, "--reserve-vram", GiB);
  if (auto v = args.get("vram-headroom")) req["vram_headroom_bytes"] = parse_size(*v, "--vram-headroom", GiB);
  if (auto v = args.get_size("ram", GiB, false)) req["ram_bytes"] = *v;
  if (auto v = args.get_size("swap", GiB, true)) req["swap_bytes"] = *v;
  if (args.has("disable-pinned-memory")) req["pinned_memory"] = false;
  if (args.get("async-offload") && args.has("disable-async-offload"))
    throw InputError("--async-offload", "give --async-offload N or --disable-async-offload, not both");
  if (args.get("async-offload")) req["offload_streams"] = args.get_int("async-offload", 0, 0, 16);
  if (args.has("disable-async-offload")) req["offload_streams"] = 0;
  if (auto os = args.get("os")) {
    if (*os != "linux" && *os != "windows") throw InputError("--os", "expected linux or windows, got '" + *os + "'");
    req["windows"] = *os == "windows";
  }
}

const std::map<std::string, std::string>& runtime_flag_of_field() {
  static const std::map<std::string, std::string> m = {{"runtime", "--runtime"},
                                                       {"reserve_bytes", "--reserve-vram"},
                                                       {"vram_headroom_bytes", "--vram-headroom"},
                                                       {"ram_bytes", "--ram"},
                                                       {"offload_streams", "--async-offload"},
                                                       {"windows", "--os"},
                                                       {"swap_bytes", "--swap"},
                                                       {"pinned_memory", "--disable-pinned-memory"}};
  return m;
}

}  // namespace headroom::cli
