// `headroom explain`, `headroom llm`, `headroom train`: flags -> api JSON -> a table or --json.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/api/api.hpp"
#include "core/base/request_fields.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {
namespace {

using nlohmann::json;

const char* kExplainHelp =
    "usage: headroom explain [FILE|-] [--app APP] [--os OS] [--loader LOADER] [--json]\n"
    "Reads an error text or log (a file, or stdin when FILE is - or missing) and, if it shows a memory\n"
    "failure, prints its figures, a diagnosis and ordered fixes, each with what it costs. Recognised:\n"
    "PyTorch CUDA/ROCm/MPS/XPU, cudaMallocAsync, CUDA/HIP runtime, cuBLAS, cuDNN, vLLM, llama.cpp/Ollama,\n"
    "DirectML, transformers; ComfyUI's dynamic VRAM (comfy-aimdo) and pinned-memory errors, its own OOM\n"
    "lines, the Linux OOM killer (a log ending in \"Killed\") and the Windows portable closing silently.\n"
    "  --app     where the error happened: comfyui, vllm, llama.cpp or ollama (fixes in that app's terms;\n"
    "            the text's own evidence wins)\n"
    "  --os      linux, windows or macos (only the settings that work there)\n"
    "  --loader  the ComfyUI loader that ran: dynamic (dynamic VRAM, the default since 0.15) or legacy\n"
    "Exit status: 0 recognised, 1 not a memory failure, 2 bad input.\n";

const char* kLlmHelp =
    "usage: headroom llm (--model NAME | --params B --layers L --kv-heads H --head-dim D)\n"
    "                    --context TOKENS [--precision P] [--kv-precision K] [--batch N]\n"
    "                    [--gpu NAME | --vram GIB] [--json]\n"
    "LLM inference memory: weights at a precision + KV cache (2 x layers x kv_heads x head_dim x bytes\n"
    "per token) + runtime overhead. P: bf16, fp16, fp32, fp8, int8, int4 (AWQ/GPTQ), nf4, gguf-q8_0,\n"
    "gguf-q6_k, gguf-q5_k_m, gguf-q4_k_m, gguf-q4_0, gguf-q3_k_m, gguf-q2_k. K: fp16, fp8, q8_0, q4_0.\n"
    "Models: the names in native/data/llms.json (`headroom models --json` lists the image and video ones).\n"
    "Exit status: 0 fits (or no card given), 1 does not fit, 2 bad input.\n";

const char* kTrainHelp =
    "usage: headroom train (--model NAME | --params B [--layers L --hidden H ...]) --method full|lora|qlora\n"
    "                      [--optimizer adamw|adamw8bit|sgd] [--precision bf16|fp32] [--lora-rank R]\n"
    "                      [--seq-len S] [--batch N] [--gradient-checkpointing] [--gpu NAME | --vram GIB] [--json]\n"
    "Training memory: weights, gradients, fp32 master weights and optimizer states (16 bytes per\n"
    "parameter for a mixed-precision AdamW full fine-tune), LoRA/QLoRA adapters, activations and logits.\n"
    "Exit status: 0 fits (or no card given), 1 does not fit, 2 bad input.\n";

// An error text, or a whole log around it: real ones are kB to a few MB. The parser is linear
// (16 MiB in about 0.2 s), and the cap keeps `explain /dev/zero`-like input from filling memory.
constexpr std::uint64_t kMaxErrorTextBytes = 16ull * 1024 * 1024;

bool wants_help(const Argv& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

// Runs an api call, renaming a JSON field in an InputError to the CLI flag that set it.
template <typename F>
json call(F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    std::string flag = e.field();
    for (auto& c : flag)
      if (c == '_') c = '-';
    std::string what = e.what();
    std::string rest = what.substr(e.field().size() + 2);
    throw InputError("--" + flag, rest);
  }
}

std::string size_or_dash(const json& v) {
  return v.is_number_unsigned() || v.is_number_integer() ? format_bytes(v.get<std::uint64_t>()) : "-";
}

// Flag text becomes the JSON value the entry's field table asks for ("8" -> 8), by the table's own rules.
void copy_flags(const Args& a, json& request, const char* entry,
                const std::vector<std::pair<std::string, std::string>>& names) {
  const request::Fields& fields = *api::fields_of(entry);
  for (const auto& [flag, field] : names)
    if (auto v = a.get(flag))
      for (const auto& f : fields)
        if (f.key == field) request[field] = call([&] { return request::value_from_text(f, *v); });
  if (auto v = a.get_size("vram", GiB, false)) request["vram_bytes"] = *v;
}

void print_verdict(const json& r) {
  if (r["verdict"].is_null()) return;
  std::string card = r["gpu"].is_string() ? r["gpu"].get<std::string>() : format_bytes(r["budget_bytes"].get<std::uint64_t>());
  std::int64_t room = r["headroom_bytes"].get<std::int64_t>();
  std::cout << "  " << card << ": " << r["verdict"].get<std::string>() << ", "
            << format_bytes(static_cast<std::uint64_t>(room < 0 ? -room : room)) << (room < 0 ? " short" : " to spare");
  if (r.contains("max_context_that_fits")) {
    std::int64_t longest = r["max_context_that_fits"].get<std::int64_t>();
    if (longest > 0) std::cout << "; longest context that fits: " << longest << " tokens";
    else std::cout << "; the weights alone do not fit";
  }
  std::cout << "\n";
}

int verdict_status(const json& r) { return answer_verdict(r) == Verdict::DoesNotFit ? 1 : 0; }

// The caller's context line of oom_parse.hpp, from --app/--os/--loader; each value checked here so a typo
// is an error rather than a line the parser ignores.
std::string context_line(const Args& a) {
  static const std::pair<const char*, std::vector<std::string>> kKeys[] = {
      {"app", {"comfyui", "vllm", "llama.cpp", "ollama"}},
      {"os", {"linux", "windows", "macos"}},
      {"loader", {"dynamic", "legacy"}}};
  std::string line;
  for (const auto& [key, allowed] : kKeys) {
    auto v = a.get(key);
    if (!v) continue;
    if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
      std::string list;
      for (const auto& x : allowed) list += (list.empty() ? "" : ", ") + x;
      throw InputError(std::string("--") + key, "expected one of " + list + ", got '" + *v + "'");
    }
    line += std::string(" ") + key + "=" + *v;
  }
  return line.empty() ? "" : "\nheadroom-context:" + line + "\n";
}

