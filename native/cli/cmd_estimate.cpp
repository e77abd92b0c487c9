// `headroom models` and `headroom estimate`: the catalog and the per-stage peak of one model.
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/runtime_flags.hpp"
#include "core/api/api.hpp"
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
    "Per-stage peak VRAM (reserved memory, CUDA context and ComfyUI's reserve included) of one model\n"
    "with its usual companions, or of a text encoder or VAE alone. Exit code: 0 fits or no card given,\n"
    "1 does not fit, 2 bad input. --free: memory free for the run as ComfyUI counts it (the CUDA context\n"
    "and other processes already outside it); verdicts are then against it.\n";

std::string estimate_usage() { return std::string(kEstimateUsage) + kRuntimeFlagsHelp; }

std::string pad(const std::string& s, std::size_t n) { return s.size() >= n ? s + " " : s + std::string(n - s.size(), ' '); }

std::string join(const json& arr) {
  std::string out;
  for (const auto& s : arr) out += (out.empty() ? "" : ", ") + s.get<std::string>();
  return out;
}

std::string fixed1(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

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
  std::cout << pad("stage", 20) << pad("peak", 12) << pad("mode", 16) << "on the GPU\n";
  for (const auto& s : r["stages"]) {
    std::string resident = join(s["resident"]);
    if (!s["cached"].empty()) resident += " (+ cached: " + join(s["cached"]) + ")";
    std::cout << pad(s["name"].get<std::string>(), 20) << pad(format_bytes(s["peak_bytes"].get<std::uint64_t>()), 12)
              << pad(s["mode"].get<std::string>(), 16) << resident << "\n";
    for (const auto& kv : s["breakdown"].items()) {
      std::uint64_t b = kv.value().get<std::uint64_t>();
      if (b == 0) continue;
      std::cout << "    " << pad(kv.key(), 28) << format_bytes(b) << "\n";
    }
    for (const auto& n : s["notes"]) std::cout << "    - " << n.get<std::string>() << "\n";
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
  std::cout << pad("model", 20) << pad("role", 17) << pad("params", 9) << pad("default", 12) << pad("weights", 10)
            << "aliases\n";
  for (const auto& m : c["models"]) {
    std::string params = fixed1(m["params"].get<double>() / 1e9) + "B";
    if (m["experts"].get<int>() > 1) params = "2x" + params;
    std::cout << pad(m["name"].get<std::string>(), 20) << pad(m["role"].get<std::string>(), 17) << pad(params, 9)
              << pad(m["default_precision"].get<std::string>(), 12)
              << pad(gb(m["default_weight_bytes"].get<std::uint64_t>()), 10) << join(m["aliases"]) << "\n";
  }
  std::cout << "\n" << pad("precision", 14) << pad("bits/weight", 13) << "aliases\n";
  for (const auto& p : c["precisions"])
    std::cout << pad(p["name"].get<std::string>(), 14) << pad(fixed1(p["bits_per_weight"].get<double>()), 13)
              << join(p["aliases"]) << "\n";
  std::cout << "\n" << pad("gpu", 20) << pad("memory", 12) << pad("EUR/h", 8) << "aliases\n";
  for (const auto& g : c["gpus"]) {
    std::string price = "-";
    if (!g["price_eur_per_hour"].is_null()) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%.2f", g["price_eur_per_hour"].get<double>());
      price = buf;
    }
    std::cout << pad(g["name"].get<std::string>(), 20) << pad(format_bytes(g["memory_bytes"].get<std::uint64_t>()), 12)
              << pad(price, 8) << join(g["aliases"]) << "\n";
  }
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
            {"model", "precision", "text-encoder-precision", "vae-precision", "width", "height", "frames", "batch",
             "cfg", "references", "gpu", "vram", "free", "decode", "tile", "block-swap", "lora", "reserve",
             "runtime", "reserve-vram", "vram-headroom", "ram"},
            {"json", "help", "text-encoder-on-cpu", "windows"});
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
  if (args.has("windows")) req["windows"] = true;
  if (args.get("reserve") && args.get("reserve-vram"))
    throw InputError("--reserve-vram", "give --reserve-vram or --reserve (the same setting), not both");
  add_runtime_flags(args, req);

  json r;
  try {
    r = api::estimate(req);
  } catch (const InputError& e) {
    rethrow_as_flag(e);
  }
  if (args.has("json"))
    std::cout << r.dump(2) << "\n";
  else
    print_estimate(r);
  return r.value("verdict", "") == spelling(Verdict::DoesNotFit) ? 1 : 0;
}

}  // namespace headroom::cli
