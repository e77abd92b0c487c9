#include "core/llm/train_memory.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/error.hpp"
#include "core/llm/llm_data.hpp"
#include "core/llm/llm_memory.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/text.hpp"

namespace headroom::train {
namespace {

using nlohmann::json;

enum class Method { Full, Lora, Qlora };

// The training method a request names (already lower-cased); throws InputError("method") otherwise.
Method method_of(const std::string& name) {
  static const std::pair<const char*, Method> kMethods[] = {{"full", Method::Full}, {"lora", Method::Lora}, {"qlora", Method::Qlora}};
  for (const auto& [word, method] : kMethods)
    if (name == word) return method;
  throw InputError("method", "expected full, lora or qlora, got '" + name + "'");
}

const json& constants() { return llm::llm_data()["training"]; }

void require_shape(const llm::Architecture& a, const char* why) {
  if (a.layers <= 0) throw InputError("layers", std::string(why) + " needs layers (or a catalog model)");
  if (a.hidden <= 0) throw InputError("hidden", std::string(why) + " needs hidden (or a catalog model)");
  if (a.intermediate <= 0) throw InputError("intermediate", std::string(why) + " needs intermediate (or a catalog model)");
  if (a.heads <= 0) throw InputError("heads", std::string(why) + " needs heads (or a catalog model)");
  if (a.kv_heads <= 0) throw InputError("kv_heads", std::string(why) + " needs kv_heads (or a catalog model)");
  if (a.head_dim <= 0) throw InputError("head_dim", std::string(why) + " needs head_dim (or a catalog model)");
}

}  // namespace

double linear_params(const llm::Architecture& a) {
  double h = a.hidden, q = static_cast<double>(a.heads) * a.head_dim, kv = static_cast<double>(a.kv_heads) * a.head_dim;
  double per_layer = h * q + 2 * h * kv + q * h + 3 * h * a.intermediate;
  return per_layer * a.layers;
}

double lora_params(const llm::Architecture& a, int rank) {
  double h = a.hidden, q = static_cast<double>(a.heads) * a.head_dim, kv = static_cast<double>(a.kv_heads) * a.head_dim;
  double i = a.intermediate;
  double per_layer = (h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h);
  return static_cast<double>(rank) * per_layer * a.layers;
}

const request::Fields& request_fields() {
  using request::Kind;
  static const request::Fields f = [] {
    request::Fields t = llm::architecture_fields();
    const request::Fields own = {
        {"method", Kind::String, "full, lora or qlora", 0, 0, {}, true},
        {"optimizer", Kind::String, "adamw (default), adamw8bit or sgd"},
        {"precision", Kind::String, "bf16 (mixed precision, default) or fp32"},
        {"lora_rank", Kind::Int, "LoRA rank", 1, 4096},
        {"seq_len", Kind::Int, "tokens per sequence", 1, 10000000},
        {"batch", Kind::Int, "sequences per step", 1, 65536},
        {"gradient_checkpointing", Kind::Bool, "recompute activations instead of storing them"},
    };
    t.insert(t.end(), own.begin(), own.end());
    return with_card_budget(t);
  }();
  return f;
}

namespace {

// The request's training settings, each spelling read into its one name.
struct Settings {
  std::string method_name, optimizer, precision;
  Method method;
  int rank;
  std::int64_t seq, batch;
  bool checkpointing;
};

Settings settings_of(const request::Request& request, const json& c) {
  Settings s;
  s.method_name = lower_ascii(request.text("method"));
  s.method = method_of(s.method_name);
  std::string optimizer = lower_ascii(request.text_or("optimizer", "adamw"));
  if (optimizer == "adam") optimizer = "adamw";
  if (optimizer == "adamw-8bit" || optimizer == "adamw_8bit" || optimizer == "adam8bit" || optimizer == "paged_adamw_8bit")
    optimizer = "adamw8bit";
  if (!c["optimizer_state_bytes"].contains(optimizer))
    throw InputError("optimizer", "expected adamw, adamw8bit or sgd, got '" + optimizer + "'");
  s.optimizer = optimizer;
  std::string precision = lower_ascii(request.text_or("precision", "bf16"));
  if (precision == "fp16" || precision == "mixed" || precision == "bfloat16") precision = "bf16";
  if (precision == "float32") precision = "fp32";
  if (precision != "bf16" && precision != "fp32")
    throw InputError("precision", "expected bf16 (mixed precision) or fp32, got '" + precision + "'");
  s.precision = precision;
  s.rank = static_cast<int>(request.integer_or("lora_rank", c["lora_default_rank"].get<int>()));
  s.seq = request.integer_or("seq_len", 2048);
  s.batch = request.integer_or("batch", 1);
  s.checkpointing = request.flag_or("gradient_checkpointing", false);
  return s;
}

// Converted while the parts are added; a total too large for a byte count is refused by check_total
// later, so the clamp here only keeps the conversion defined until then.
std::uint64_t to_bytes(double x) { return static_cast<std::uint64_t>(std::llround(std::min(std::max(x, 0.0), 4e18))); }

// The memory's parts as they are counted, each with its source.
struct Parts {
  json components = json::array();
  json notes = json::array();
  double add(const std::string& name, double bytes, const std::string& source) {
    components.push_back({{"name", name}, {"bytes", to_bytes(bytes)}, {"source", source}});
    return bytes;
  }
};

// Weights, gradients and optimizer states for the method; sets `trainable` to the trained parameters.
double model_states(const llm::Architecture& a, const Settings& s, const json& c, Parts& parts, double& trainable) {
  const json& opt = c["optimizer_state_bytes"][s.optimizer];
  const double P = a.params;
  double states = 0;
  trainable = P;
  if (s.method == Method::Full) {
    const json& f = c["full"][s.precision == "bf16" ? "mixed" : "fp32"];
    std::string src = c["full"]["source"];
    states += parts.add("weights", P * f["weights"].get<double>(), src);
    states += parts.add("gradients", P * f["gradients"].get<double>(), src);
    if (f["master_weights"].get<double>() > 0)
      states += parts.add("master_weights", P * f["master_weights"].get<double>(), src);
    states += parts.add("optimizer_states", P * opt["bytes"].get<double>(), opt["source"]);
    return states;
  }
  require_shape(a, s.method == Method::Lora ? "LoRA" : "QLoRA");
  trainable = lora_params(a, s.rank);
  if (s.method == Method::Lora) {
    states += parts.add("frozen_weights_bf16", P * 2, "frozen base model in 16 bit: 2 bytes per parameter");
  } else {
    llm::Precision nf4 = llm::find_weight_precision("nf4", "method");
    double lin = std::min(P, linear_params(a));
    states += parts.add("frozen_weights_nf4", lin * nf4.value / 8.0, nf4.source + " (the linear layers)");
    states += parts.add("frozen_other_bf16", (P - lin) * 2,
                        "embeddings, output head and norms stay in 16 bit under QLoRA: 2 bytes per parameter");
  }
  double w = c["lora_trainable_weight_bytes"].get<double>();
  states += parts.add("lora_weights_and_gradients", trainable * 2 * w, c["lora_trainable_source"]);
  states += parts.add("lora_optimizer_states", trainable * opt["bytes"].get<double>(), opt["source"]);
  parts.notes.push_back("LoRA targets: " + c["lora_targets"].get<std::string>() + ", rank " + std::to_string(s.rank) + ".");
  return states;
}

// Activations (stored or checkpointed) and the fp32 logits; null in `out` where the shape is not known.
double activation_bytes(const llm::Architecture& a, const Settings& s, const json& c, Parts& parts, json& out) {
  out["activations_bytes"] = nullptr;
  out["logits_bytes"] = nullptr;
  double act = 0;
  if (a.layers > 0 && a.hidden > 0) {
    double sbh = static_cast<double>(s.seq) * static_cast<double>(s.batch) * a.hidden;
    if (s.checkpointing) {
      act = sbh * (c["checkpointed_bytes_per_token_per_layer_per_hidden"].get<double>() * a.layers +
                   c["activation_bytes_per_token_per_layer_per_hidden"].get<double>());
      parts.add("activations", act, c["checkpointed_source"]);
    } else {
      act = sbh * c["activation_bytes_per_token_per_layer_per_hidden"].get<double>() * a.layers;
      parts.add("activations", act, c["activation_source"]);
    }
    out["activations_bytes"] = to_bytes(act);
  } else {
    parts.notes.push_back("Activations are not counted: give model, or layers and hidden, to include them.");
  }
  if (a.vocab > 0) {
    double lg = static_cast<double>(s.seq) * static_cast<double>(s.batch) * a.vocab *
                c["logits_bytes_per_element"].get<double>();
    parts.add("logits_fp32", lg, c["logits_source"]);
    act += lg;
    out["logits_bytes"] = to_bytes(lg);
  }
  return act;
}

}  // namespace

json estimate(const json& body) {
  const request::Request request(body, "train", request_fields());
  const json& c = constants();
  llm::Architecture a = llm::architecture_from(request, false);
  const Settings s = settings_of(request, c);
  const CardBudget budget = card_budget_of(request);

  Parts parts;
  double trainable = 0;
  const double states = model_states(a, s, c, parts, trainable);
  json sizes;
  const double act = activation_bytes(a, s, c, parts, sizes);
  double total = states + act;
  llm::check_total(total, states >= act ? "params" : "seq_len",
                   "model states " + llm::rough_bytes(states) + ", activations and logits " + llm::rough_bytes(act));

  json out;
  out["model"] = {{"name", a.name}, {"params", a.params}, {"source", a.source}};
  out["method"] = s.method_name;
  out["optimizer"] = s.optimizer;
  out["precision"] = s.precision;
  out["params"] = a.params;
  out["trainable_params"] = trainable;
  out["lora_rank"] = s.method == Method::Full ? json(nullptr) : json(s.rank);
  out["seq_len"] = s.seq;
  out["batch"] = s.batch;
  out["gradient_checkpointing"] = s.checkpointing;
  out["components"] = parts.components;
  out["model_states_bytes"] = static_cast<std::uint64_t>(std::llround(states));
  out["activations_bytes"] = sizes["activations_bytes"];
  out["logits_bytes"] = sizes["logits_bytes"];
  out["total_bytes"] = static_cast<std::uint64_t>(std::llround(total));
  parts.notes.push_back("Excludes the CUDA context (~0.35 GiB) and allocator fragmentation.");
  out["notes"] = parts.notes;
  llm::add_verdict(out, budget, total);
  return out;
}

}  // namespace headroom::train
