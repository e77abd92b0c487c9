#include "core/llm/llm_data.hpp"

#include <string>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/load_once.hpp"
#include "core/catalog/json_fields.hpp"

namespace headroom::llm {
namespace {

using nlohmann::json;

// Far outside every listed model, and small enough that products of them stay finite and below 2^63
// bytes after the request's own caps (context, batch, rank).
constexpr Range kParams{1e6, 1e14};
constexpr Range kWidth{1, 1 << 24};
constexpr Range kBytesPerElement{0.125, 8};
constexpr Range kBytesPerParam{0, 64};
constexpr Range kActivationBytes{0, 1e4};

// Each entry of a list: an object with a name, optional aliases, a source and the figures `check` reads.
template <typename Check>
void entries(const JsonFields& top, const char* key, Check check) {
  const json& list = top.array(key);
  if (list.empty()) top.fail(key, "is empty");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) top.fail(at.c_str(), "expected an object with a name");
    const JsonFields e(list[i], top.where(), at);
    e.text("name");
    if (e.has("aliases")) e.texts("aliases");
    e.text("source");
    check(e);
  }
}

void check_models(const JsonFields& e) {
  e.number("params", kParams);
  e.text("params_source");
  for (const char* k : {"layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"}) e.integer(k, kWidth);
  e.optional_flag("tied_embeddings");
  e.optional_integer("max_context", {1, 1 << 30});
}

void check_training(const JsonFields& t) {
  const JsonFields full = t.object("full");
  full.text("source");
  for (const char* mode : {"mixed", "fp32"}) {
    const JsonFields m = full.object(mode);
    for (const char* k : {"weights", "gradients", "master_weights"}) m.number(k, kBytesPerParam);
  }
  for (const char* k : {"lora_trainable_source", "lora_targets", "activation_source", "checkpointed_source", "logits_source"})
    t.text(k);
  t.number("lora_trainable_weight_bytes", kBytesPerParam);
  t.integer("lora_default_rank", {1, 4096});
  t.number("activation_bytes_per_token_per_layer_per_hidden", kActivationBytes);
  t.number("checkpointed_bytes_per_token_per_layer_per_hidden", kActivationBytes);
  t.number("logits_bytes_per_element", kBytesPerElement);
}

bool check(const json& j) {
  const std::string file = data_file_label("llms.json");
  if (!j.is_object()) throw Error(file + ": expected an object with 'models', 'weight_precisions', 'kv_precisions', ...");
  const JsonFields top(j, file);
  entries(top, "models", check_models);
  entries(top, "weight_precisions", [](const JsonFields& e) { e.number("bits_per_weight", {1, 64}); });
  entries(top, "kv_precisions", [](const JsonFields& e) { e.number("bytes_per_element", kBytesPerElement); });
  const JsonFields overhead = top.object("inference_overhead");
  overhead.number("non_torch_bytes", {0, 64.0 * (1ull << 30)});
  overhead.text("source");
  const JsonFields training = top.object("training");
  check_training(training);
  const json& optimizers = j.at("training").at("optimizer_state_bytes");
  if (optimizers.empty()) training.fail("optimizer_state_bytes", "is empty");
  for (const auto& kv : optimizers.items()) {
    const JsonFields o = JsonFields(optimizers, file, "training.optimizer_state_bytes").object(kv.key().c_str());
    o.number("bytes", kBytesPerParam);
    o.text("source");
  }
  return true;
}

}  // namespace

const json& llm_data() {
  const json& j = data_file("llms.json");
  static LoadOnce<bool> checked;
  checked.get([&] { return check(j); });
  return j;
}

}  // namespace headroom::llm
