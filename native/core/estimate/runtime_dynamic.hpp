#pragma once
// ComfyUI's dynamic VRAM (comfy-aimdo, the default on NVIDIA since ComfyUI 0.15) applied to one
// stage's demand. Weights are staged on the CPU and faulted in per layer; they stay resident while
// there is room and are evicted when activations need it, and what does not fit is copied in every
// forward pass through cast buffers (ComfyUI's offload streams). So a stage runs out of memory only
// when its activations, the layers in flight and what aimdo keeps free do not fit; the weights decide
// the speed, not whether it runs.
#include "core/estimate/estimator.hpp"
#include "core/estimate/memory_model.hpp"
#include "core/estimate/runtime_policy.hpp"

namespace headroom {

// mode "full" (everything resident), "streams" (runs, part of the weights copied in per forward pass),
// "tiled_fallback" (the VAE decode's retry) or "does_not_fit"; required_bytes() (= min_bytes) is the least it runs in.
Stage fit_stage_dynamic(const StageDemand& demand, const PolicyContext& context);

}  // namespace headroom
