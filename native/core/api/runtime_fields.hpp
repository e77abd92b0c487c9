#pragma once
// The request fields that choose ComfyUI's loader and its knobs, shared by estimate, plan and
// apply_preset (docs/runtime.md):
//   runtime              "dynamic" | "legacy" (default dynamic, runtime_defaults)
//   offload_streams      ComfyUI --async-offload N (0 = --disable-async-offload)
//   windows              ComfyUI on Windows
//   reserve_bytes        ComfyUI --reserve-vram
//   vram_headroom_bytes  ComfyUI --vram-headroom (dynamic VRAM keeps it free counting other programs)
//   ram_bytes            host RAM the weights must fit in
//   calibration          corrections learned from measured runs (docs/calibration.md)
// and the card's transfer and compute rates taken from gpus.json when a catalog card is named.
#include "core/base/request_fields.hpp"
#include "core/catalog/card_budget.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"

namespace headroom::api {

// The runtime a request gets for every field it leaves out: the one default set the CLI, the JSON API
// and the nodes (outside a live ComfyUI) all answer with.
Runtime runtime_defaults();
// Appended to an entry point's own table.
request::Fields with_runtime_fields(request::Fields fields);
// The card (its memory, free memory, fp8 compute, link and throughput when a catalog GPU is named) and
// the loader fields of a request: what estimate and plan both run on.
Runtime runtime_of(const request::Request& request, const CardBudget& card);

}  // namespace headroom::api
