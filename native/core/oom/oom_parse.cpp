#include "core/oom/oom_parse.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/oom/oom_recognisers.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom {
namespace {

// ComfyUI prints its own lines around the exception; they tell which node failed, how much of the
// model it had to leave in RAM, and which loader ran.
void comfyui_context(const std::string& n, Report& r) {
  static const char* kMarks[] = {"**Node Type:**", "!!! Exception during processing !!!", "Requested to load ",
                                 "loaded partially", "loaded completely", "ComfyUI",
                                 "This error means you ran out of memory on your GPU",
                                 "Got an OOM, unloading all loaded models", "prepared for dynamic VRAM loading",
                                 "DynamicVRAM support", "comfy_aimdo", "got prompt", "retrying with tiled VAE"};
  bool comfy = false;
  for (const char* m : kMarks) comfy = comfy || contains(n, m);
  if (!comfy) return;
  if (r.app.empty()) r.app = "comfyui";
  if (std::size_t p = rfind_str(n, "**Node Type:** "); p != std::string::npos) {
    std::size_t e = p + 15;
    while (e < n.size() && n[e] != ' ' && e - p < 120) ++e;
    r.extra["comfy_node"] = n.substr(p + 15, e - p - 15);
  }
  if (std::size_t p = rfind_str(n, "loaded partially; "); p != std::string::npos) {
    // "loaded partially; 4910.36 MB usable, 4910.36 MB loaded, 2888.31 MB offloaded" (ComfyUI's MB
    // are MiB: model_management divides by 1024 * 1024).
    static const struct {
      const char* label;
      const char* key;
    } kParts[] = {{" usable", "comfy_usable_bytes"}, {" loaded", "comfy_loaded_bytes"}, {" offloaded", "comfy_offloaded_bytes"}};
    std::size_t q = p + 18;
    for (const auto& part : kParts) {
      auto s = read_size(n, q);
      if (!s || n.compare(s->end, std::char_traits<char>::length(part.label), part.label) != 0) break;
      if (s->bytes) r.extra[part.key] = *s->bytes;
      q = s->end + std::char_traits<char>::length(part.label);
      if (q < n.size() && n[q] == ',') ++q;
    }
  }
  if (std::size_t p = rfind_str(n, "Requested to load "); p != std::string::npos) {
    std::size_t e = p + 18;
    while (e < n.size() && n[e] != ' ' && e - p < 120) ++e;
    r.extra["comfy_model"] = n.substr(p + 18, e - p - 18);
  }
  // Which loader ran. Dynamic VRAM's lines: "Model QwenImage prepared for dynamic VRAM loading. 19483MB
  // Staged." (comfy/model_patcher.py; Comfy-Org/ComfyUI#15269), main.py's "DynamicVRAM support detected and
  // enabled", comfy-aimdo's own "aimdo:" log lines and frames. The legacy loader: main.py's "... Falling back
  // to legacy ModelPatcher" (both in main.py, Comfy-Org/ComfyUI@02018c7e) or the flag on the command line.
  if (std::size_t p = rfind_str(n, " prepared for dynamic VRAM loading. "); p != std::string::npos) {
    r.extra["comfy_dynamic_vram"] = true;
    std::size_t m = rfind_str(n, "Model ", p);
    if (m != std::string::npos && p - m < 128) r.extra["comfy_staged_model"] = n.substr(m + 6, p - m - 6);
    auto staged = read_size(n, p + 36);
    if (staged && staged->bytes && n.compare(staged->end, 7, " Staged") == 0) r.extra["comfy_staged_bytes"] = *staged->bytes;
  } else if (contains(n, "DynamicVRAM support detected and enabled") || contains(n, "comfy_aimdo") ||
             contains(n, "aimdo: ") || contains(n, "_with_vbar")) {
    r.extra["comfy_dynamic_vram"] = true;
  } else if (contains(n, "Falling back to legacy ModelPatcher") || contains(n, "--disable-dynamic-vram") ||
             contains(n, "loaded partially") || contains(n, "loaded completely")) {
    // The legacy loader's "loaded partially; ... offloaded" lines, with no dynamic VRAM line anywhere: under
    // dynamic VRAM only models it cannot stage (GGUF) print them, next to the staged ones' lines.
    r.extra["comfy_dynamic_vram"] = false;
  }
  // comfy/sd.py's tiled retry ran before this error: the tiles did not fit either.
  if (r.format != "comfyui_vae_tiled_retry" && (contains(n, "Ran out of memory when regular VAE decoding, retrying with tiled") ||
                                                 contains(n, "Ran out of memory when regular decoding, retrying with tiled")))
    r.extra["comfy_vae_tiled_retry"] = true;
}

// The caller's "headroom-context: app=comfyui os=linux" line (see oom_parse.hpp): the last such line,
// removed from the text so no recogniser reads it. Unknown keys and values are ignored.
struct Context {
  std::string app;
  System os = System::None;
  std::optional<bool> dynamic_loader;  // which ComfyUI loader the caller saw running (loader=dynamic|legacy)
  std::string run;     // unfinished: the previous run ended without an error (the run recorder's report)
  std::string stage;   // the stage that run was in
  std::optional<std::uint64_t> ram_available, ram_total;  // system RAM at its last record, bytes
};

// The context line's loader word: true for dynamic VRAM, false for the legacy loader, nullopt otherwise.
std::optional<bool> loader_is_dynamic(const std::string& word) {
  static const std::pair<const char*, bool> kLoaders[] = {{"dynamic", true}, {"legacy", false}};
  for (const auto& [name, dynamic] : kLoaders)
    if (word == name) return dynamic;
  return std::nullopt;
}

bool is_word_value(const std::string& v) {
  if (v.empty() || v.size() > 64) return false;
  for (char c : v)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

Context take_context(std::string& text) {
  static const char kTag[] = "headroom-context:";
  Context c;
  std::size_t p = rfind_str(text, kTag);
  if (p == std::string::npos || (p > 0 && text[p - 1] != '\n')) return c;
  std::size_t e = text.find('\n', p);
  if (e == std::string::npos) e = text.size();
  std::string line = text.substr(p + sizeof(kTag) - 1, std::min<std::size_t>(e - p, 400) - (sizeof(kTag) - 1));
  text.erase(p, e - p);
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    std::string token = line.substr(i, j - i);
    i = j;
    std::size_t eq = token.find('=');
    if (eq == std::string::npos) continue;
    std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "app" && (value == "comfyui" || value == "vllm" || value == "llama.cpp" || value == "ollama"))
      c.app = value;
    else if (key == "os" && system_from_name(value))
      c.os = *system_from_name(value);
    else if (key == "loader" && loader_is_dynamic(value))
      c.dynamic_loader = loader_is_dynamic(value);
    else if (key == "run" && value == "unfinished")
      c.run = value;
    else if (key == "stage" && is_word_value(value))
      c.stage = value;
    else if ((key == "ram_available" || key == "ram_total") && !value.empty() && value.size() <= 20 &&
             value.find_first_not_of("0123456789") == std::string::npos) {
      std::size_t end = 0;
      auto v = read_uint(value, 0, &end);
      if (v && end == value.size()) (key == "ram_available" ? c.ram_available : c.ram_total) = v;
    }
  }
  if (c.ram_available && c.ram_total && *c.ram_available > *c.ram_total) c.ram_available.reset();
  return c;
}

