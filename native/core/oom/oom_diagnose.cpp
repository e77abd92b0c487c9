#include "core/oom/oom_diagnose.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"

namespace headroom::oom {
namespace {

using u64 = std::uint64_t;

// A CUDA context with cuBLAS/cuDNN handles takes ~0.5 GiB outside PyTorch's allocator: oom-001
// (L40S) shows 44.43 GiB in use by the process against 43.93 + 0.02 GiB held by PyTorch. Memory
// outside PyTorch beyond this margin points at something else on the card.
constexpr u64 kContextMargin = 3 * GiB / 2;

std::string b(u64 bytes) { return format_bytes(bytes); }

std::string getu(const Report& r, const char* key) {
  if (!r.extra.contains(key)) return "";
  const auto& v = r.extra[key];
  if (v.is_number_unsigned() || v.is_number_integer()) return std::to_string(v.get<u64>());
  return "";
}

std::string node(const Report& r) { return text_of(r.extra, "comfy_node"); }

std::string alloc_conf_var(const Report& r) {
  return r.backend == Backend::Rocm ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}

std::string smi(const Report& r) { return r.backend == Backend::Rocm ? "rocm-smi --showpids" : "nvidia-smi"; }

bool comfy(const Report& r) { return r.app == "comfyui"; }

std::string gets(const Report& r, const char* key) { return text_of(r.extra, key); }

std::optional<u64> getn(const Report& r, const char* key) {
  if (!r.extra.contains(key)) return std::nullopt;
  const auto& v = r.extra[key];
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)) return v.get<u64>();
  return std::nullopt;
}

// Which ComfyUI loader ran, as the log or the caller says (oom_parse.cpp comfyui_context): dynamic VRAM
// (comfy-aimdo, the default since 0.15), the legacy estimate-based loader, or unknown.
bool dynamic_vram(const Report& r) {
  return r.extra.contains("comfy_dynamic_vram") && r.extra["comfy_dynamic_vram"].is_boolean() &&
         r.extra["comfy_dynamic_vram"].get<bool>();
}
bool legacy_loader(const Report& r) {
  return r.extra.contains("comfy_dynamic_vram") && r.extra["comfy_dynamic_vram"].is_boolean() &&
         !r.extra["comfy_dynamic_vram"].get<bool>();
}

// The allocator settings exist on Linux only ("expandable_segments not supported on this platform" on
// Windows; PyTorch's CUDA caching allocator docs). Unknown OS: offer it, and say where it works.
bool expandable_segments_apply(const Report& r) { return r.os != System::Windows && r.os != System::Macos; }
bool on_linux(const Report& r) { return r.os == System::Linux; }

// ---- the texts (native/data/oom_fixes.json) ----

constexpr const char* kTextsFile = "oom_fixes.json";

// Every key the rules below use, so a missing or misspelt one fails at load, not mid-diagnosis.
const char* const kDiagnosisKeys[] = {
    "system_ram", "system_ram.while_allocating", "kv_cache_too_large.vllm_no_cache_blocks",
    "kv_cache_too_large.vllm", "kv_cache_too_large.vllm_max_len", "kv_cache_too_large.vllm_fits",
    "kv_cache_too_large.llama_cpp", "kv_cache_too_large.llama_cpp_one_buffer", "request_larger_than_card",
    "request_larger_than_card.mps", "request_larger_than_card.unexpected_shape", "other_process.vllm_startup",
    "other_process.vllm_startup_free_of_total", "other_process.processes", "other_process.processes_would_fit",
    "other_process.outside", "other_process.outside_would_fit", "fragmentation", "fragmentation.more_than",
    "out_of_memory.with_free", "out_of_memory.without_free", "out_of_memory.limit_card", "out_of_memory.limit_mps",
    "out_of_memory.held_reserved", "out_of_memory.held_allocated", "out_of_memory.library",
    "out_of_memory.no_figures", "system_ram.killed", "system_ram.killed_who", "system_ram.killed_name",
    "system_ram.killed_rss", "system_ram.by_kernel", "system_ram.by_cgroup", "system_ram.by_earlyoom",
    "system_ram.by_signal", "system_ram.silent_exit", "system_ram.silent_exit_model", "system_ram.unfinished",
    "system_ram.unfinished_stage", "system_ram.unfinished_ram", "system_ram.unfinished_ram_ok", "pinned_memory",
    "pinned_memory.read_file_slice",
    "pinned_memory.cuda_pin", "dynamic_vram_address_space", "dynamic_vram_fault", "dynamic_vram_fault.cuda",
    "freed_before_report", "pytorch_limit", "pytorch_limit.free", "vae_tiled_retry", "vae_tiled_retry.decode", "vae_tiled_retry.encode",
    "out_of_memory.dynamic", "out_of_memory.dynamic_staged", "out_of_memory.dynamic_grow",
    "out_of_memory.comfy_hint", "out_of_memory.cudnn_no_algorithm", "out_of_memory.ollama_runner"};