// What failed, in words: the library or component that reported it and where the memory was.
std::string failure_head(const json& r) {
  const std::string origin = r["origin"].get<std::string>(), backend = r["backend"].get<std::string>();
  std::string head = origin == "os" ? "the operating system ended the process" : origin;
  if (backend == "cpu") head += ", system RAM";
  else if (backend != "unknown") head += " on " + backend;
  return head;
}

}  // namespace

int cmd_explain(const Argv& argv) {
  if (wants_help(argv)) {
    std::cout << kExplainHelp;
    return 0;
  }
  Args a(argv, {"app", "os", "loader"}, {"json"});
  if (a.positionals().size() > 1) throw InputError("FILE", "give one file (or - for stdin)");
  std::string path = a.positionals().empty() ? "-" : a.positionals()[0];
  const std::string context = context_line(a);
  json r = api::explain(read_text(path, "FILE", kMaxErrorTextBytes) + context);
  if (a.has("json")) {
    // Figures copied from a pasted log are cleaned in the parser; replace anything left rather than fail.
    std::cout << r.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return r["recognised"].get<bool>() ? 0 : 1;
  }
  if (!r["recognised"].get<bool>()) {
    std::cout << "Not recognised as a memory failure.\n";
    return 1;
  }
  std::cout << "Memory failure: " << failure_head(r);
  if (r["gpu_index"].is_number()) std::cout << ", GPU " << r["gpu_index"].get<int>();
  if (r["app"].is_string()) std::cout << " (" << r["app"].get<std::string>() << ")";
  std::cout << "  [" << r["format"].get<std::string>() << "]\n";
  const std::pair<const char*, const char*> rows[] = {
      {"requested", "requested_bytes"},       {"total", "total_bytes"},
      {"free", "free_bytes"},                 {"allocated by PyTorch", "allocated_bytes"},
      {"reserved, unallocated", "reserved_unallocated_bytes"}, {"reserved in total", "reserved_total_bytes"},
      {"this process", "process_bytes"}};
  for (const auto& [label, field] : rows)
    if (!r[field].is_null()) std::printf("  %-22s %s\n", label, size_or_dash(r[field]).c_str());
  if (r["other_processes"].is_array())
    for (const auto& p : r["other_processes"])
      std::printf("  %-22s %s\n", ("process " + std::to_string(p["pid"].get<std::uint64_t>())).c_str(),
                  format_bytes(p["bytes"].get<std::uint64_t>()).c_str());
  std::cout << "\nDiagnosis (" << r["diagnosis"]["id"].get<std::string>() << "): " << r["diagnosis"]["text"].get<std::string>()
            << "\n\nFixes, in order:\n";
  int i = 1;
  for (const auto& f : r["fixes"]) std::cout << "  " << i++ << ". " << f["text"].get<std::string>() << "\n";
  if (!r["notes"].empty()) {
    std::cout << "\nNotes:\n";
    for (const auto& n : r["notes"]) std::cout << "  - " << n.get<std::string>() << "\n";
  }
  return 0;
}

