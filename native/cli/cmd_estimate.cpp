// `headroom models` and `headroom estimate`: the catalog and the per-stage peak of one model.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/runtime_flags.hpp"
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
    "usage: headroom estimate --model NAME [--precision P] [--text-encoder-precision P]\n"
    "         [--vae-precision P] [--width W --height H] [--frames F] [--batch B] [--cfg X]\n"
    "         [--references N] [--gpu NAME | --vram GIB] [--free GIB] [--decode full|tiled|headroom] [--tile PX]\n"
    "         [--block-swap N] [--lora SIZE] [--text-encoder-on-cpu] [--windows] [--reserve SIZE] [--json]\n"
    "         [--runtime dynamic|legacy] [--reserve-vram GB] [--vram-headroom GB] [--ram GIB]\n"
    "         [--async-offload N | --disable-async-offload] [--os linux|windows]\n"
    "Per-stage peak VRAM (reserved memory, CUDA context and ComfyUI's reserve included) of one model\n"
    "with its usual companions, or of a text encoder or VAE alone. --free: memory free for the run as\n"
    "ComfyUI counts it (the CUDA context and other processes already outside it); verdicts are then\n"
    "against it.\n"
    "Exit status: 0 it runs (fits, streams or tight) or no card given, 1 does not fit, 2 bad input (the\n"
    "message names the flag), 3 not covered: --model names no catalog model (with --json: verdict\n"
    "unknown, reason, not_covered {kind, model}).\n";

std::string estimate_usage() { return std::string(kEstimateUsage) + kRuntimeFlagsHelp; }

std::string join(const json& arr) {
  std::string out;
  for (const auto& s : arr) out += (out.empty() ? "" : ", ") + s.get<std::string>();
  return out;
}

std::string fixed1(double x) { return fixed(x, 1); }

std::string gb(std::uint64_t bytes) { return fixed1(bytes / 1e9) + " GB"; }

// Maps a request field named in an InputError to the flag the user typed.
[[noreturn]] void rethrow_as_flag(const InputError& e) {
  static const std::map<std::string, std::string> flags = {
      {"model", "--model"}, {"precision", "--precision"}, {"text_encoder_precision", "--text-encoder-precision"},
      {"vae_precision", "--vae-precision"}, {"width", "--width"}, {"height", "--height"}, {"frames", "--frames"},
      {"batch", "--batch"}, {"cfg", "--cfg"}, {"reference_images", "--references"}, {"gpu", "--gpu"},
      {"vram", "--vram"}, {"decode_mode", "--decode"}, {"decode_tile_px", "--tile"},
      {"blocks_swapped", "--block-swap"}, {"lora_bytes", "--lora"}, {"reserve_bytes", "--reserve"},
      {"free_bytes", "--free"}, {"vram_bytes", "--vram"}};
  auto it = flags.find(e.field());
  if (it == flags.end() && e.field() != "reserve_bytes") it = runtime_flag_of_field().find(e.field());
  if (it == flags.end() || it == runtime_flag_of_field().end()) throw e;
  std::string msg = e.what();
  msg = msg.substr(e.field().size() + 2);
  throw InputError(it->second, msg);
}

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
  if (as_json)
    std::cout << json{{"verdict", spelling(Verdict::Unknown)}, {"reason", reason},
                      {"not_covered", {{"kind", "model"}, {"model", model}}}}
                     .dump(2, ' ', false, json::error_handler_t::replace)
              << "\n";
  return kExitNotCovered;
}

