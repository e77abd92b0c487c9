#include "cli/runtime_flags.hpp"

#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {

const char* const kRuntimeFlagsHelp =
    "  --runtime R        dynamic (ComfyUI 0.15+ with dynamic VRAM, the default) or legacy (before 0.15,\n"
    "                     --disable-dynamic-vram, --highvram, --gpu-only, --novram); GGUF is always legacy\n"
    "  --reserve-vram GB  ComfyUI's --reserve-vram\n"
    "  --vram-headroom GB ComfyUI's --vram-headroom (kept free, other programs' memory counted)\n"
    "  --ram GIB          host RAM: the run does not fit when the weights need more\n";

const std::set<std::string>& runtime_flag_names() {
  static const std::set<std::string> names = {"runtime", "reserve-vram", "vram-headroom", "ram"};
  return names;
}

void add_runtime_flags(const Args& args, nlohmann::json& req) {
  const std::string runtime = args.get_or("runtime", "dynamic");
  if (runtime != "dynamic" && runtime != "legacy")
    throw InputError("--runtime", "expected dynamic or legacy, got '" + runtime + "'");
  req["runtime"] = runtime;
  if (auto v = args.get("reserve-vram")) req["reserve_bytes"] = parse_size(*v, "--reserve-vram", GiB);
  if (auto v = args.get("vram-headroom")) req["vram_headroom_bytes"] = parse_size(*v, "--vram-headroom", GiB);
  if (auto v = args.get_size("ram", GiB, false)) req["ram_bytes"] = *v;
}

const std::map<std::string, std::string>& runtime_flag_of_field() {
  static const std::map<std::string, std::string> m = {{"runtime", "--runtime"},
                                                       {"reserve_bytes", "--reserve-vram"},
                                                       {"vram_headroom_bytes", "--vram-headroom"},
                                                       {"ram_bytes", "--ram"}};
  return m;
}

}  // namespace headroom::cli