// The first recogniser that knows the text, the system's kill and an unfinished run first.
Report recognise(const std::string& text, const std::string& n, const Context& context) {
  Report r;
  using Recogniser = bool (*)(const std::string&, Report&);
  // Most specific first: a vLLM or ComfyUI log may also contain a generic "OutOfMemoryError", and a
  // llama.cpp log a bare "CUDA error".
  // comfy-aimdo's pinned-buffer and fault errors come first: a "CUDA error: out of memory" that follows
  // them is ComfyUI cleaning up after the failure (Comfy-Org/ComfyUI#14250). ComfyUI's own hint lines come
  // last: they only repeat that PyTorch ran out.
  static const Recogniser kOrder[] = {
      detail::windows_silent_exit, detail::comfy_aimdo,   detail::mps,         detail::pytorch_caching,
      detail::pytorch_async,       detail::directml,      detail::cpu_allocator, detail::vllm,
      detail::llama_cpp,           detail::math_library,  detail::cudnn_no_algorithm, detail::gpu_runtime,
      detail::transformers_dispatch, detail::ollama_system_memory, detail::ollama_runner_exited, detail::xla,
      detail::pytorch_generic,     detail::comfyui_caught_oom,
  };
  // The system ending the process is the last thing that happened to it, whatever the log says before.
  if (Report killed; detail::system_kill(text, n, killed)) {
    r = std::move(killed);
    r.recognised = true;
  } else if (context.run == "unfinished") {
    // The run recorder found a run that never finished. ComfyUI reports an error it catches and goes on,
    // so an error in the log's tail belongs to an earlier run: the caller's report is the message, unless
    // the tail shows how the process ended.
    if (!detail::windows_silent_exit(n, r)) {
      r.format = "comfyui_unfinished_run";
      r.origin = "os";
      r.backend = Backend::Cpu;
      r.app = "comfyui";
    }
    r.recognised = true;
  }
  for (Recogniser rec : kOrder) {
    if (r.recognised) break;
    Report candidate;
    if (rec(n, candidate)) {
      r = std::move(candidate);
      r.recognised = true;
    }
  }
  return r;
}