const char* const kFixKeys[] = {
    "free_ram", "comfy_ram_growth", "smaller_quant", "smaller_shape.failed_step",
    "vllm_gpu_memory_utilization.raise", "vllm_quantised_weights", "vllm_smaller_batch.profiling",
    "vllm_tensor_parallel", "vllm_max_model_len", "vllm_max_model_len.unknown",
    "vllm_gpu_memory_utilization.toward", "vllm_gpu_memory_utilization.toward_now", "vllm_kv_cache_fp8",
    "vllm_kv_cache_fp8.tokens", "vllm_tensor_parallel.or_quantised", "headroom_llm",
    "llama_cpp_smaller_context.short", "llama_cpp_kv_quant", "llama_cpp_ubatch", "llama_cpp_pipeline_copies",
    "llama_cpp_fewer_gpu_layers.short", "smaller_shape.tensor", "memory_efficient_attention",
    "comfy_tiled_decode.if_decode", "mps_watermark.prefer_smaller", "close_other_processes.vllm",
    "vllm_gpu_memory_utilization.lower_to_free", "close_other_processes.pids", "close_other_processes.check",
    "one_rank_per_gpu", "pick_idle_gpu.comfy", "pick_idle_gpu", "expandable_segments.comfy", "expandable_segments",
    "expandable_segments.linux_only", "max_split_size.comfy", "max_split_size", "comfy_cuda_malloc",
    "comfy_restart", "empty_cache", "comfy_reserve_vram.partial", "comfy_tiled_decode.replace",
    "comfy_fp8_weights", "smaller_shape.comfy", "comfy_gguf", "mps_watermark", "comfy_reserve_vram",
    "comfy_lowvram", "headroom_plan.preset", "headroom_plan.preflight", "llama_cpp_fewer_gpu_layers",
    "llama_cpp_smaller_quant", "llama_cpp_smaller_context", "smaller_model", "transformers_cpu_offload",
    "vllm_gpu_memory_utilization.shared", "vllm_smaller_batch", "vllm_enforce_eager", "cudnn_no_benchmark",
    "cublas_memory_full", "smaller_batch", "lower_precision", "no_grad_or_checkpointing", "free_ram.linux",
    "free_ram.windows", "comfy_disable_pinned_memory", "comfy_disable_pinned_memory.ram", "comfy_cuda_device",
    "comfy_cache_ram", "comfy_fast_disk", "comfy_smaller_weights", "comfy_update", "comfy_update.aimdo",
    "comfy_update.pin", "comfy_disable_dynamic_vram", "comfy_requeue", "comfy_requeue.transient",
    "comfy_restart.address_space", "comfy_vram_headroom", "comfy_disable_cuda_malloc", "comfy_tiled_decode.smaller",
    "comfy_tiled_decode.direct", "comfy_fast_autotune", "comfy_console_log", "pin_memory_off",
    "retry_after_empty_cache", "pytorch_native_allocator", "pytorch_memory_fraction", "pytorch_memory_fraction.comfy",
    "cudnn_disable"};

// The preset that answers "the job needs more than the card" (presets.json): the web toast offers the
// first fix naming a preset as a one-click button.
constexpr const char* kCardPreset = "fit this card";

using Texts = std::map<std::string, std::string>;

Texts load_section(const nlohmann::json& doc, const char* section, const char* const* keys, std::size_t n) {
  const std::string where = data_file_label(kTextsFile) + ": " + section;
  if (!doc.contains(section) || !doc[section].is_object()) throw Error(where + ": expected an object of texts by id");
  Texts t;
  for (const auto& kv : doc[section].items()) {
    if (!kv.value().is_string()) throw Error(where + "." + kv.key() + ": expected a text");
    t.emplace(kv.key(), kv.value().get<std::string>());
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!t.count(keys[i])) throw Error(where + ": missing the text '" + keys[i] + "'");
  for (const auto& kv : t)
    if (std::find_if(keys, keys + n, [&](const char* k) { return kv.first == k; }) == keys + n)
      throw Error(where + ": '" + kv.first + "' is not a text the diagnosis uses (a misspelt id?)");
  return t;
}

struct AllTexts {
  Texts diagnoses, fixes;
};

// "sources": where each text's facts come from, keyed by the text's key. A source for a key that is not a
// text is a stale citation (a renamed or removed text), so it fails the load like a misspelt text does.
void check_sources(const nlohmann::json& doc, const AllTexts& t) {
  if (!doc.contains("sources")) return;
  const std::string where = data_file_label(kTextsFile) + ": sources";
  if (!doc["sources"].is_object()) throw Error(where + ": expected an object of citations by text key");
  for (const auto& kv : doc["sources"].items()) {
    if (!kv.value().is_string() || kv.value().get<std::string>().empty())
      throw Error(where + "." + kv.key() + ": expected a citation text");
    if (!t.diagnoses.count(kv.key()) && !t.fixes.count(kv.key()))
      throw Error(where + ": '" + kv.key() + "' is not a diagnosis or fix text");
  }
}

AllTexts load_texts(const nlohmann::json& doc) {
  AllTexts t{load_section(doc, "diagnoses", kDiagnosisKeys, std::size(kDiagnosisKeys)),
             load_section(doc, "fixes", kFixKeys, std::size(kFixKeys))};
  check_sources(doc, t);
  return t;
}

const AllTexts& texts() {
  static const AllTexts t = load_texts(data_file(kTextsFile));
  return t;
}

using Vars = std::initializer_list<std::pair<const char*, std::string>>;