void print_estimate(const json& r) {
  const json& job = r["job"];
  std::ostringstream head;
  std::string what;
  if (!job["diffusion"].is_null())
    what = job["diffusion"]["model"].get<std::string>() + " (" + job["diffusion"]["precision"].get<std::string>() + ")";
  else if (!job["vae"].is_null())
    what = job["vae"]["model"].get<std::string>() + " (" + job["vae"]["precision"].get<std::string>() + ")";
  else if (!job["clip_vision"].is_null())
    what = job["clip_vision"]["model"].get<std::string>() + " (" + job["clip_vision"]["precision"].get<std::string>() + ")";
  else
    what = job["text_encoders"][0]["model"].get<std::string>() + " (" + job["text_encoders"][0]["precision"].get<std::string>() + ")";
  std::cout << what << "  " << job["width"].get<int>() << "x" << job["height"].get<int>();
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

int cmd_estimate(const Argv& argv) {
  Args args(argv,
            with_runtime_flags({"model", "precision", "text-encoder-precision", "vae-precision", "width", "height",
                                "frames", "batch", "cfg", "references", "gpu", "vram", "free", "decode", "tile",
                                "block-swap", "lora", "reserve"},
                               runtime_flag_names()),
            with_runtime_flags({"json", "help", "text-encoder-on-cpu", "windows"}, runtime_switch_names()));
  if (args.has("help")) {
    std::cout << estimate_usage();
    return 0;
  }
  if (!args.positionals().empty())
    throw InputError("estimate", "unexpected argument '" + args.positionals()[0] + "'; name the model with --model");
  if (!args.get("model"))
    throw InputError("--model", "is required, e.g. --model " + api::catalog()["models"][0]["name"].get<std::string>() +
                                    " (see `headroom models`)");
  json req;
  req["model"] = *args.get("model");
  if (auto v = args.get("precision")) req["precision"] = *v;
  if (auto v = args.get("text-encoder-precision")) req["text_encoder_precision"] = *v;
  if (auto v = args.get("vae-precision")) req["vae_precision"] = *v;
  if (args.get("width")) req["width"] = args.get_int("width", 0, 16, 16384);
  if (args.get("height")) req["height"] = args.get_int("height", 0, 16, 16384);
  if (args.get("frames")) req["frames"] = args.get_int("frames", 0, 1, 10001);
  if (args.get("batch")) req["batch"] = args.get_int("batch", 0, 1, 1024);
  if (args.get("cfg")) req["cfg"] = args.get_double("cfg", 1.0);
  if (args.get("references")) req["reference_images"] = args.get_int("references", 0, 0, 16);
  if (args.get("block-swap")) req["blocks_swapped"] = args.get_int("block-swap", 0, 0, 1000);
  if (args.get("tile")) req["decode_tile_px"] = args.get_int("tile", 0, 64, 16384);
  if (auto v = args.get("decode")) req["decode_mode"] = *v;
  if (auto v = args.get("gpu")) req["gpu"] = *v;
  if (auto v = args.get("vram")) {
    if (args.get("gpu")) throw InputError("--vram", "give either --gpu or --vram, not both");
    req["vram_bytes"] = parse_size(*v, "--vram", GiB);
    if (req["vram_bytes"].get<std::uint64_t>() < 256 * MiB)
      throw InputError("--vram", "expected the card's memory, e.g. 24 (GiB) or 12GB; got '" + *v + "'");
  }
  if (auto v = args.get_size("free", GiB, false)) req["free_bytes"] = *v;
  if (auto v = args.get("lora")) req["lora_bytes"] = parse_size(*v, "--lora", MiB);
  if (auto v = args.get("reserve")) req["reserve_bytes"] = parse_size(*v, "--reserve", GiB);
  if (args.has("text-encoder-on-cpu")) req["text_encoder_on_cpu"] = true;
  if (args.has("windows") && args.get("os") && *args.get("os") != "windows")
    throw InputError("--windows", "contradicts --os " + *args.get("os") + "; give one of them");
  if (args.has("windows")) req["windows"] = true;
  if (args.get("reserve") && args.get("reserve-vram"))
    throw InputError("--reserve-vram", "give --reserve-vram or --reserve (the same setting), not both");
  add_runtime_flags(args, req);

  json r;
  try {
    r = api::estimate(req);
  } catch (const InputError& e) {
    if (e.field() == "model" && names_no_catalog_model(*args.get("model")))
      return not_covered(*args.get("model"), std::string(e.what()).substr(e.field().size() + 2), args.has("json"));
    rethrow_as_flag(e);
  }
  if (args.has("json"))
    std::cout << r.dump(2) << "\n";
  else
    print_estimate(r);
  return r.value("verdict", "") == spelling(Verdict::DoesNotFit) ? kExitDoesNotFit : kExitOk;
}

}  // namespace headroom::cli
