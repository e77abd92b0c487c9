#pragma once
// LLM inference memory: weights by precision + KV cache + runtime overhead, from the small catalog
// in native/data/llms.json or from architecture figures given by hand.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/request_fields.hpp"
#include "core/catalog/card_budget.hpp"

namespace headroom::llm {

// Architecture figures of a decoder-only transformer (config.json names in comments).
struct Architecture {
  std::string name;          // catalog name, or "custom"
  double params = 0;         // total parameters
  int layers = 0;            // num_hidden_layers
  int hidden = 0;            // hidden_size (0 = unknown)
  int heads = 0;             // num_attention_heads (0 = unknown)
  int kv_heads = 0;          // num_key_value_heads
  int head_dim = 0;          // head_dim
  int intermediate = 0;      // intermediate_size (0 = unknown)
  int vocab = 0;             // vocab_size (0 = unknown)
  int max_context = 0;       // max_position_embeddings (0 = unknown)
  std::string source;        // where the figures come from
  std::string note;
};

// Catalog lookup by name or alias (case, '_' and ' ' ignored; "org/Model" accepted).
// Throws InputError("model") with the closest names when unknown.
Architecture find_model(const std::string& name);

// The architecture fields shared by the llm and train requests: model and/or params (billions), layers,
// hidden, heads, kv_heads, head_dim, intermediate, vocab.
const request::Fields& architecture_fields();

// Builds the architecture from a checked request; explicit figures override the catalog's.
// `need_kv` demands layers, kv_heads and head_dim.
Architecture architecture_from(const request::Request& request, bool need_kv);

struct Precision {
  std::string name;
  double value = 0;  // bits per weight (weights) or bytes per element (KV cache)
  std::string source;
};
Precision find_weight_precision(const std::string& name, const std::string& field);
Precision find_kv_precision(const std::string& name, const std::string& field);

// Writes budget_bytes, free_bytes?, gpu, verdict and headroom_bytes of `total` against the budget
// (verdict null without one).
void add_verdict(nlohmann::json& out, const CardBudget& budget, double total);

// KV cache bytes per token: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
double kv_bytes_per_token(const Architecture& a, double bytes_per_element);

// Refuses a total past 1 EiB (or not finite): each request field is in range, but their product can
// exceed what any machine holds and what an answer's 64-bit byte counts carry; saturating would print
// 2^63 bytes and a headroom of -2^63. `field` is the request field behind the largest part; `parts`
// say what came to how much. Every part of a total that passes converts to bytes exactly enough.
void check_total(double total, const std::string& field, const std::string& parts);
std::string rough_bytes(double bytes);  // "1.2e+37 bytes", for check_total's parts

// The llm request's fields (the CLI flags, '-' written '_'): the architecture fields, precision (default
// bf16), kv_precision (default fp16), context (tokens, required), batch (default 1) and the card fields.
const request::Fields& request_fields();

// `headroom llm` / api::llm.
// Returns {model, precision, kv_precision, context, batch, weights_bytes, kv_bytes_per_token,
//   kv_cache_bytes, overhead_bytes, total_bytes, sources, notes, budget_bytes?, gpu?, verdict?,
//   headroom_bytes?, max_context_that_fits?}.
nlohmann::json estimate(const nlohmann::json& request);

}  // namespace headroom::llm