// The text of `key` with each {name} of `vars` filled in.
std::string fill(const Texts& from, const char* key, Vars vars) {
  auto it = from.find(key);
  if (it == from.end()) throw Error(std::string(kTextsFile) + ": missing the text '" + key + "'");
  std::string s = it->second;
  for (const auto& [name, value] : vars) {
    const std::string mark = std::string("{") + name + "}";
    for (std::size_t at = s.find(mark); at != std::string::npos; at = s.find(mark, at + value.size()))
      s.replace(at, mark.size(), value);
  }
  return s;
}

std::string text(const char* key, Vars vars = {}) { return fill(texts().diagnoses, key, vars); }
std::string fix_text(const char* key, Vars vars = {}) { return fill(texts().fixes, key, vars); }

// The fix of text `key`: its id is the key up to the variant's dot.
Fix fix(const char* key, Vars vars = {}, std::string preset = {}) {
  std::string id = key;
  if (auto dot = id.find('.'); dot != std::string::npos) id.resize(dot);
  return Fix(id, fix_text(key, vars), std::move(preset));
}

// ---- fixes for the general case ----

// Fixes for the general case, by the software that ran out. `offer_plan_preset`: the diagnosis is
// "the job needs more memory than the card has", which the planner's "fit this card" preset answers;
// for fragmentation or another process on the card it would be an unrelated change.
void general_fixes(const Report& r, std::vector<Fix>& f, bool offer_plan_preset) {
  if (comfy(r)) {
    // ComfyUI's own levers: widgets of its nodes and its launch flags (comfy/cli_args.py). Under dynamic
    // VRAM --reserve-vram and --lowvram do not make room for a step (comfy-aimdo evicts cached weights before
    // an allocation fails anyway) and GGUF falls back to the legacy loader, so those are left out there.
    std::string nd = node(r);
    const bool dynamic = dynamic_vram(r);
    const bool partial = r.extra.contains("comfy_offloaded_bytes");
    if (partial) f.push_back(fix("comfy_reserve_vram.partial"));
    bool decode = nd.find("VAEDecode") != std::string::npos || nd.find("VAE Decode") != std::string::npos;
    const bool tiled_retry = r.extra.contains("comfy_vae_tiled_retry");
    if (tiled_retry) f.push_back(fix("comfy_tiled_decode.smaller"));
    else if (decode) f.push_back(fix("comfy_tiled_decode.replace"));
    if (r.origin == "cudnn") f.push_back(fix("comfy_fast_autotune"));
    if (r.backend != Backend::Mps) f.push_back(fix("comfy_fp8_weights"));  // Apple's MPS has no float8 type
    f.push_back(fix("smaller_shape.comfy"));
    if (!dynamic) f.push_back(fix("comfy_gguf"));
    if (!decode && !tiled_retry) f.push_back(fix("comfy_tiled_decode.if_decode"));
    if (r.backend == Backend::Mps) f.push_back(fix("mps_watermark"));
    if (!partial && !dynamic) f.push_back(fix("comfy_reserve_vram"));
    if (!dynamic) f.push_back(fix("comfy_lowvram"));
    if (dynamic) {
      f.push_back(fix("comfy_update"));
      f.push_back(fix("comfy_disable_dynamic_vram"));
    }
    // "fit this card" is the planner's cheapest set of changes for the current card (presets.json).
    if (offer_plan_preset) f.push_back(fix("headroom_plan.preset", {{"preset", kCardPreset}}, kCardPreset));
    else f.push_back(fix("headroom_plan.preflight"));
    return;
  }
  if (r.origin == "llama.cpp" || r.origin == "ollama") {
    f.push_back(fix("llama_cpp_fewer_gpu_layers"));
    f.push_back(fix("llama_cpp_smaller_quant"));
    f.push_back(fix("llama_cpp_smaller_context"));
    return;
  }
  if (r.origin == "transformers") {
    f.push_back(fix("smaller_model"));
    f.push_back(fix("transformers_cpu_offload"));
    return;
  }
  if (r.app == "vllm") {
    f.push_back(fix("vllm_gpu_memory_utilization.shared"));
    f.push_back(fix("vllm_smaller_batch"));
    f.push_back(fix("vllm_enforce_eager"));
    return;
  }
  if (r.origin == "cudnn") f.push_back(fix("cudnn_no_benchmark"));
  if (r.origin == "cublas") f.push_back(fix("cublas_memory_full", {{"smi", smi(r)}}));
  f.push_back(fix("smaller_batch"));
  f.push_back(fix("lower_precision"));
  f.push_back(fix("no_grad_or_checkpointing"));
  if (r.format == "cudnn_no_algorithm") f.push_back(fix("cudnn_disable"));
}

