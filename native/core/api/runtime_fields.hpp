#pragma once
// The request fields that choose ComfyUI's loader and its knobs, shared by estimate, plan and
// apply_preset (docs/runtime.md):
//   runtime              "dynamic" | "legacy" (default legacy: what every request meant before 2026)
//   reserve_bytes        ComfyUI --reserve-vram
//   vram_headroom_bytes  ComfyUI --vram-headroom (dynamic VRAM keeps it free counting other programs)
//   ram_bytes            host RAM the weights must fit in
// and the card's transfer and compute rates taken from gpus.json when a catalog card is named.
#include "core/base/request_fields.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"

namespace headroom::api {

// Appended to an entry point's own table.
request::Fields with_runtime_fields(request::Fields fields);
void apply_runtime_fields(const request::Request& request, Runtime& runtime);
void apply_gpu_rates(const GpuInfo& gpu, Runtime& runtime);

}  // namespace headroom::api
