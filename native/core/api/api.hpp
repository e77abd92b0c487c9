#pragma once
// JSON-in, JSON-out entry points shared by the CLI, the Python module and the server routes.
// Each throws InputError / FileFormatError / Error with a message fit to show a user.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/request_fields.hpp"

namespace headroom::api {

using nlohmann::json;

// Every JSON request is read through its entry point's field table (core/base/request_fields.hpp): an
// unknown field, a field of the wrong kind or out of its range is an InputError naming the field (and, for
// an unknown one, the closest accepted field and all of them). The card fields (gpu | vram_bytes | vram,
// free_bytes) follow one rule set wherever they are taken (core/catalog/card_budget.hpp).
// The table of an entry point by name ("estimate", "plan", "apply_preset", "suggest_preset", "decode_tile", "inspect",
// "recognise", "explain", "llm", "train"); null for another name.
const request::Fields* fields_of(std::string_view entry);
// The names fields_of answers, in the order docs/api.md lists them.
const std::vector<std::string_view>& entry_names();
const request::Fields& estimate_fields();
const request::Fields& plan_fields();
const request::Fields& apply_preset_fields();
const request::Fields& suggest_preset_fields();
const request::Fields& decode_tile_fields();
const request::Fields& inspect_fields();
const request::Fields& recognise_fields();
const request::Fields& explain_fields();
const request::Fields& runs_fields();
const request::Fields& calibrate_fields();

// {models:[{name, role, family, aliases, ...}], gpus:[...], presets:[...], precisions:[...],
//  verdicts:[{id, text, runs, fits, sized}]} (verdicts: every verdict and how it is spelled, core/catalog/verdict.hpp)
json catalog();

// Request: the fields `headroom estimate`'s flags are generated from.
// Returns Estimate::to_json() plus {job, budget_bytes?, verdict?}.
// Fields: estimate_fields(), each with its kind, range and flag; docs/api.md lists them (generated).
// Output: peak_bytes, peak_stage, full_load_peak_bytes, min_peak_bytes, slowdown, stages[{name,
// peak_bytes, breakdown, resident, cached, mode, slowdown, full_load_bytes, min_bytes, notes}], notes,
// job, and with a card: vram_bytes, budget_bytes, verdict ("fits" | "tight" | "does not fit"), gpu?
json estimate(const json& request);

// {workflow: <UI or API format JSON>, gpu? | vram_bytes? | vram?, free_bytes?, models_dir?}
// Returns estimate's shape plus {verdict, changes, unknown_nodes, smallest_gpu (fully resident),
// smallest_gpu_runs (runs unchanged)}. free_bytes as in estimate (the smallest cards are still whole,
// empty catalog cards; without free_bytes the request's own card is one of them). A change's applies_by_preset is true
// only where the "fit this card" preset would make it for this workflow and card. A workflow the catalog
// does not cover answers {verdict: "unknown", reason, not_covered: {kind: "model", node_id, node_type,
// role, file, file_bytes} | {kind: "no_diffusion_loader", nodes}, sized_stages, job, ...} instead of a plan;
// sized_stages are the stages of the models it does know (a VAE decode alone), with no verdict on them.
json plan(const json& request);

// {workflow, preset, gpu? | vram_bytes? | vram?, free_bytes?} -> {workflow: rewritten, before:{peak_bytes},
// after:{peak_bytes}, changes}. free_bytes sizes "fit this card" to the free memory (as in estimate);
// "fit N GB" presets size for a whole, empty N GB card and ignore it.
json apply_preset(const json& request);

// The preset to offer when a run of this workflow failed for want of memory (the OOM toast's button):
// plan's fields (the workflow and the card it failed on). Every catalog preset is applied as by
// apply_preset and ranked by plan/preset_rank.hpp. Returns {chosen: {preset, description, why
// ("own_fit" | "first_that_runs" | "lowest_peak"), before, after ({verdict, verdict_id, verdict_reason,
// peak_bytes}), changes, kinds, costs, judged_bytes} | null, ranked: [the same, best first, chosen
// first], not_ranked: [{preset, reason}] (changes nothing, no verdict after it, needs a card)}.
json suggest_preset(const json& request);

// The tile for ComfyUI's own tiled decode (VAE.decode_tiled) inside a budget: what VAE Decode (Headroom)
// runs when its native decoder does not load (core/estimate/decode_tile.hpp). Request {model (the VAE),
// latent_width, latent_height, latent_frames?, batch?, spatial_upscale? (default: the VAE's stride),
// budget_bytes? (absent: no budget)}. Every useful candidate tile is priced by the estimator's model of
// VAEDecodeTiled, largest first, until one fits. Returns {model, tile_latent, overlap_latent, tile_px,
// peak_bytes, budget_bytes, over_budget (even the smallest candidate is above the budget; the smallest is
// answered), priced: [{tile_latent, tile_px, peak_bytes}] in the order tried, candidates_latent}.
json decode_tile(const json& request);

// Corrections from the user's own runs (docs/calibration.md). Request {runs: [run objects of the history,
// newest first], card?: device, since?: unix seconds}. Returns {v: 1, rule: {min_runs, max_runs, factor_min, factor_max},
// calibration: [{model, stage, card, factor, runs}], runs_seen, stages_used, stages_skipped}; the
// calibration list is what estimate, plan and apply_preset take as their "calibration" field.
json calibrate(const json& request);

// Headers of .safetensors / .gguf files; one object per path.
json inspect(const std::vector<std::string>& paths);
// The same from a request {paths: [...]} (the C interface's form).
json inspect_request(const json& request);

// {tensors: {name: {dtype (bf16, fp16, fp32, fp8_e4m3fn, ...), shape}}} -> inspect's answer for one file
// (without path): the model, role, precision and bytes of a state dict already in memory.
json recognise(const json& request);

// An error text -> {recognised, format, requested_bytes, total_bytes, free_bytes, allocated_bytes (by
// PyTorch), reserved_unallocated_bytes, reserved_total_bytes, process_bytes, other_processes
// ([{pid, bytes}] or null), gpu_index, backend (cuda|rocm|mps|xpu|directml|vulkan|metal|cpu|unknown),
// origin (pytorch|cuda-runtime|hip-runtime|cublas|cudnn|miopen|vllm|llama.cpp|transformers),
// app (comfyui|vllm|llama.cpp|ollama|null), extra {...}, notes [...], diagnosis {id, text} | null,
// fixes [{id, text}]}. A figure the message does not carry is null; non-OOM text gives
// recognised=false and nulls. Never throws on any input (see core/oom/oom_parse.hpp, oom_diagnose.hpp).
json explain(const std::string& text);
// The same from a request {text} (the C interface's form).
json explain_request(const json& request);

// LLM inference memory. Request = the `headroom llm` flags with '-' as '_':
// {model | params (billions) + layers + kv_heads + head_dim, precision? (bf16; fp8, int8, int4, nf4,
// gguf-q4_k_m, ...), kv_precision? (fp16; fp8, q8_0, q4_0), context (tokens), batch? (1),
// gpu? | vram_bytes? | vram?, free_bytes?}. Returns {model, precision, kv_precision, context, batch, weights_bytes,
// kv_bytes_per_token, kv_cache_bytes, overhead_bytes, total_bytes, notes, verdict (null without a
// card), budget_bytes?, gpu?, headroom_bytes?, max_context_that_fits?} (core/llm/llm_memory.hpp).
json llm(const json& request);

// Training memory. Request = the `headroom train` flags with '-' as '_':
// {model | params (+ layers, hidden, heads, kv_heads, head_dim, intermediate, vocab), method
// (full|lora|qlora), optimizer? (adamw; adamw8bit, sgd), precision? (bf16 = mixed; fp32),
// lora_rank? (16), seq_len? (2048), batch? (1), gradient_checkpointing? (false), gpu? | vram_bytes? | vram?,
// free_bytes?}.
// Returns {components [{name, bytes, source}], model_states_bytes, activations_bytes, logits_bytes,
// total_bytes, trainable_params, notes, verdict, ...} (core/llm/train_memory.hpp).
json train(const json& request);

// The run recorder's history: {history: path of runs.jsonl (its rotated runs.1.jsonl is read too), limit?
// (1..200, default 20), active_prompt_id?} -> {v: 1, runs: [newest first: {prompt_id, started, ended,
// outcome (ok|oom|error|interrupted|unfinished), message, runtime, stages [...], timeline [...], active,
// unfinished? {stage, node, rss_bytes, ram_available_bytes, swap_used_bytes, likely_cause}}],
// skipped_lines, skipped {damaged, too_long, newer_version}, history_found, skipped_files [{file, reason}]}.
// A missing history is no runs (history_found false); a damaged line is counted and skipped (core/runs/runs.hpp).
json runs(const json& request);

}  // namespace headroom::api