// System RAM: the OS's own way to get more (a page file or swap), then what ComfyUI holds in RAM.
void ram_fixes(const Report& r, std::vector<Fix>& f) {
  const char* more_ram = r.os == System::Windows ? "free_ram.windows" : r.os == System::Linux ? "free_ram.linux" : "free_ram";
  if (comfy(r)) {
    f.push_back(fix("comfy_disable_pinned_memory.ram"));
    f.push_back(fix("comfy_cache_ram"));
    f.push_back(fix(more_ram));
    f.push_back(fix("comfy_ram_growth"));
    if (!legacy_loader(r)) f.push_back(fix("comfy_fast_disk"));
    f.push_back(fix("comfy_smaller_weights"));
    if (r.format == "comfyui_unfinished_run") f.push_back(fix("comfy_console_log"));
    f.push_back(fix("headroom_plan.preflight"));
    return;
  }
  f.push_back(fix(more_ram));
  if (r.origin == "ollama" || r.app == "ollama") {
    f.push_back(fix("smaller_quant"));
    f.push_back(fix("llama_cpp_smaller_context.short"));
  } else {
    f.push_back(fix("smaller_shape.failed_step"));
  }
}

// ---- the figures every rule reads ----

struct Derived {
  std::optional<u64> reserved_total;  // what PyTorch reserved (given, or allocated + reserved-unallocated)
  std::optional<u64> reserved_free;   // reserved but unallocated
  u64 foreign = 0;                    // bytes of the listed processes that are not this one
  std::vector<ProcessUse> foreign_list;
  bool have_req = false;
  u64 req = 0;
  u64 free = 0;  // free memory, 0 when not given or inconsistent with the total
};

Derived derive(Report& r) {
  Derived d;
  // Derived figures (the message's own fields stay as printed).
  d.reserved_total = r.reserved_total_bytes;
  if (!d.reserved_total && r.allocated_bytes && r.reserved_unallocated_bytes)
    d.reserved_total = *r.allocated_bytes + *r.reserved_unallocated_bytes;
  d.reserved_free = r.reserved_unallocated_bytes;
  if (!d.reserved_free && r.reserved_total_bytes && r.allocated_bytes && *r.reserved_total_bytes >= *r.allocated_bytes)
    d.reserved_free = *r.reserved_total_bytes - *r.allocated_bytes;

  // Which listed processes are other programs. PyTorch lists every process on the device by PID and,
  // when NVML can match our own PID, reports it separately as "this process has". Inside a container
  // the PIDs do not match, so our own process shows up as "Process N" (oom-001): a listed process
  // holding at least what our allocator reserved is most likely ourselves.
  if (r.other_processes) {
    bool self_found = r.process_bytes.has_value();
    for (const auto& p : *r.other_processes) {
      if (!self_found && d.reserved_total && p.bytes >= *d.reserved_total) {
        self_found = true;
        r.notes.push_back("Process " + std::to_string(p.pid) + " (" + b(p.bytes) +
                          ") is most likely this process seen through a container's PID namespace: it holds at "
                          "least what PyTorch reserved here (" + b(*d.reserved_total) + ").");
        continue;
      }
      d.foreign += p.bytes;
      d.foreign_list.push_back(p);
    }
  }
  d.have_req = r.requested_bytes.has_value();
  d.req = r.requested_bytes.value_or(0);
  d.free = (r.free_bytes && !(r.total_bytes && *r.free_bytes > *r.total_bytes)) ? *r.free_bytes : 0;
  return d;
}

// ---- the rules, tried in order (kRules) ----

using Rule = std::optional<Diagnosis> (*)(const Report&, const Derived&);

// "How it was ended" for a killed process: the kernel (a container's limit when it says so), earlyoom, or
// only the signal the shell saw.
std::string killed_by(const Report& r) {
  const std::string by = gets(r, "killed_by");
  if (by == "kernel") return text(r.extra.contains("cgroup_limit") ? "system_ram.by_cgroup" : "system_ram.by_kernel");
  if (by == "earlyoom") return text("system_ram.by_earlyoom");
  return text("system_ram.by_signal");
}

std::optional<Diagnosis> system_ram(const Report& r, const Derived& x) {
  const bool killed = r.format == "linux_oom_killer" || r.format == "earlyoom" || r.format == "process_killed";
  const bool silent = r.format == "windows_silent_exit";
  const bool unfinished = r.format == "comfyui_unfinished_run";
  if (!killed && !silent && !unfinished && r.format != "cpu_allocator" && r.format != "ollama_system_memory")
    return std::nullopt;
  Diagnosis d;
  d.id = "system_ram";
  if (killed) {
    const std::string process = gets(r, "killed_process");
    const auto pid = getn(r, "killed_pid"), rss = getn(r, "killed_rss_bytes");
    std::string who = process.empty() ? std::string()
                      : pid ? text("system_ram.killed_who", {{"process", process}, {"pid", std::to_string(*pid)}})
                            : text("system_ram.killed_name", {{"process", process}});
    d.text = text("system_ram.killed", {{"who", who},
                                        {"rss", rss ? text("system_ram.killed_rss", {{"rss", b(*rss)}}) : std::string()},
                                        {"by", killed_by(r)}});
  } else if (silent) {
    const std::string model = gets(r, "comfy_model");
    d.text = text("system_ram.silent_exit",
                  {{"model", model.empty() ? std::string() : text("system_ram.silent_exit_model", {{"model", model}})}});
  } else if (unfinished) {
    const std::string stage = gets(r, "comfy_stage");
    const auto avail = getn(r, "host_ram_available_bytes"), total = getn(r, "host_ram_total_bytes");
    std::string ram;
    if (avail && total && *total > 0)
      ram = text("system_ram.unfinished_ram", {{"avail", b(*avail)}, {"total", b(*total)}});
    d.text = text("system_ram.unfinished",
                  {{"stage", stage.empty() ? std::string() : text("system_ram.unfinished_stage", {{"stage", stage}})},
                   {"ram", ram}});
    // More than a quarter of RAM free at the last record: RAM may still have run out, but in one step.
    if (avail && total && *avail * 4 > *total) d.text += text("system_ram.unfinished_ram_ok");
  } else {
    d.text = text("system_ram", {{"while_allocating", x.have_req ? text("system_ram.while_allocating", {{"req", b(x.req)}})
                                                                  : std::string()}});
  }
  ram_fixes(r, d.fixes);
  return d;
}

