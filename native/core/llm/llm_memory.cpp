#include "core/llm/llm_memory.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "core/catalog/card_budget.hpp"
#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/llm/llm_data.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/text_distance.hpp"
#include "core/base/units.hpp"

namespace headroom::llm {
namespace {

using nlohmann::json;

const json& catalog() { return llm_data(); }

// "Org/Some Model 3.1_8B" -> "some-model-3.1-8b"
std::string key(std::string s) {
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  std::string out;
  for (char c : s) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '_' || l == ' ') l = '-';
    out.push_back(l);
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// Entries of `list` (each with name + aliases) nearest to `wanted`, for "did you mean".
std::string suggestions(const json& list, const std::string& wanted) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  std::string k = key(wanted);
  for (const auto& e : list) {
    std::size_t best = edit_distance(k, key(e["name"].get<std::string>()));
    for (const auto& a : e.value("aliases", json::array())) best = std::min(best, edit_distance(k, key(a.get<std::string>())));
    std::string name = e["name"].get<std::string>();
    if (!k.empty() && key(name).find(k) != std::string::npos) best = 0;
    scored.emplace_back(best, name);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out += (i ? ", " : "") + scored[i].second;
  std::string all;
  for (const auto& e : list) all += (all.empty() ? "" : ", ") + e["name"].get<std::string>();
  return "did you mean " + out + "? Known: " + all;
}

const json* find_entry(const json& list, const std::string& wanted) {
  std::string k = key(wanted);
  for (const auto& e : list) {
    if (key(e["name"].get<std::string>()) == k) return &e;
    for (const auto& a : e.value("aliases", json::array()))
      if (key(a.get<std::string>()) == k) return &e;
  }
  return nullptr;
}

}  // namespace

Architecture find_model(const std::string& name) {
  const json& models = catalog()["models"];
  const json* e = find_entry(models, name);
  if (!e) throw InputError("model", "unknown LLM '" + text_preview(name) + "'; " + suggestions(models, name) +
                                        ". Or describe it with params, layers, kv_heads and head_dim.");
  Architecture a;
  a.name = (*e)["name"];
  a.params = (*e)["params"].get<double>();
  a.layers = (*e)["layers"];
  a.hidden = (*e)["hidden"];
  a.heads = (*e)["heads"];
  a.kv_heads = (*e)["kv_heads"];
  a.head_dim = (*e)["head_dim"];
  a.intermediate = (*e)["intermediate"];
  a.vocab = (*e)["vocab"];
  a.max_context = e->value("max_context", 0);
  a.source = (*e)["source"].get<std::string>() + "; params: " + (*e)["params_source"].get<std::string>();
  a.note = e->value("note", "");
  return a;
}

const request::Fields& architecture_fields() {
  using request::Kind;
  static const request::Fields f = {
      {"model", Kind::String, "a catalog LLM name or alias (\"org/Model\" accepted)"},
      {"params", Kind::Number, "parameters in billions", 0.001, 100000},
      {"layers", Kind::Int, "num_hidden_layers", 1, 1000000},
      {"hidden", Kind::Int, "hidden_size", 1, 1000000},
      {"heads", Kind::Int, "num_attention_heads", 1, 1000000},
      {"kv_heads", Kind::Int, "num_key_value_heads", 1, 1000000},
      {"head_dim", Kind::Int, "head_dim", 1, 1000000},
      {"intermediate", Kind::Int, "intermediate_size", 1, 1000000},
      {"vocab", Kind::Int, "vocab_size", 1, 1000000},
  };
  return f;
}

Architecture architecture_from(const request::Request& request, bool need_kv) {
  Architecture a;
  if (request.has("model")) a = find_model(request.text("model"));
  else a.name = "custom";
  if (request.has("params")) a.params = request.number("params") * 1e9;
  auto override_int = [&](const char* field, int& target) {
    if (request.has(field)) target = static_cast<int>(request.integer(field));
  };
  override_int("layers", a.layers);
  override_int("hidden", a.hidden);
  override_int("heads", a.heads);
  override_int("kv_heads", a.kv_heads);
  override_int("head_dim", a.head_dim);
  override_int("intermediate", a.intermediate);
  override_int("vocab", a.vocab);
  if (a.name == "custom") a.source = "figures given in the request";
  if (a.params <= 0)
    throw InputError("params", "give model (a catalog name) or params (billions), e.g. params: 8 for an 8B model");
  if (a.head_dim == 0 && a.hidden > 0 && a.heads > 0) a.head_dim = a.hidden / a.heads;
  if (need_kv) {
    if (a.layers <= 0) throw InputError("layers", "is required without a catalog model (config.json num_hidden_layers)");
    if (a.kv_heads <= 0) throw InputError("kv_heads", "is required without a catalog model (config.json num_key_value_heads)");
    if (a.head_dim <= 0) throw InputError("head_dim", "is required without a catalog model (config.json head_dim, or hidden / heads)");
  }
  return a;
}

Precision find_weight_precision(const std::string& name, const std::string& field) {
  const json& list = catalog()["weight_precisions"];
  const json* e = find_entry(list, name);
  if (!e) throw InputError(field, "unknown weight precision '" + text_preview(name) + "'; " + suggestions(list, name));
  return {(*e)["name"], (*e)["bits_per_weight"].get<double>(), (*e)["source"]};
}

Precision find_kv_precision(const std::string& name, const std::string& field) {
  const json& list = catalog()["kv_precisions"];
  const json* e = find_entry(list, name);
  if (!e) throw InputError(field, "unknown KV cache precision '" + text_preview(name) + "'; " + suggestions(list, name));
  return {(*e)["name"], (*e)["bytes_per_element"].get<double>(), (*e)["source"]};
}

std::string rough_bytes(double bytes) {
  char text[40];
  std::snprintf(text, sizeof text, "%.3g bytes", bytes);
  return text;
}

void check_total(double total, const std::string& field, const std::string& parts) {
  constexpr double kMaxEstimateBytes = 1152921504606846976.0;  // 2^60 = 1 EiB
  if (std::isfinite(total) && total >= 0 && total <= kMaxEstimateBytes) return;
  throw InputError(field, "the estimate comes to " + rough_bytes(total) + " (" + parts +
                              "), more than the 1 EiB any machine holds; check the sizes given");
}

void add_verdict(json& out, const CardBudget& budget, double total) {
  if (!budget.given()) {
    put_verdict(out, std::nullopt);
    return;
  }
  const std::uint64_t bytes = budget.budget_bytes();
  out["budget_bytes"] = bytes;
  if (budget.free_bytes) out["free_bytes"] = budget.free_bytes;
  out["gpu"] = budget.gpu ? json(budget.gpu->name) : json(nullptr);
  put_verdict(out, total <= static_cast<double>(bytes) ? Verdict::Fits : Verdict::DoesNotFit);
  out["headroom_bytes"] = static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) - total));
}

