#pragma once
// The request fields that choose ComfyUI's loader and its knobs, shared by estimate and plan:
//   runtime              "dynamic" | "legacy" (default legacy: what every request meant before 2026)
//   vram_headroom_bytes  ComfyUI --vram-headroom (dynamic VRAM keeps it free counting other programs)
//   ram_bytes            host RAM the weights must fit in (ComfyUI --ram / the machine's RAM)
// and the card's transfer and compute rates taken from gpus.json when a catalog card is named.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"

namespace headroom::api {

const std::set<std::string>& runtime_field_names();
void apply_runtime_fields(const nlohmann::json& request, Runtime& runtime);
void apply_gpu_rates(const GpuInfo& gpu, Runtime& runtime);

}  // namespace headroom::api
