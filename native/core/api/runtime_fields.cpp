#include "core/api/runtime_fields.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::api {
namespace {

constexpr double kPiB = static_cast<double>(1ull << 50);  // no card or machine is near it

}  // namespace

request::Fields with_runtime_fields(request::Fields fields) {
  using request::Kind;
  const request::Fields extra = {
      {"runtime", Kind::Enum,
       "ComfyUI's loader: dynamic (0.15 and later with dynamic VRAM, the default) or legacy (before 0.15, "
       "--disable-dynamic-vram, --highvram, --gpu-only, --novram; GGUF is always legacy)",
       0, 0, "dynamic|legacy", false, "runtime"},
      {"offload_streams", Kind::Int,
       "ComfyUI's offload streams: --async-offload N (default 2), 0 with --disable-async-offload", 0, 16, {}, false,
       "async-offload|disable-async-offload=0"},
      {"windows", Kind::Bool, "ComfyUI on Windows (its reserve, and dynamic VRAM's 512 MiB WDDM headroom)", 0, 0, {},
       false, "windows|os:linux=false/windows=true"},
      {"reserve_bytes", Kind::Bytes, "ComfyUI --reserve-vram", 0, static_cast<double>(1ull << 40), {}, false,
       "reserve-vram|reserve", GiB},
      {"vram_headroom_bytes", Kind::Bytes, "ComfyUI --vram-headroom (kept free, other programs counted)", 0, kPiB, {},
       false, "vram-headroom", GiB},
      {"ram_bytes", Kind::Bytes, "host RAM the weights must fit in", 1, kPiB, {}, false, "ram", GiB},
      {"calibration", Kind::List,
       "corrections learned from this card's measured runs (the calibrate answer's entries): "
       "[{model, stage, factor, runs, card}]",
       0, 0, {}, false, "calibration"},
      {"swap_bytes", Kind::Bytes, "swap beside ram_bytes (ComfyUI's pinned-memory cap on Linux)", 0, kPiB, {}, false,
       "swap", GiB},
      {"pinned_memory", Kind::Bool, "false with ComfyUI --disable-pinned-memory (streamed weights copied from pageable memory)",
       0, 0, {}, false, "disable-pinned-memory=false"},
  };
  for (const auto& f : extra)
    if (std::none_of(fields.begin(), fields.end(), [&](const request::Field& g) { return g.key == f.key; }))
      fields.push_back(f);
  return fields;
}

namespace {

void apply_runtime_fields(const request::Request& r, Runtime& rt) {
  // The field's choices are the two loader names (checked by the request table), so the other is legacy.
  if (r.has("runtime"))
    rt.loader = r.text("runtime") == loader_name(Runtime::Loader::Dynamic) ? Runtime::Loader::Dynamic : Runtime::Loader::Legacy;
  if (r.has("offload_streams")) rt.offload_streams = static_cast<int>(r.integer("offload_streams"));
  rt.windows = r.flag_or("windows", rt.windows);
  if (auto b = r.bytes_if("reserve_bytes")) rt.reserve_bytes = *b;
  if (auto b = r.bytes_if("vram_headroom_bytes")) rt.vram_headroom_bytes = *b;
  if (auto b = r.bytes_if("ram_bytes")) rt.ram_bytes = *b;
  if (r.has("calibration")) rt.calibration = calibrate::read_corrections(r.raw("calibration"), "calibration");
  if (auto b = r.bytes_if("swap_bytes")) rt.swap_bytes = *b;
  rt.pinned_memory = r.flag_or("pinned_memory", rt.pinned_memory);
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
  // "8.9" -> 8.9; an AMD target ("gfx1100") has no CUDA capability and stays unknown.
  if (g.compute_capability && !g.compute_capability->empty() && std::isdigit(static_cast<unsigned char>((*g.compute_capability)[0])))
    rt.compute_capability = std::strtod(g.compute_capability->c_str(), nullptr);
}

}  // namespace

Runtime runtime_defaults() {
  Runtime rt;
  // What ComfyUI runs today unless told otherwise (dynamic VRAM on NVIDIA since 0.15, Linux, its own
  // offload streams); host RAM unchecked until given. The CLI adds nothing of its own, the nodes send
  // what they detect in the live ComfyUI, so one request gets one answer whoever sends it.
  rt.loader = Runtime::Loader::Dynamic;
  rt.windows = false;
  rt.offload_streams = -1;
  rt.ram_bytes = 0;
  return rt;
}

Runtime runtime_of(const request::Request& request, const CardBudget& card) {
  Runtime rt = runtime_defaults();
  rt.vram_bytes = card.vram_bytes;
  rt.free_bytes = card.free_bytes;
  if (card.gpu) {
    if (card.gpu->fp8_compute) rt.fp8_compute = *card.gpu->fp8_compute ? 1 : 0;
    apply_gpu_rates(*card.gpu, rt);
  }
  apply_runtime_fields(request, rt);
  return rt;
}

}  // namespace headroom::api