double kv_bytes_per_token(const Architecture& a, double bytes_per_element) {
  return 2.0 * a.layers * a.kv_heads * a.head_dim * bytes_per_element;
}

const request::Fields& request_fields() {
  using request::Kind;
  static const request::Fields f = [] {
    request::Fields t = architecture_fields();
    const request::Fields own = {
        {"precision", Kind::String, "weight precision (bf16; fp8, int8, int4, nf4, gguf-q4_k_m, ...)"},
        {"kv_precision", Kind::String, "KV cache precision (fp16; fp8, q8_0, q4_0)"},
        {"context", Kind::Int, "tokens of context", 1, 100000000, {}, true},
        {"batch", Kind::Int, "sequences at once", 1, 65536},
    };
    t.insert(t.end(), own.begin(), own.end());
    return with_card_budget(t);
  }();
  return f;
}

json estimate(const json& body) {
  const request::Request request(body, "llm", request_fields());
  Architecture a = architecture_from(request, true);
  Precision w = find_weight_precision(request.text_or("precision", "bf16"), "precision");
  Precision kv = find_kv_precision(request.text_or("kv_precision", "fp16"), "kv_precision");
  std::int64_t context = request.integer("context");
  std::int64_t batch = request.integer_or("batch", 1);
  const CardBudget budget = card_budget_of(request);

  const json& overhead = catalog()["inference_overhead"];
  double weights = a.params * w.value / 8.0;
  double per_token = kv_bytes_per_token(a, kv.value);
  double kv_total = per_token * static_cast<double>(context) * static_cast<double>(batch);
  double over = overhead["non_torch_bytes"].get<double>();
  double total = weights + kv_total + over;
  check_total(total, kv_total > weights ? "context" : "params",
              "weights " + rough_bytes(weights) + ", KV cache " + rough_bytes(kv_total));
  auto u = [](double x) { return static_cast<std::uint64_t>(std::llround(x)); };

  json out;
  out["model"] = {{"name", a.name},     {"params", a.params},     {"layers", a.layers}, {"kv_heads", a.kv_heads},
                  {"head_dim", a.head_dim}, {"source", a.source}};
  out["precision"] = {{"name", w.name}, {"bits_per_weight", w.value}, {"source", w.source}};
  out["kv_precision"] = {{"name", kv.name}, {"bytes_per_element", kv.value}, {"source", kv.source}};
  out["context"] = context;
  out["batch"] = batch;
  out["weights_bytes"] = u(weights);
  out["kv_bytes_per_token"] = per_token;
  out["kv_cache_bytes"] = u(kv_total);
  out["overhead_bytes"] = u(over);
  out["overhead_source"] = overhead["source"];
  out["kv_formula"] = "2 (K and V) x layers x kv_heads x head_dim x bytes per element, per token, times context x batch";
  out["total_bytes"] = u(total);
  json notes = json::array();
  if (a.max_context > 0 && context > a.max_context)
    notes.push_back("context " + std::to_string(context) + " is longer than the model's max_position_embeddings (" +
                    std::to_string(a.max_context) + ")");
  if (!a.note.empty()) notes.push_back(a.note);
  notes.push_back("Activations during prefill come on top (they grow with the prefill chunk, not the context); "
                  "vLLM reserves gpu_memory_utilization (default 0.9) of the card and fills the rest with KV cache.");
  out["notes"] = notes;
  add_verdict(out, budget, total);
  if (budget.given()) {
    double room = static_cast<double>(budget.budget_bytes()) - weights - over;
    out["max_context_that_fits"] =
        room > 0 ? static_cast<std::int64_t>(std::floor(room / (per_token * static_cast<double>(batch)))) : 0;
  }
  return out;
}

}  // namespace headroom::llm
