// Recognisers for the failures ComfyUI users meet without a "CUDA out of memory" line: comfy-aimdo's
// errors under dynamic VRAM, the system ending the process (the Linux OOM killer, earlyoom, a shell's
// "Killed"), the Windows portable closing after "Requested to load", and ComfyUI's own lines around a
// caught out-of-memory error. Each text is quoted from the code that prints it; where it was read is
// noted next to it.
#include <cctype>
#include <cstring>
#include <utility>

#include "core/oom/oom_recognisers.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom::detail {
namespace {

constexpr std::size_t npos = std::string::npos;

bool starts_at(const std::string& s, std::size_t pos, const char* t) {
  return s.compare(pos, std::strlen(t), t) == 0;
}

// comfy-aimdo ships a CUDA and a ROCm library (comfy_aimdo/aimdo.so, aimdo_rocm.so in the 0.6.0 wheel);
// the text names the second only through ROCm/HIP words.
Backend aimdo_backend(const std::string& n) {
  if (contains(n, "ROCm") || contains(n, "rocm") || contains(n, "HIP") || contains(n, "hipError")) return Backend::Rocm;
  if (contains(n, "CUDA") || contains(n, "cuda") || contains(n, "cuMem")) return Backend::Cuda;
  return Backend::Unknown;
}

// Lower-case words after `pos` ("device not ready"), stopping at a word that ends in ':' (the next log
// line's "aimdo:") or anything that is not a word: CUDA's error strings are plain lower-case words.
std::string error_words(const std::string& n, std::size_t pos) {
  std::string out;
  std::size_t i = pos;
  for (int words = 0; words < 8 && i < n.size(); ++words) {
    std::size_t j = i;
    while (j < n.size() && std::islower(static_cast<unsigned char>(n[j]))) ++j;
    if (j == i || (j < n.size() && n[j] != ' ')) break;
    out += (out.empty() ? "" : " ") + n.substr(i, j - i);
    i = j + 1;
  }
  return out;
}

// The driver call that failed under comfy-aimdo and its error: "CUDA API FAILED (600): err =
// cuMemSetAccess(vaddr, size, &accessDesc, 1): device not ready" (Comfy-Org/ComfyUI#12943, comment of
// 2026-08-09), or the 0.2.x spelling "CUDA API FAILED : err = cuMemSetAccess(...) : device not ready"
// (same issue, 2026-03-14). comfy-aimdo 0.6.0's library prints "CUDA API FAILED (%d): %s: %s".
void cuda_api_failure(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "CUDA API FAILED");
  if (p == npos) return;
  std::size_t eq = n.find("err = ", p);
  if (eq == npos || eq - p > 40) return;
  std::size_t b = eq + 6, e = b;
  while (e < n.size() && e - b < 64 && (std::isalnum(static_cast<unsigned char>(n[e])) || n[e] == '_')) ++e;
  if (e == b) return;
  r.extra["cuda_api"] = n.substr(b, e - b);
  if (std::size_t open = n.find('(', p); open < eq) {
    if (auto code = read_uint(n, open + 1)) r.extra["cuda_error_code"] = *code;
  }
  std::size_t close = n.find(')', e);
  if (close == npos || close - e > 200) return;
  std::size_t i = close + 1;
  while (i < n.size() && (n[i] == ' ' || n[i] == ':')) ++i;
  std::string words = error_words(n, i);
  if (!words.empty()) r.extra["cuda_error"] = words;
}

void aimdo_common(const std::string& n, Report& r, const char* format, const char* error) {
  r.format = format;
  r.origin = "comfy-aimdo";
  r.app = "comfyui";  // comfy-aimdo is ComfyUI's dynamic VRAM allocator
  r.backend = aimdo_backend(n);
  r.extra["aimdo_error"] = error;
  r.extra["comfy_dynamic_vram"] = true;
}

// "Fault failed: 2" with an integer code and nothing word-like glued to it: other programs print
// "Fault failed: <reason text>", which is not comfy-aimdo's.
bool fault_failed(const std::string& n) {
  for (std::size_t p = rfind_str(n, "Fault failed: "); p != npos; p = p ? rfind_str(n, "Fault failed: ", p - 1) : npos) {
    std::size_t end = 0;
    if (!read_uint(n, p + 14, &end)) continue;
    if (end >= n.size() || !std::isalnum(static_cast<unsigned char>(n[end]))) return true;
  }
  return false;
}