// What the context and the text's own words add: the stage, host RAM, the backend and the app.
void add_context(const std::string& n, const Context& context, Report& r) {
  if (!context.stage.empty() && context.run == "unfinished") r.extra["comfy_stage"] = context.stage;
  if (context.ram_total && !r.extra.contains("host_ram_total_bytes")) {
    r.extra["host_ram_total_bytes"] = *context.ram_total;
    if (context.ram_available) r.extra["host_ram_available_bytes"] = *context.ram_available;
  }
  if (r.backend == Backend::None) {
    if (contains(n, "HIP out of memory") || contains(n, "ROCm")) r.backend = Backend::Rocm;
    else if (contains(n, "CUDA out of memory") || contains(n, "torch.cuda.")) r.backend = Backend::Cuda;
    else r.backend = Backend::Unknown;
  }
  if (r.app.empty()) {
    if (contains(n, "vllm") || contains(n, "vLLM") || contains(n, "VllmWorker")) r.app = "vllm";
    else if (contains(n, "llama runner process") || contains(n, "ollama")) r.app = "ollama";
  }
}

// Distributed ranks, the OS, then the figures that do not agree with each other.
void add_host_signs(const std::string& text, const Context& context, Report& r) {
  // Several training ranks on one machine: their CUDA contexts are a common "other process".
  if (contains(text, "DistributedDataParallel") || contains(text, "torch.distributed") || contains(text, "[rank") ||
      contains(text, "local_rank"))
    r.extra["distributed"] = true;
  // Windows paths in the traceback: expandable segments are unavailable there.
  if (contains(text, "\\site-packages\\") || contains(text, "C:\\") || contains(text, "python_embeded") ||
      contains(text, "ComfyUI_windows_portable"))
    r.os = System::Windows;
  if (r.os == System::None) r.os = context.os;
  if (r.os == System::Windows) r.extra["windows"] = true;
  for (auto& [k, v] : r.extra.items())
    if (v.is_string()) v = clean_utf8(v.get<std::string>());
  if (r.total_bytes && r.allocated_bytes && *r.allocated_bytes > *r.total_bytes && r.backend != Backend::Mps) {
    r.notes.push_back("PyTorch reports more allocated than the card holds: on Windows the driver's system-memory "
                      "fallback lets allocations spill into shared RAM (slow) before failing.");
  }
  if (r.total_bytes && r.free_bytes && *r.free_bytes > *r.total_bytes) {
    r.extra["free_bytes_invalid"] = true;
    r.notes.push_back("The free figure is larger than the total: the driver's free count underflowed (seen on "
                      "ROCm APUs with shared memory), so it carries no information.");
  }
}

}  // namespace

Report parse(const std::string& input) {
  std::string text = input;
  const Context context = take_context(text);
  const std::string n = normalise(text);
  Report r = recognise(text, n, context);
  if (!r.recognised) return r;
  add_context(n, context, r);
  comfyui_context(n, r);
  // What the text itself shows wins over what the caller says (a vLLM log pasted into ComfyUI's node).
  if (r.app.empty()) r.app = context.app;
  if (context.dynamic_loader && !r.extra.contains("comfy_dynamic_vram") && r.app == "comfyui")
    r.extra["comfy_dynamic_vram"] = *context.dynamic_loader;
  add_host_signs(text, context, r);
  return r;
}

}  // namespace headroom::oom