std::optional<Diagnosis> pinned_memory(const Report& r, const Derived&) {
  const std::string pin = gets(r, "pinned_host_memory");
  if (r.format != "aimdo_host_buffer" && pin.empty()) return std::nullopt;
  Diagnosis d;
  d.id = "pinned_memory";
  if (r.format == "aimdo_host_buffer") {
    const std::string error = gets(r, "aimdo_error");
    d.text = text("pinned_memory", {{"error", error},
                                    {"traced", error.find("read_file_slice") != std::string::npos
                                                   ? text("pinned_memory.read_file_slice")
                                                   : std::string()}});
  } else {
    d.text = text("pinned_memory.cuda_pin", {{"call", pin}});
  }
  if (comfy(r)) {
    d.fixes.push_back(fix("comfy_disable_pinned_memory"));
    d.fixes.push_back(fix("comfy_cuda_device"));
    d.fixes.push_back(fix("comfy_update.pin"));
    d.fixes.push_back(fix("comfy_requeue"));
  } else {
    d.fixes.push_back(fix("pin_memory_off"));
    d.fixes.push_back(fix(r.os == System::Windows ? "free_ram.windows" : r.os == System::Linux ? "free_ram.linux" : "free_ram"));
  }
  return d;
}

std::optional<Diagnosis> dynamic_vram_address_space(const Report& r, const Derived&) {
  if (r.format != "aimdo_vbar_reserve") return std::nullopt;
  Diagnosis d;
  d.id = "dynamic_vram_address_space";
  d.text = text("dynamic_vram_address_space", {{"error", gets(r, "aimdo_error")}});
  d.fixes.push_back(fix("comfy_restart.address_space"));
  d.fixes.push_back(fix("comfy_update.aimdo"));
  d.fixes.push_back(fix("comfy_disable_dynamic_vram"));
  return d;
}

std::optional<Diagnosis> dynamic_vram_fault(const Report& r, const Derived&) {
  if (r.format != "aimdo_fault") return std::nullopt;
  Diagnosis d;
  d.id = "dynamic_vram_fault";
  const std::string api = gets(r, "cuda_api"), error = gets(r, "cuda_error");
  d.text = text("dynamic_vram_fault",
                {{"cuda", !api.empty() && !error.empty() ? text("dynamic_vram_fault.cuda", {{"api", api}, {"error", error}})
                                                          : std::string()}});
  d.fixes.push_back(fix("comfy_requeue"));
  d.fixes.push_back(fix("comfy_update"));
  d.fixes.push_back(fix("comfy_disable_dynamic_vram"));
  return d;
}

std::optional<Diagnosis> vae_tiled_retry(const Report& r, const Derived&) {
  if (r.format != "comfyui_vae_tiled_retry") return std::nullopt;
  Diagnosis d;
  d.id = "vae_tiled_retry";
  d.text = text("vae_tiled_retry", {{"stage", text(gets(r, "vae_stage") == "encode" ? "vae_tiled_retry.encode"
                                                                                    : "vae_tiled_retry.decode")}});
  d.fixes.push_back(fix("comfy_tiled_decode.direct"));
  d.fixes.push_back(fix("smaller_shape.comfy"));
  d.fixes.push_back(fix("headroom_plan.preflight"));
  return d;
}