// The process name and resident size the kernel prints: "Out of memory: Killed process 1440763 (perl)
// total-vm:87033376kB, anon-rss:60356340kB, ..." (equinor/ert#7797, 2024-04-29).
void killed_process(const std::string& n, std::size_t p, std::size_t skip, Report& r) {
  std::size_t end = 0;
  if (auto pid = read_uint(n, p + skip, &end)) {
    r.extra["killed_pid"] = *pid;
    if (end + 2 < n.size() && n[end] == ' ' && n[end + 1] == '(') {
      std::size_t close = n.find(") ", end + 2);
      if (close == npos) close = n.find(')', end + 2);
      if (close != npos && close - end < 80) r.extra["killed_process"] = n.substr(end + 2, close - end - 2);
    }
  }
  std::size_t rss = n.find("anon-rss:", p);
  if (rss != npos && rss - p < 300) {
    if (auto s = read_size(n, rss + 9); s && s->bytes) r.extra["killed_rss_bytes"] = *s->bytes;
  }
}

bool kernel_oom_killer(const std::string& n, Report& r) {
  // "Out of memory: Killed process N (name)" (kernel >= 5.x), "Out of memory: Kill process N (name) score S
  // or sacrifice child" then "Killed process N (name) total-vm:..." (older kernels,
  // intel/platform-resource-manager#42, 2019-03-14), "Memory cgroup out of memory: Killed process" (a
  // container's limit), "<comm> invoked oom-killer:" and "oom-kill:constraint=" (equinor/ert#7797).
  std::size_t head = rfind_str(n, "ut of memory: Kill");
  bool invoked = contains(n, " invoked oom-killer") || contains(n, "oom-kill:constraint=");
  if (head == npos && !invoked) return false;
  r.format = "linux_oom_killer";
  r.extra["killed_by"] = "kernel";
  if (std::size_t k = rfind_str(n, "Killed process "); k != npos && (head == npos || k + 400 > head))
    killed_process(n, k, 15, r);
  else if (head != npos && starts_at(n, head, "ut of memory: Kill process "))
    killed_process(n, head, 27, r);
  if (contains(n, "Memory cgroup out of memory")) r.extra["cgroup_limit"] = true;
  return true;
}

bool earlyoom(const std::string& n, Report& r) {
  // earlyoom's journal lines (Comfy-Org/ComfyUI#15276, 2026-08-04): "low memory! at or below SIGTERM limits:
  // mem 3.00%, swap 10.00%", "sending SIGTERM to process 322603 uid 1000 "python3.13": oom_score 1282,
  // VmRSS 29931 MiB, cmdline ...", and "mem avail: 105 of 30236 MiB ( 0.35%), swap free: ...".
  if (!contains(n, "low memory!")) return false;
  std::size_t p = rfind_str(n, "sending SIGKILL to process ");
  if (p == npos) p = rfind_str(n, "sending SIGTERM to process ");
  if (p == npos) return false;
  r.format = "earlyoom";
  r.extra["killed_by"] = "earlyoom";
  std::size_t end = 0;
  if (auto pid = read_uint(n, p + 27, &end)) r.extra["killed_pid"] = *pid;
  if (std::size_t q = n.find('"', p); q != npos && q - p < 80) {
    std::size_t q2 = n.find('"', q + 1);
    if (q2 != npos && q2 - q < 80) r.extra["killed_process"] = n.substr(q + 1, q2 - q - 1);
  }
  if (std::size_t v = n.find("VmRSS ", p); v != npos && v - p < 200) {
    if (auto s = read_size(n, v + 6); s && s->bytes) r.extra["killed_rss_bytes"] = *s->bytes;
  }
  // "mem avail: 105 of 30236 MiB": the unit is printed once, after the total. earlyoom prints it now and
  // then, before or after the kill; the last one is the nearest to the end.
  if (std::size_t a = rfind_str(n, "mem avail: "); a != npos) {
    std::size_t e1 = 0;
    auto avail = read_uint(n, a + 11, &e1);
    auto total_count = avail && starts_at(n, e1, " of ") ? read_uint(n, e1 + 4) : std::nullopt;
    auto total = total_count ? read_size(n, e1 + 4) : std::nullopt;
    if (total && total->bytes && *total_count > 0 && *avail <= *total_count) {
      r.extra["host_ram_available_bytes"] = *avail * (*total->bytes / *total_count);
      r.extra["host_ram_total_bytes"] = *total->bytes;
    }
  }
  return true;
}

