#pragma once
// JSON-in, JSON-out entry points shared by the CLI, the Python module and the server routes.
// Each throws InputError / FileFormatError / Error with a message fit to show a user.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::api {

using nlohmann::json;

// {models:[{name, role, family, aliases, ...}], gpus:[...], presets:[...], precisions:[...]}
json catalog();

// Request mirrors `headroom estimate` flags: {model, precision?, text_encoder_precision?,
// width?, height?, frames?, batch?, cfg?, gpu? | vram_bytes?, decode_mode?, decode_tile_px?}.
// Returns Estimate::to_json() plus {job, budget_bytes?, verdict?}.
// Fields (unknown fields are an InputError naming them):
//   model (required)        catalog name or alias; a diffusion model brings its companions, a text
//                           encoder / clip vision / VAE alone gives only its own stage
//   precision               of `model` (bf16, fp16, fp32, fp8_e4m3fn, fp8_e5m2, fp8_scaled, gguf-q8_0 ...)
//   text_encoder_precision  of the T5-family encoder (CLIP-L keeps its default)
//   vae_precision, clip_vision_precision
//   width, height (px, 16..16384), frames (1..10001), batch (1..1024), cfg (0..100; != 1 may batch
//   cond+uncond), reference_images (Kontext, 0..16); defaults come from the model's catalog entry
//   gpu (name or unambiguous part: "4090") | vram_bytes (integer) | vram (number of GiB or "24GB")
//   decode_mode full|tiled|headroom, decode_tile_px (0 = choose, else >= 64)
//   blocks_swapped, text_encoder_on_cpu (bool), lora_bytes, windows (bool: 600 MiB reserve),
//   reserve_bytes (ComfyUI --reserve-vram), allow_lowvram (bool, default true)
// Output: peak_bytes, peak_stage, full_load_peak_bytes, min_peak_bytes, slowdown, stages[{name,
// peak_bytes, breakdown, resident, cached, mode, slowdown, full_load_bytes, min_bytes, notes}], notes,
// job, and with a card: vram_bytes, budget_bytes, verdict ("fits" | "tight" | "does not fit"), gpu?
json estimate(const json& request);

// {workflow: <UI or API format JSON>, gpu? | vram_bytes?, models_dir?}
// Returns estimate's shape plus {verdict, changes, unknown_nodes, smallest_gpu}.
json plan(const json& request);

// {workflow, preset, gpu? | vram_bytes?} -> {workflow: rewritten, before:{peak_bytes}, after:{peak_bytes}, changes}
json apply_preset(const json& request);

// Headers of .safetensors / .gguf files; one object per path.
json inspect(const std::vector<std::string>& paths);

// An error text -> {recognised, requested_bytes, ..., diagnosis, fixes}.
json explain(const std::string& text);

// LLM inference memory: {model | params+layers+kv_heads+head_dim, precision, kv_precision?, context, batch?}
json llm(const json& request);

// Training memory: {model | params, method: full|lora|qlora, optimizer, precision, ...}
json train(const json& request);

}  // namespace headroom::api