int cmd_llm(const Argv& argv) {
  if (wants_help(argv)) {
    std::cout << kLlmHelp;
    return 0;
  }
  Args a(argv, {"model", "params", "layers", "kv-heads", "head-dim", "hidden", "heads", "precision", "kv-precision",
                "context", "batch", "gpu", "vram"},
         {"json"});
  if (!a.positionals().empty()) throw InputError(a.positionals()[0], "unexpected argument; see headroom llm --help");
  json request = json::object();
  copy_flags(a, request, "llm",
             {{"model", "model"}, {"params", "params"}, {"layers", "layers"}, {"kv-heads", "kv_heads"},
              {"head-dim", "head_dim"}, {"hidden", "hidden"}, {"heads", "heads"}, {"precision", "precision"},
              {"kv-precision", "kv_precision"}, {"context", "context"}, {"batch", "batch"}, {"gpu", "gpu"}});
  json r = call([&] { return api::llm(request); });
  if (a.has("json")) {
    std::cout << r.dump(2) << "\n";
    return verdict_status(r);
  }
  std::printf("%s (%.2f B params), %s weights, %s KV cache, context %lld x batch %lld\n",
              r["model"]["name"].get<std::string>().c_str(), r["model"]["params"].get<double>() / 1e9,
              r["precision"]["name"].get<std::string>().c_str(), r["kv_precision"]["name"].get<std::string>().c_str(),
              static_cast<long long>(r["context"].get<std::int64_t>()), static_cast<long long>(r["batch"].get<std::int64_t>()));
  std::printf("  %-10s %12s   %g bits per weight\n", "weights", size_or_dash(r["weights_bytes"]).c_str(),
              r["precision"]["bits_per_weight"].get<double>());
  std::printf("  %-10s %12s   %s per token\n", "KV cache", size_or_dash(r["kv_cache_bytes"]).c_str(),
              format_bytes(static_cast<std::uint64_t>(r["kv_bytes_per_token"].get<double>())).c_str());
  std::printf("  %-10s %12s   CUDA context and non-PyTorch memory\n", "overhead", size_or_dash(r["overhead_bytes"]).c_str());
  std::printf("  %-10s %12s   (%.1f GB)\n", "total", size_or_dash(r["total_bytes"]).c_str(),
              r["total_bytes"].get<double>() / 1e9);
  print_verdict(r);
  return verdict_status(r);
}

int cmd_train(const Argv& argv) {
  if (wants_help(argv)) {
    std::cout << kTrainHelp;
    return 0;
  }
  Args a(argv, {"model", "params", "layers", "hidden", "heads", "kv-heads", "head-dim", "intermediate", "vocab",
                "method", "optimizer", "precision", "lora-rank", "seq-len", "batch", "gpu", "vram"},
         {"json", "gradient-checkpointing"});
  if (!a.positionals().empty()) throw InputError(a.positionals()[0], "unexpected argument; see headroom train --help");
  json request = json::object();
  copy_flags(a, request, "train",
             {{"model", "model"}, {"params", "params"}, {"layers", "layers"}, {"hidden", "hidden"}, {"heads", "heads"},
              {"kv-heads", "kv_heads"}, {"head-dim", "head_dim"}, {"intermediate", "intermediate"}, {"vocab", "vocab"},
              {"method", "method"}, {"optimizer", "optimizer"}, {"precision", "precision"}, {"lora-rank", "lora_rank"},
              {"seq-len", "seq_len"}, {"batch", "batch"}, {"gpu", "gpu"}});
  if (a.has("gradient-checkpointing")) request["gradient_checkpointing"] = true;
  json r = call([&] { return api::train(request); });
  if (a.has("json")) {
    std::cout << r.dump(2) << "\n";
    return verdict_status(r);
  }
  std::printf("%s (%.2f B params), %s fine-tune, %s, %s, seq %lld x batch %lld%s\n",
              r["model"]["name"].get<std::string>().c_str(), r["params"].get<double>() / 1e9,
              r["method"].get<std::string>().c_str(), r["optimizer"].get<std::string>().c_str(),
              r["precision"].get<std::string>().c_str(), static_cast<long long>(r["seq_len"].get<std::int64_t>()),
              static_cast<long long>(r["batch"].get<std::int64_t>()),
              r["gradient_checkpointing"].get<bool>() ? ", gradient checkpointing" : "");
  if (r["method"] != "full") std::printf("  trainable parameters: %.1f M\n", r["trainable_params"].get<double>() / 1e6);
  for (const auto& c : r["components"])
    std::printf("  %-28s %12s\n", c["name"].get<std::string>().c_str(), size_or_dash(c["bytes"]).c_str());
  std::printf("  %-28s %12s   (%.1f GB)\n", "total", size_or_dash(r["total_bytes"]).c_str(),
              r["total_bytes"].get<double>() / 1e9);
  for (const auto& n : r["notes"]) std::cout << "  note: " << n.get<std::string>() << "\n";
  print_verdict(r);
  return verdict_status(r);
}

}  // namespace headroom::cli