std::optional<Diagnosis> vllm_kv_cache(const Report& r, const Derived&) {
  if (r.origin != "vllm" || r.format == "vllm_startup_free_memory") return std::nullopt;
  Diagnosis d;
  d.id = "kv_cache_too_large";
  std::string max_len = getu(r, "max_model_len");
  std::string fits = getu(r, "estimated_max_model_len");
  if (fits.empty()) fits = getu(r, "kv_cache_max_tokens");
  if (fits.empty() && !max_len.empty() && r.extra.contains("kv_cache_needed_bytes") &&
      r.extra.contains("kv_cache_available_bytes")) {
    // Older V1 messages give no estimate: the cache scales linearly with the length.
    double need = r.extra["kv_cache_needed_bytes"].get<double>();
    double avail = r.extra["kv_cache_available_bytes"].get<double>();
    if (need > 0) fits = std::to_string(static_cast<u64>(std::stod(max_len) * avail / need));
  }
  if (r.format == "vllm_no_cache_blocks") {
    d.text = text("kv_cache_too_large.vllm_no_cache_blocks");
    d.fixes.push_back(fix("vllm_gpu_memory_utilization.raise"));
    d.fixes.push_back(fix("vllm_quantised_weights"));
    d.fixes.push_back(fix("vllm_smaller_batch.profiling"));
    d.fixes.push_back(fix("vllm_tensor_parallel"));
    return d;
  }
  d.text = text("kv_cache_too_large.vllm",
                {{"max_len", max_len.empty() ? std::string() : text("kv_cache_too_large.vllm_max_len", {{"max_len", max_len}})},
                 {"fits", fits.empty() ? std::string() : text("kv_cache_too_large.vllm_fits", {{"fits", fits}})}});
  d.fixes.push_back(fits.empty() ? fix("vllm_max_model_len.unknown") : fix("vllm_max_model_len", {{"fits", fits}}));
  std::string util = r.extra.contains("gpu_memory_utilization") && r.extra["gpu_memory_utilization"].is_number()
                         ? std::to_string(r.extra["gpu_memory_utilization"].get<double>()).substr(0, 4)
                         : "";
  d.fixes.push_back(fix("vllm_gpu_memory_utilization.toward",
                        {{"now", util.empty() ? std::string()
                                              : fix_text("vllm_gpu_memory_utilization.toward_now", {{"util", util}})}}));
  std::string tokens = fits.empty() ? std::string()
                                    : fix_text("vllm_kv_cache_fp8.tokens", {{"tokens", std::to_string(2 * std::stoull(fits))}});
  d.fixes.push_back(fix("vllm_kv_cache_fp8", {{"tokens", tokens}}));
  d.fixes.push_back(fix("vllm_tensor_parallel.or_quantised"));
  d.fixes.push_back(fix("headroom_llm"));
  return d;
}

std::optional<Diagnosis> llama_cpp_context(const Report& r, const Derived& x) {
  if (r.origin != "llama.cpp" || r.extra.value("llama_cpp_phase", "") != "create_context") return std::nullopt;
  Diagnosis d;
  d.id = "kv_cache_too_large";
  d.text = text("kv_cache_too_large.llama_cpp",
                {{"one_buffer", x.have_req ? text("kv_cache_too_large.llama_cpp_one_buffer", {{"req", b(x.req)}})
                                           : std::string()}});
  d.fixes.push_back(fix("llama_cpp_smaller_context.short"));
  d.fixes.push_back(fix("llama_cpp_kv_quant"));
  d.fixes.push_back(fix("llama_cpp_ubatch"));
  // Pipeline parallelism keeps n_copies compute buffers (oom-029 shows n_copies=4).
  if (r.extra.contains("llama_cpp_pipeline_copies")) d.fixes.push_back(fix("llama_cpp_pipeline_copies"));
  d.fixes.push_back(fix("llama_cpp_fewer_gpu_layers.short"));
  return d;
}

// A tensor more than this many times the card is a shape mistake rather than a big job.
constexpr u64 kUnexpectedShapeFactor = 4;

std::optional<Diagnosis> request_larger_than_card(const Report& r, const Derived& x) {
  if (!x.have_req || !r.total_bytes || x.req <= *r.total_bytes) return std::nullopt;
  Diagnosis d;
  d.id = "request_larger_than_card";
  const Vars sizes = {{"req", b(x.req)}, {"total", b(*r.total_bytes)}};
  d.text = text(r.backend == Backend::Mps ? "request_larger_than_card.mps" : "request_larger_than_card", sizes);
  if (x.req > kUnexpectedShapeFactor * *r.total_bytes) d.text += text("request_larger_than_card.unexpected_shape");
  d.fixes.push_back(fix("smaller_shape.tensor"));
  d.fixes.push_back(fix("memory_efficient_attention"));
  if (comfy(r)) d.fixes.push_back(fix("comfy_tiled_decode.if_decode"));
  if (r.backend == Backend::Mps) d.fixes.push_back(fix("mps_watermark.prefer_smaller"));
  return d;
}

// The limit a per-process memory fraction sets: cudaMallocAsync prints it ("PyTorch limit (set by
// user-supplied memory fraction)", 2^64 when none is set), the caching allocator as "X allowed".
std::optional<u64> memory_fraction_limit(const Report& r) {
  if (auto l = getn(r, "pytorch_limit_bytes")) return l;
  return getn(r, "allowed_bytes");
}

std::optional<Diagnosis> pytorch_limit(const Report& r, const Derived& x) {
  auto limit = memory_fraction_limit(r);
  if (!limit || !x.have_req || !r.allocated_bytes || *r.allocated_bytes + x.req <= *limit) return std::nullopt;
  if (r.total_bytes && *limit >= *r.total_bytes) return std::nullopt;  // the limit is the card: not a fraction
  Diagnosis d;
  d.id = "pytorch_limit";
  d.text = text("pytorch_limit", {{"alloc", b(*r.allocated_bytes)}, {"req", b(x.req)}, {"limit", b(*limit)},
                                  {"free", r.free_bytes && x.free ? text("pytorch_limit.free", {{"free", b(x.free)}})
                                                                  : std::string()}});
  d.fixes.push_back(fix(comfy(r) ? "pytorch_memory_fraction.comfy" : "pytorch_memory_fraction"));
  general_fixes(r, d.fixes, false);
  return d;
}