// A shell's report that the process died of SIGKILL, as the last line of the text: "Killed"
// (kijai/ComfyUI-WanVideoWrapper#20, 2025-02-26), bash running a script "entrypoint.sh: line 42: 8 Killed
// python3 ./ComfyUI/main.py ..." (Comfy-Org/ComfyUI#3430, 2024-05-08), bash job control "[1]+ Killed ...",
// zsh "zsh: killed ...", and macOS bash "Killed: 9".
bool killed_line(const std::string& line) {
  if (line == "Killed" || line == "Killed: 9" || line.rfind("zsh: killed ", 0) == 0) return true;
  std::size_t k = line.find(" Killed ");
  if (k == npos) return false;
  std::size_t b = k;
  while (b > 0 && line[b - 1] != ' ') --b;
  std::string before = line.substr(b, k - b);
  if (!before.empty() && before.front() == '[' && (before.back() == '+' || before.back() == '-' || before.back() == ']'))
    return true;
  bool pid = !before.empty() && before.find_first_not_of("0123456789") == npos;
  return pid && line.find(": line ") != npos && line.find(": line ") < b;
}

}  // namespace

bool system_kill(const std::string& raw, const std::string& n, Report& r) {
  if (kernel_oom_killer(n, r) || earlyoom(n, r)) {
    r.origin = "os";
    r.backend = Backend::Cpu;
    r.os = System::Linux;  // the OOM killer and earlyoom exist only there
    return true;
  }
  // Ollama reports its runner's exit status: "signal: killed" is SIGKILL, which a runner that loads a model
  // gets from the OOM killer (ollama/ollama#788, 2024-07-11: "when it reached the max(24G), it immediately be
  // killed"). The wording is llm/server.go's "llama runner process has terminated: %v".
  if (contains(n, "llama runner process has terminated: signal: killed")) {
    r.format = "process_killed";
    r.origin = "os";
    r.backend = Backend::Cpu;
    r.app = "ollama";
    r.extra["killed_by"] = "signal";
    r.extra["killed_process"] = "llama runner";
    return true;
  }
  std::size_t e = raw.size();
  while (e > 0 && std::isspace(static_cast<unsigned char>(raw[e - 1]))) --e;
  std::size_t b = raw.rfind('\n', e == 0 ? 0 : e - 1);
  b = b == npos ? 0 : b + 1;
  if (e <= b || e - b > 400) return false;
  if (!killed_line(normalise(raw.substr(b, e - b)))) return false;
  r.format = "process_killed";
  r.origin = "os";
  r.backend = Backend::Cpu;
  r.extra["killed_by"] = "signal";
  return true;
}

bool windows_silent_exit(const std::string& n, Report& r) {
  // The portable's run_nvidia_gpu.bat ends in `pause`, so a process that died prints nothing more than
  // the prompt's "...>pause" and "Press any key to continue . . .": "Requested to load WanVAE" then
  // "C:\GenBot\ComfyUI_windows_portable>pause" (Comfy-Org/ComfyUI#10542, 2025-10-30, the maintainer's
  // first question "how much ram do you have?").
  std::size_t end = n.size();
  bool paused = false;
  for (const char* tail : {"Press any key to continue . . .", "Press any key to continue..."}) {
    std::size_t len = std::strlen(tail);
    if (end >= len && n.compare(end - len, len, tail) == 0) {
      end -= len;
      while (end > 0 && n[end - 1] == ' ') --end;
      paused = true;
    }
  }
  if (end >= 6 && n.compare(end - 6, 6, ">pause") == 0) paused = true;
  if (!paused) return false;
  // The last model load ComfyUI announced, with nothing after it that reports an error.
  std::size_t load = npos;
  for (const char* m : {"Requested to load ", "prepared for dynamic VRAM loading", "loaded completely", "loaded partially"}) {
    std::size_t p = rfind_str(n, m);
    if (p != npos && (load == npos || p > load)) load = p;
  }
  if (load == npos) return false;
  const std::string tail = n.substr(load, end - load);
  for (const char* err : {"Traceback (most recent call last)", "!!! Exception during processing", "Error:", "Exception:",
                          "error:", "Errno"})
    if (contains(tail, err)) return false;
  r.format = "windows_silent_exit";
  r.origin = "os";
  r.backend = Backend::Cpu;
  r.app = "comfyui";
  r.os = System::Windows;
  return true;
}

