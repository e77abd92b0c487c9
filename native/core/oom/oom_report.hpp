#pragma once
// What an out-of-memory message says, field by field, plus the diagnosis drawn from it.
// A field the message does not carry stays empty and is written as JSON null.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::oom {

struct ProcessUse {
  std::uint64_t pid = 0;
  std::uint64_t bytes = 0;
};

struct Fix {
  std::string id;    // stable, e.g. "expandable_segments"
  std::string text;  // plain words, with the exact setting or flag to use
  std::string preset;  // a presets.json name that applies this fix to a ComfyUI workflow ("" = none)

  // A constructor (not aggregate braces) so a fix without a preset names no empty member: braces with
  // two of three members gave -Wmissing-field-initializers at every fix (54 warnings in install.py).
  Fix(std::string id_, std::string text_, std::string preset_ = {})
      : id(std::move(id_)), text(std::move(text_)), preset(std::move(preset_)) {}
};

struct Diagnosis {
  std::string id;    // fragmentation | other_process | request_larger_than_card | kv_cache_too_large |
                     // system_ram | pinned_memory | dynamic_vram_address_space | dynamic_vram_fault |
                     // vae_tiled_retry | pytorch_limit | freed_before_report | out_of_memory
                     // (oom_diagnose.hpp)
  std::string text;
  std::vector<Fix> fixes;  // cheapest or most likely first
};

// The device memory ran out on; None until a recogniser says, Unknown when it cannot tell. The JSON
// spells it with backend_name ("cuda", "rocm", "mps", "xpu", "directml", "vulkan", "metal", "cpu", "unknown").
enum class Backend { None, Cuda, Rocm, Mps, Xpu, Directml, Vulkan, Metal, Cpu, Unknown };
const char* backend_name(Backend b);

// The operating system, from the text or the caller's context line ("linux", "windows", "macos").
enum class System { None, Linux, Windows, Macos };
const char* system_name(System s);  // "" for None
// The system named `word`; nullopt for any other word.
std::optional<System> system_from_name(const std::string& word);

struct Report {
  bool recognised = false;
  std::string format;  // message family, e.g. "pytorch_sentence", "vllm_v1_kv_cache" (see oom_parse.hpp)

  std::optional<std::uint64_t> requested_bytes;
  std::optional<std::uint64_t> total_bytes;
  std::optional<std::uint64_t> free_bytes;
  std::optional<std::uint64_t> allocated_bytes;             // allocated by PyTorch (tensors)
  std::optional<std::uint64_t> reserved_unallocated_bytes;  // cached by PyTorch, not in tensors
  std::optional<std::uint64_t> reserved_total_bytes;        // all memory PyTorch's allocator holds
  std::optional<std::uint64_t> process_bytes;               // this process incl. non-PyTorch memory
  std::optional<std::vector<ProcessUse>> other_processes;   // "Process N has X memory in use"
  std::optional<int> gpu_index;

  Backend backend = Backend::None;
  std::string origin;   // pytorch | cuda-runtime | hip-runtime | cublas | cudnn | miopen | vllm |
                        // llama.cpp | ollama | transformers | xla | comfy-aimdo | os (the system ended it)
  std::string app;      // comfyui | vllm | llama.cpp | ollama | "" when the text does not say
  System os = System::None;  // None when neither the text nor the caller says

  nlohmann::json extra = nlohmann::json::object();  // figures outside the fixed set, bytes where sizes
  std::vector<std::string> notes;                    // caveats about the figures, in plain words

  Diagnosis diagnosis;
};

// The JSON of `headroom explain --json` and api::explain.
nlohmann::json to_json(const Report& report);

}  // namespace headroom::oom
