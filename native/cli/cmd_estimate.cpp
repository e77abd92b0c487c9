// `headroom models` and `headroom estimate`: the catalog and the per-stage peak of one model.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/field_flags.hpp"
#include "cli/table.hpp"
#include "core/api/api.hpp"
#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {
namespace {

using nlohmann::json;

const char* kModelsUsage =
    "usage: headroom models [--json]\n"
    "Lists the catalog: models (name, role, parameters, default precision, aliases), precisions and GPUs.\n";

const char* kEstimateUsage =
    "usage: headroom estimate --model NAME [options] [--json]\n"
    "Per-stage peak VRAM (reserved memory, CUDA context and ComfyUI's reserve included) of one model\n"
    "with its usual companions, or of a text encoder or VAE alone. --free: memory free for the run as\n"
    "ComfyUI counts it (the CUDA context and other processes already outside it); verdicts are then\n"
    "against it. Each option is a field of the JSON request (docs/api.md, estimate):\n";

const char* kEstimateExit =
    "  --json  the answer as one JSON object\n"
    "Exit status: 0 it runs (fits, streams or tight) or no card given, 1 does not fit, 2 bad input (the\n"
    "message names the flag), 3 not covered: --model names no catalog model (with --json: verdict\n"
    "unknown, reason, not_covered {kind, model}).\n";

const std::vector<FlagForm>& estimate_flags() {
  static const std::vector<FlagForm> forms = flag_forms(api::estimate_fields());
  return forms;
}

std::string join(const json& arr) {
  std::string out;
  for (const auto& s : arr) out += (out.empty() ? "" : ", ") + s.get<std::string>();
  return out;
}

std::string fixed1(double x) { return fixed(x, 1); }

std::string gb(std::uint64_t bytes) { return fixed1(bytes / 1e9) + " GB"; }

// A name with letters or digits that no catalog model answers to, neither exactly, by a file pattern nor
// as part of one name: a model Headroom does not cover, not a mistyped flag (a blank name, or a part of
// several names, stays bad input).
bool names_no_catalog_model(const std::string& model) {
  const bool has_text = std::any_of(model.begin(), model.end(), [](unsigned char c) { return std::isalnum(c); });
  return has_text && models_named(model).empty();
}

// Exit status 3 with the reason on stderr and, for scripts, the answer plan gives for a workflow it
// cannot size.
int not_covered(const std::string& model, const std::string& reason, bool as_json) {
  std::cerr << "headroom estimate: --model: " << reason << "\n";
  if (as_json) {
    json out = {{"reason", reason}, {"not_covered", {{"kind", "model"}, {"model", model}}}};
    put_verdict(out, Verdict::Unknown);
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
  return kExitNotCovered;
}

void print_estimate(const json& r) {
  const json& job = r["job"];
  std::ostringstream head;
  // The job's first model, in the order a lone part is shown: what the stages are for.
  const json* part = job["text_encoders"].empty() ? nullptr : &job["text_encoders"][0];
  for (const char* key : {"clip_vision", "audio_encoder", "vae", "diffusion"})
    if (job.contains(key) && !job[key].is_null()) part = &job[key];
  if (!part) return;  // the estimator refuses a job without a model before it comes here
  const std::string what = (*part)["model"].get<std::string>() + " (" + (*part)["precision"].get<std::string>() + ")";
  if (job.contains("tokens")) std::cout << what << "  " << job["tokens"].get<int>() << " shape tokens";
  else std::cout << what << "  " << job["width"].get<int>() << "x" << job["height"].get<int>();
  if (job["frames"].get<int>() > 1) std::cout << "x" << job["frames"].get<int>() << " frames";
  std::cout << ", batch " << job["batch"].get<int>() << ", cfg " << fixed1(job["cfg"].get<double>());
  if (r.contains("gpu")) std::cout << "  on " << r["gpu"]["name"].get<std::string>();
  if (r.contains("vram_bytes")) std::cout << " (" << format_bytes(r["vram_bytes"].get<std::uint64_t>()) << ")";
  if (r.contains("free_bytes")) std::cout << ", " << format_bytes(r["free_bytes"].get<std::uint64_t>()) << " free";
  std::cout << "\n\n";
  // Stage rows and their breakdown rows interleave; each kind is aligned over all stages.
  Table stages(""), parts("    ");
  stages.add({"stage", "peak", "mode", "on the GPU"});
  std::vector<std::vector<std::size_t>> parts_of;
  for (const auto& s : r["stages"]) {
    std::string resident = join(s["resident"]);
    if (!s["cached"].empty()) resident += " (+ cached: " + join(s["cached"]) + ")";
    stages.add({s["name"].get<std::string>(), format_bytes(s["peak_bytes"].get<std::uint64_t>()),
                s["mode"].get<std::string>(), resident});
    parts_of.emplace_back();
    for (const auto& kv : s["breakdown"].items()) {
      std::uint64_t b = kv.value().get<std::uint64_t>();
      if (b == 0) continue;
      parts_of.back().push_back(parts.size());
      parts.add({kv.key(), format_bytes(b)});
    }
  }
  std::cout << stages.line(0) << "\n";
  for (std::size_t i = 0; i < parts_of.size(); ++i) {
    std::cout << stages.line(i + 1) << "\n";
    for (std::size_t p : parts_of[i]) std::cout << parts.line(p) << "\n";
    for (const auto& n : r["stages"][i]["notes"]) std::cout << "    - " << n.get<std::string>() << "\n";
  }
  std::cout << "\npeak: " << format_bytes(r["peak_bytes"].get<std::uint64_t>()) << " ("
            << gb(r["peak_bytes"].get<std::uint64_t>()) << ") in " << r["peak_stage"].get<std::string>() << "\n";
  std::cout << "the run itself needs " << format_bytes(r["own_peak_bytes"].get<std::uint64_t>())
            << " (without cached models); with every model fully loaded: "
            << format_bytes(r["full_load_peak_bytes"].get<std::uint64_t>())
            << "; at least (the most streaming ComfyUI does): " << format_bytes(r["required_bytes"].get<std::uint64_t>()) << "\n";
  std::cout << "host RAM for the weights: " << format_bytes(r["host_ram_bytes"].get<std::uint64_t>()) << "\n";
  if (r.contains("verdict")) {
    std::cout << "verdict: " << r["verdict"].get<std::string>() << " (" << r["runtime"].get<std::string>() << " loader)";
    if (r["slowdown"].get<double>() > 1.05) std::cout << " (about " << fixed1(r["slowdown"].get<double>()) << "x slower)";
    if (!r["verdict_reason"].get<std::string>().empty()) std::cout << ": " << r["verdict_reason"].get<std::string>();
    std::cout << "\n";
  }
  for (const auto& n : r["notes"]) std::cout << "note: " << n.get<std::string>() << "\n";
}

}  // namespace

int cmd_models(const Argv& argv) {
  Args args(argv, {}, {"json", "help"});
  if (args.has("help")) {
    std::cout << kModelsUsage;
    return 0;
  }
  if (!args.positionals().empty()) throw InputError("models", "takes no arguments, got '" + args.positionals()[0] + "'");
  json c = api::catalog();
  if (args.has("json")) {
    std::cout << c.dump(2) << "\n";
    return 0;
  }
  Table models("");
  models.add({"model", "role", "params", "default", "weights", "aliases"});
  for (const auto& m : c["models"]) {
    std::string params = fixed1(m["params"].get<double>() / 1e9) + "B";
    if (m["experts"].get<int>() > 1) params = "2x" + params;
    models.add({m["name"].get<std::string>(), m["role"].get<std::string>(), params,
                m["default_precision"].get<std::string>(), gb(m["default_weight_bytes"].get<std::uint64_t>()),
                join(m["aliases"])});
  }
  std::cout << models.text();
  Table precisions("");
  precisions.add({"precision", "bits/weight", "aliases"});
  for (const auto& p : c["precisions"])
    precisions.add({p["name"].get<std::string>(), fixed1(p["bits_per_weight"].get<double>()), join(p["aliases"])});
  std::cout << "\n" << precisions.text();
  Table gpus("");
  gpus.add({"gpu", "memory", "EUR/h", "aliases"});
  for (const auto& g : c["gpus"]) {
    const std::string price = g["price_eur_per_hour"].is_null() ? "-" : fixed(g["price_eur_per_hour"].get<double>(), 2);
    gpus.add({g["name"].get<std::string>(), format_bytes(g["memory_bytes"].get<std::uint64_t>()), price,
              join(g["aliases"])});
  }
  std::cout << "\n" << gpus.text();
  if (!c["presets"].empty()) {
    std::cout << "\npresets:";
    for (const auto& p : c["presets"])
      std::cout << " " << (p.is_object() ? p.value("name", p.dump()) : p.dump()) << ";";
    std::cout << "\n";
  }
  return 0;
}

std::string estimate_usage() { return kEstimateUsage + flags_help(estimate_flags()) + kEstimateExit; }

int cmd_estimate(const Argv& argv) {
  const auto& forms = estimate_flags();
  Args args(argv, value_flag_names(forms, {}), switch_names(forms, {"json", "help"}));
  if (args.has("help")) {
    std::cout << estimate_usage();
    return 0;
  }
  if (!args.positionals().empty())
    throw InputError("estimate", "unexpected argument '" + args.positionals()[0] + "'; name the model with --model");
  if (!args.get("model"))
    throw InputError("--model", "is required, e.g. --model " + api::catalog()["models"][0]["name"].get<std::string>() +
                                    " (see `headroom models`)");
  const json req = request_from_flags(args, forms);

  json r;
  try {
    r = api::estimate(req);
  } catch (const InputError& e) {
    if (e.field() == "model" && names_no_catalog_model(*args.get("model")))
      return not_covered(*args.get("model"), std::string(e.what()).substr(e.field().size() + 2), args.has("json"));
    rethrow_as_flag(e, args, forms);
  }
  if (args.has("json"))
    std::cout << r.dump(2) << "\n";
  else
    print_estimate(r);
  return answer_verdict(r) == Verdict::DoesNotFit ? kExitDoesNotFit : kExitOk;
}

}  // namespace headroom::cli