// The free figure is read after the allocation failed (CUDAMallocAsyncAllocator.cpp and
// CUDACachingAllocator.cpp both call cudaMemGetInfo in their out-of-memory path): when it covers the
// request, the card was not short at that moment, whatever the rest of the message suggests.
std::optional<Diagnosis> freed_before_report(const Report& r, const Derived& x) {
  if (!x.have_req || !r.free_bytes || !r.total_bytes || x.free < x.req || x.req == 0 || r.backend == Backend::Mps)
    return std::nullopt;
  if (r.extra.contains("free_bytes_invalid")) return std::nullopt;
  Diagnosis d;
  d.id = "freed_before_report";
  std::string held = x.reserved_total    ? text("out_of_memory.held_reserved", {{"bytes", b(*x.reserved_total)}})
                     : r.allocated_bytes ? text("out_of_memory.held_allocated", {{"bytes", b(*r.allocated_bytes)}})
                                         : "";
  d.text = text("freed_before_report", {{"free", b(x.free)}, {"total", b(*r.total_bytes)}, {"req", b(x.req)}, {"held", held}});
  if (comfy(r)) {
    d.fixes.push_back(fix("comfy_requeue.transient"));
    if (r.format == "pytorch_async" || r.format == "pytorch_async_truncated") d.fixes.push_back(fix("comfy_disable_cuda_malloc"));
    d.fixes.push_back(fix("comfy_vram_headroom"));
    d.fixes.push_back(fix("headroom_plan.preflight"));
  } else {
    d.fixes.push_back(fix("retry_after_empty_cache"));
    if (r.format == "pytorch_async" || r.format == "pytorch_async_truncated") d.fixes.push_back(fix("pytorch_native_allocator"));
    d.fixes.push_back(fix("close_other_processes.check",
                          {{"smi", smi(r)}, {"gpu", r.gpu_index ? std::to_string(*r.gpu_index) : std::string("0")}}));
  }
  return d;
}

std::optional<Diagnosis> other_process(const Report& r, const Derived& x) {
  // Memory outside what PyTorch reserved in this process: other programs or non-PyTorch memory.
  std::optional<u64> outside;
  if (r.total_bytes && r.free_bytes && x.free <= *r.total_bytes) {
    u64 used = *r.total_bytes - x.free;
    // cudaMallocAsync reports only what is allocated; it has trimmed its pool before raising, so
    // allocated is what this process's PyTorch holds (oom-013).
    std::optional<u64> mine = r.process_bytes ? r.process_bytes : x.reserved_total;
    if (!mine && r.format == "pytorch_async") mine = r.allocated_bytes;
    if (mine && used > *mine) outside = used - *mine;
  }
  bool foreign_matters = x.foreign > 0 && (x.foreign >= GiB || !x.have_req || x.foreign + x.free >= x.req);
  bool outside_matters = !foreign_matters && x.foreign_list.empty() && outside && *outside > kContextMargin &&
                         (!x.have_req || *outside + x.free >= x.req);
  if (r.format != "vllm_startup_free_memory" && !foreign_matters && !outside_matters) return std::nullopt;
  Diagnosis d;
  d.id = "other_process";
  if (r.format == "vllm_startup_free_memory") {
    d.text = text("other_process.vllm_startup",
                  {{"free_of_total", r.free_bytes && r.total_bytes
                                         ? text("other_process.vllm_startup_free_of_total",
                                                {{"free", b(*r.free_bytes)}, {"total", b(*r.total_bytes)}})
                                         : std::string()}});
    d.fixes.push_back(fix("close_other_processes.vllm", {{"smi", smi(r)}}));
    d.fixes.push_back(fix("vllm_gpu_memory_utilization.lower_to_free"));
    return d;
  }
  if (foreign_matters) {
    std::string list;
    for (const auto& p : x.foreign_list) list += (list.empty() ? "" : ", ") + std::to_string(p.pid) + " (" + b(p.bytes) + ")";
    d.text = text("other_process.processes",
                  {{"foreign", b(x.foreign)},
                   {"pids", list},
                   {"would_fit", x.have_req && x.foreign + x.free >= x.req
                                     ? text("other_process.processes_would_fit", {{"req", b(x.req)}})
                                     : std::string()}});
    d.fixes.push_back(fix("close_other_processes.pids", {{"pids", list}, {"smi", smi(r)}}));
  } else {
    d.text = text("other_process.outside",
                  {{"outside", b(*outside)},
                   {"would_fit", x.have_req ? text("other_process.outside_would_fit", {{"req", b(x.req)}}) : std::string()}});
    d.fixes.push_back(fix("close_other_processes.check",
                          {{"smi", smi(r)}, {"gpu", r.gpu_index ? std::to_string(*r.gpu_index) : std::string("0")}}));
    if (r.extra.contains("distributed")) d.fixes.push_back(fix("one_rank_per_gpu"));
  }
  d.fixes.push_back(fix(comfy(r) ? "pick_idle_gpu.comfy" : "pick_idle_gpu"));
  general_fixes(r, d.fixes, false);
  return d;
}

