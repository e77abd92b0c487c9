#include "core/api/runtime_fields.hpp"

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace headroom::api {
namespace {

constexpr std::uint64_t kMaxBytes = 1ull << 50;  // 1 PiB: no card or machine is near it

std::uint64_t bytes_field(const nlohmann::json& request, const char* key, const char* what) {
  const auto& v = request[key];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > kMaxBytes)
    throw InputError(key, std::string("expected a whole number of bytes from 0 to 1 PiB (") + what + "), got " +
                              json_preview(v));
  return v.get<std::uint64_t>();
}

}  // namespace

const std::set<std::string>& runtime_field_names() {
  static const std::set<std::string> names = {"runtime", "vram_headroom_bytes", "ram_bytes"};
  return names;
}

void apply_runtime_fields(const nlohmann::json& request, Runtime& rt) {
  if (request.contains("runtime")) {
    const auto& v = request["runtime"];
    if (!v.is_string() || (v != "dynamic" && v != "legacy"))
      throw InputError("runtime", "expected \"dynamic\" (ComfyUI 0.15 and later with dynamic VRAM) or \"legacy\" "
                                  "(before 0.15, or --disable-dynamic-vram), got " + json_preview(v));
    rt.loader = v == "dynamic" ? Runtime::Loader::Dynamic : Runtime::Loader::Legacy;
  }
  if (request.contains("vram_headroom_bytes"))
    rt.vram_headroom_bytes = bytes_field(request, "vram_headroom_bytes", "ComfyUI --vram-headroom");
  if (request.contains("ram_bytes")) {
    rt.ram_bytes = bytes_field(request, "ram_bytes", "the host RAM, e.g. 34359738368 for 32 GiB");
    if (rt.ram_bytes == 0) throw InputError("ram_bytes", "expected the host RAM in bytes, not 0 (leave it out to skip the check)");
  }
}

void apply_gpu_rates(const GpuInfo& g, Runtime& rt) {
  // A card's own link and throughput replace models.json's generic ones, at the same efficiencies.
  if (g.pcie_gen && g.pcie_lanes) {
    try {
      const double lane = runtime_constant("pcie_lane_bytes_per_s_gen" + std::to_string(*g.pcie_gen));
      rt.pcie_bytes_per_s = lane * *g.pcie_lanes * runtime_constant("pcie_efficiency");
    } catch (const Error&) {
      // A PCIe generation models.json has no lane rate for: the generic rate stays.
    }
  }
  if (g.bf16_tflops) rt.flops_per_s = *g.bf16_tflops * 1e12 * runtime_constant("gpu_flops_utilisation");
}

}  // namespace headroom::api
