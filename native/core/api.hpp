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