std::optional<Diagnosis> fragmentation(const Report& r, const Derived& x) {
  bool fragmented = false;
  if (x.reserved_free) {
    // "Large" as PyTorch's hint means: enough for the request, and not a rounding remainder (oom-049
    // has 185 MiB cached on a 4 GiB card that is simply too small).
    u64 floor = std::max<u64>(256 * MiB, r.total_bytes ? *r.total_bytes / 20 : 0);
    if (x.have_req) fragmented = *x.reserved_free >= x.req && *x.reserved_free >= floor;
    if (!fragmented && x.reserved_total && *x.reserved_free >= GiB && *x.reserved_free * 4 >= *x.reserved_total)
      fragmented = true;
  }
  if (!fragmented) return std::nullopt;
  Diagnosis d;
  d.id = "fragmentation";
  d.text = text("fragmentation",
                {{"reserved_free", b(*x.reserved_free)},
                 {"more_than", x.have_req ? text("fragmentation.more_than", {{"req", b(x.req)}}) : std::string()}});
  const Vars var = {{"var", alloc_conf_var(r)},
                    {"linux_only", on_linux(r) ? std::string() : fix_text("expandable_segments.linux_only")}};
  if (expandable_segments_apply(r)) d.fixes.push_back(fix(comfy(r) ? "expandable_segments.comfy" : "expandable_segments", var));
  d.fixes.push_back(fix(comfy(r) ? "max_split_size.comfy" : "max_split_size", var));
  if (comfy(r)) {
    d.fixes.push_back(fix("comfy_cuda_malloc"));
    d.fixes.push_back(fix("comfy_restart"));
  } else {
    d.fixes.push_back(fix("empty_cache"));
  }
  general_fixes(r, d.fixes, false);
  return d;
}

// Under dynamic VRAM, what the card held besides the failed step: cached weights are not it (comfy-aimdo
// evicts them first), which the diagnosis says with the last model ComfyUI staged.
std::string dynamic_note(const Report& r) {
  if (!comfy(r) || !dynamic_vram(r)) return "";
  const std::string model = gets(r, "comfy_staged_model");
  const auto staged = getn(r, "comfy_staged_bytes");
  return text("out_of_memory.dynamic",
              {{"staged", !model.empty() && staged ? text("out_of_memory.dynamic_staged", {{"model", model}, {"bytes", b(*staged)}})
                                                   : std::string()}});
}

std::optional<Diagnosis> out_of_memory(const Report& r, const Derived& x) {
  Diagnosis d;
  d.id = "out_of_memory";
  if (r.format == "aimdo_vram_grow") {
    d.text = text("out_of_memory.dynamic_grow", {{"req", x.have_req ? b(x.req) : std::string("its size")}});
  } else if (r.format == "comfyui_oom_hint") {
    d.text = text("out_of_memory.comfy_hint") + dynamic_note(r);
  } else if (r.format == "cudnn_no_algorithm") {
    d.text = text("out_of_memory.cudnn_no_algorithm");
  } else if (r.format == "ollama_runner_exited") {
    d.text = text("out_of_memory.ollama_runner");
  } else if (x.have_req && r.total_bytes) {
    std::string held = x.reserved_total    ? text("out_of_memory.held_reserved", {{"bytes", b(*x.reserved_total)}})
                       : r.allocated_bytes ? text("out_of_memory.held_allocated", {{"bytes", b(*r.allocated_bytes)}})
                                           : "";
    if (r.free_bytes)
      d.text = text("out_of_memory.with_free",
                    {{"req", b(x.req)}, {"free", b(x.free)},
                     {"limit", text(r.backend == Backend::Mps ? "out_of_memory.limit_mps" : "out_of_memory.limit_card")},
                     {"total", b(*r.total_bytes)}, {"held", held}});
    else
      d.text = text("out_of_memory.without_free", {{"req", b(x.req)}, {"held", held}, {"total", b(*r.total_bytes)}});
  } else if (r.origin == "cublas" || r.origin == "cudnn" || r.origin == "miopen") {
    d.text = text("out_of_memory.library", {{"origin", r.origin}});
  } else {
    d.text = text("out_of_memory.no_figures");
  }
  if (r.format != "aimdo_vram_grow" && r.format != "comfyui_oom_hint") d.text += dynamic_note(r);
  general_fixes(r, d.fixes, true);
  return d;
}

// The first rule that applies gives the diagnosis; out_of_memory always applies (oom_diagnose.hpp).
constexpr std::pair<const char*, Rule> kRules[] = {
    {"system_ram", system_ram},
    {"pinned_memory", pinned_memory},
    {"dynamic_vram_address_space", dynamic_vram_address_space},
    {"dynamic_vram_fault", dynamic_vram_fault},
    {"vae_tiled_retry", vae_tiled_retry},
    {"kv_cache_too_large (vLLM)", vllm_kv_cache},
    {"kv_cache_too_large (llama.cpp)", llama_cpp_context},
    {"pytorch_limit", pytorch_limit},
    {"request_larger_than_card", request_larger_than_card},
    {"freed_before_report", freed_before_report},
    {"other_process", other_process},
    {"fragmentation", fragmentation},
    {"out_of_memory", out_of_memory},
};

}  // namespace

void check_texts(const nlohmann::json& doc) { load_texts(doc); }

Diagnosis diagnose(Report& r) {
  if (!r.recognised) return {};
  const Derived x = derive(r);
  for (const auto& [name, rule] : kRules)
    if (auto d = rule(r, x)) return *d;
  return {};  // not reached: the last rule always applies
}

}  // namespace headroom::oom
