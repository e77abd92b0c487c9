#pragma once
// Training memory: model states (weights, gradients, master weights, optimizer states) for a full
// fine-tune, LoRA or QLoRA, plus activations and logits, with the source of every constant
// (native/data/llms.json "training").
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/llm/llm_memory.hpp"

namespace headroom::train {

// Trainable LoRA parameters for rank r on q, k, v, o, gate, up and down of every layer:
// r x (d_in + d_out) per adapted matrix. Needs hidden, intermediate, heads x head_dim, kv_heads.
double lora_params(const llm::Architecture& a, int rank);

// Parameters inside those linear layers (what QLoRA stores in 4 bit).
double linear_params(const llm::Architecture& a);

// The train request's fields: the architecture fields, method, optimizer, precision, lora_rank, seq_len,
// batch, gradient_checkpointing and the card fields.
const request::Fields& request_fields();

// `headroom train` / api::train. Request fields (the CLI flags, '-' written '_'):
//   model | params (+ layers, hidden, heads, kv_heads, head_dim, intermediate, vocab),
//   method: full | lora | qlora (required), optimizer: adamw | adamw8bit | sgd (default adamw),
//   precision: bf16 | fp32 (default bf16 = mixed precision), lora_rank (default 16),
//   seq_len (default 2048), batch (default 1), gradient_checkpointing (bool), gpu | vram_bytes.
// Returns {model, method, optimizer, precision, params, trainable_params, components:[{name, bytes,
//   source}], model_states_bytes, activations_bytes (null when the architecture is unknown),
//   total_bytes, notes, budget_bytes?, gpu?, verdict?}.
nlohmann::json estimate(const nlohmann::json& request);

}  // namespace headroom::train
