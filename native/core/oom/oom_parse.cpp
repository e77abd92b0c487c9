#include "core/oom/oom_parse.hpp"

#include <algorithm>

#include "core/oom/oom_recognisers.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom {
namespace {

// ComfyUI prints its own lines around the exception; they tell which node failed and how much of
// the model it had to leave in RAM.
void comfyui_context(const std::string& n, Report& r) {
  static const char* kMarks[] = {"**Node Type:**", "!!! Exception during processing !!!", "Requested to load ",
                                 "loaded partially", "loaded completely", "ComfyUI",
                                 "This error means you ran out of memory on your GPU"};
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
}

// The caller's "headroom-context: app=comfyui os=linux" line (see oom_parse.hpp): the last such line,
// removed from the text so no recogniser reads it. Unknown keys and values are ignored.
struct Context {
  std::string app, os;
};

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
    else if (key == "os" && (value == "linux" || value == "windows" || value == "macos"))
      c.os = value;
  }
  return c;
}

}  // namespace

Report parse(const std::string& input) {
  Report r;
  std::string text = input;
  const Context context = take_context(text);
  const std::string n = normalise(text);
  using Recogniser = bool (*)(const std::string&, Report&);
  // Most specific first: a vLLM or ComfyUI log may also contain a generic "OutOfMemoryError", and a
  // llama.cpp log a bare "CUDA error".
  static const Recogniser kOrder[] = {
      detail::mps,         detail::pytorch_caching, detail::pytorch_async,         detail::directml,
      detail::cpu_allocator, detail::vllm,          detail::llama_cpp,             detail::math_library,
      detail::gpu_runtime, detail::transformers_dispatch, detail::ollama_system_memory, detail::xla,
      detail::pytorch_generic,
  };
  for (Recogniser rec : kOrder) {
    Report candidate;
    if (rec(n, candidate)) {
      r = std::move(candidate);
      r.recognised = true;
      break;
    }
  }
  if (!r.recognised) return r;
  if (r.backend.empty()) {
    if (contains(n, "HIP out of memory") || contains(n, "ROCm")) r.backend = "rocm";
    else if (contains(n, "CUDA out of memory") || contains(n, "torch.cuda.")) r.backend = "cuda";
    else r.backend = "unknown";
  }
  if (r.app.empty()) {
    if (contains(n, "vllm") || contains(n, "vLLM") || contains(n, "VllmWorker")) r.app = "vllm";
    else if (contains(n, "llama runner process") || contains(n, "ollama")) r.app = "ollama";
  }
  comfyui_context(n, r);
  // What the text itself shows wins over what the caller says (a vLLM log pasted into ComfyUI's node).
  if (r.app.empty()) r.app = context.app;
  // Several training ranks on one machine: their CUDA contexts are a common "other process".
  if (contains(text, "DistributedDataParallel") || contains(text, "torch.distributed") || contains(text, "[rank") ||
      contains(text, "local_rank"))
    r.extra["distributed"] = true;
  // Windows paths in the traceback: expandable segments are unavailable there.
  if (contains(text, "\\site-packages\\") || contains(text, "C:\\") || contains(text, "python_embeded") ||
      contains(text, "ComfyUI_windows_portable"))
    r.os = "windows";
  if (r.os.empty()) r.os = context.os;
  if (r.os == "windows") r.extra["windows"] = true;
  for (auto& [k, v] : r.extra.items())
    if (v.is_string()) v = clean_utf8(v.get<std::string>());
  if (r.total_bytes && r.allocated_bytes && *r.allocated_bytes > *r.total_bytes && r.backend != "mps") {
    r.notes.push_back("PyTorch reports more allocated than the card holds: on Windows the driver's system-memory "
                      "fallback lets allocations spill into shared RAM (slow) before failing.");
  }
  if (r.total_bytes && r.free_bytes && *r.free_bytes > *r.total_bytes) {
    r.extra["free_bytes_invalid"] = true;
    r.notes.push_back("The free figure is larger than the total: the driver's free count underflowed (seen on "
                      "ROCm APUs with shared memory), so it carries no information.");
  }
  return r;
}

}  // namespace headroom::oom