bool comfy_aimdo(const std::string& n, Report& r) {
  // comfy_aimdo/host_buffer.py (comfy-aimdo 0.6.0 wheel, commit g68088de9d): the pinned host buffers that
  // stage weights for the GPU. "HostBuffer.read_file_slice failed" is the one users hit (Comfy-Org/ComfyUI
  // #14250, 2026-06-03; #15255, 2026-08).
  static const char* kHost[] = {"HostBuffer.read_file_slice failed", "HostBuffer allocation failed",
                                "HostBuffer.extend failed", "HostBuffer.register failed"};
  for (const char* k : kHost)
    if (contains(n, k)) {
      aimdo_common(n, r, "aimdo_host_buffer", k);
      return true;
    }
  // Virtual address space for a model (VBAR) or the cast buffers: comfy_aimdo/model_vbar.py raises
  // MemoryError("VBAR allocation failed") when the library's cuMemAddressReserve fails (its log: "Could not
  // reseve Virtual Address space for VBAR", spelt so in the library; comfy-aimdo#25, 2026-03-31; Comfy-Org/
  // ComfyUI#16225, 2026-09-10) and MemoryError("VBAR OOM") when a model outgrows its reservation;
  // comfy_aimdo/vram_buffer.py raises RuntimeError("VRAM reservation failed") (comfy-aimdo#49, 2026-05-12).
  static const char* kReserve[] = {"VBAR allocation failed", "Could not reseve Virtual Address space for VBAR",
                                   "VRAM reservation failed", "VBAR OOM"};
  for (const char* k : kReserve)
    if (contains(n, k)) {
      aimdo_common(n, r, "aimdo_vbar_reserve", contains(n, "VBAR allocation failed") ? "VBAR allocation failed" : k);
      return true;
    }
  // A weight that could not be mapped for a reason other than a shortage: model_vbar.py's
  // RuntimeError(f"Fault failed: {res}") for VBAR_FAULT_ERROR (2), after the library's "VRAM Allocation
  // failed (non OOM)" (Comfy-Org/ComfyUI#15269, 2026-08-03; comfy-aimdo#100, 2026-08-31).
  if (fault_failed(n) || contains(n, "VRAM Allocation failed (non OOM)")) {
    aimdo_common(n, r, "aimdo_fault", fault_failed(n) ? "Fault failed" : "VRAM Allocation failed (non OOM)");
    cuda_api_failure(n, r);
    return true;
  }
  // vram_buffer.py: RuntimeError(f"VRAM grow failed: {required_size} bytes"), the cast buffer could not be
  // backed with VRAM even after comfy-aimdo evicted what it could.
  if (std::size_t p = rfind_str(n, "VRAM grow failed: "); p != npos) {
    aimdo_common(n, r, "aimdo_vram_grow", "VRAM grow failed");
    if (auto s = read_size(n, p + 18); s && s->bytes) r.requested_bytes = s->bytes;
    return true;
  }
  return false;
}

bool comfyui_caught_oom(const std::string& n, Report& r) {
  // execution.py (Comfy-Org/ComfyUI@cb707e9c): for a torch.cuda.OutOfMemoryError it appends "This error
  // means you ran out of memory on your GPU.\n\nTIPS: If the workflow worked before you might have
  // accidentally set the batch_size to a large number." to the message and logs "Got an OOM, unloading all
  // loaded models." — the only trace left when the exception line itself was not copied.
  if (contains(n, "This error means you ran out of memory on your GPU") ||
      contains(n, "Got an OOM, unloading all loaded models")) {
    r.format = "comfyui_oom_hint";
    r.origin = "pytorch";
    r.app = "comfyui";
    r.backend = contains(n, "HIP") || contains(n, "ROCm") ? Backend::Rocm : contains(n, "CUDA") ? Backend::Cuda : Backend::Unknown;
    return true;
  }
  // comfy/sd.py VAE.decode / VAE.encode (Comfy-Org/ComfyUI@033046cc): "Warning: Ran out of memory when
  // regular VAE decoding, retrying with tiled VAE decoding." after a caught out-of-memory error on the whole
  // frame; 2023 releases said "regular decoding" (Acly/krita-ai-diffusion#86, 2023-11-20). Alone it is a
  // warning, not a failure.
  static const std::pair<const char*, const char*> kRetries[] = {
      {"Ran out of memory when regular VAE decoding, retrying with tiled", "decode"},
      {"Ran out of memory when regular decoding, retrying with tiled", "decode"},
      {"Ran out of memory when regular VAE encoding, retrying with tiled", "encode"}};
  for (const auto& [mark, stage] : kRetries) {
    if (!contains(n, mark)) continue;
    r.format = "comfyui_vae_tiled_retry";
    r.origin = "pytorch";
    r.app = "comfyui";
    r.backend = contains(n, "HIP") || contains(n, "ROCm") ? Backend::Rocm : contains(n, "CUDA") ? Backend::Cuda : Backend::Unknown;
    r.extra["vae_stage"] = stage;
    return true;
  }
  return false;
}

}  // namespace headroom::oom::detail
