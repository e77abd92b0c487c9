#pragma once
// The recognisers behind oom::parse, one per family of messages. Each reads the normalised
// text (oom_text.hpp), fills `r` and returns true when its family is present.
#include <string>

#include "core/oom/oom_report.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom::detail {

// PyTorch's allocators (oom_parse_pytorch.cpp).
bool mps(const std::string& n, Report& r);
bool pytorch_caching(const std::string& n, Report& r);  // sentence, parenthesised, short
bool pytorch_async(const std::string& n, Report& r);
bool directml(const std::string& n, Report& r);
bool cpu_allocator(const std::string& n, Report& r);
bool pytorch_generic(const std::string& n, Report& r);

// Engines and libraries (oom_parse_engines.cpp).
bool vllm(const std::string& n, Report& r);
bool llama_cpp(const std::string& n, Report& r);
bool math_library(const std::string& n, Report& r);  // cuBLAS, cuDNN, MIOpen
bool gpu_runtime(const std::string& n, Report& r);   // CUDA / HIP runtime "out of memory"
bool transformers_dispatch(const std::string& n, Report& r);
bool ollama_system_memory(const std::string& n, Report& r);  // RAM check before loading
bool xla(const std::string& n, Report& r);                   // JAX / XLA RESOURCE_EXHAUSTED
bool cudnn_no_algorithm(const std::string& n, Report& r);    // every cuDNN convolution algorithm failed
bool ollama_runner_exited(const std::string& n, Report& r);  // "you may not have enough available memory"

// ComfyUI, comfy-aimdo and the system ending the process (oom_parse_comfy.cpp).
bool comfy_aimdo(const std::string& n, Report& r);         // dynamic VRAM: pinned buffers, VBAR, faults
bool windows_silent_exit(const std::string& n, Report& r);  // the portable's "pause" after a model load
bool comfyui_caught_oom(const std::string& n, Report& r);   // ComfyUI's hint block, its tiled-VAE retry
// The OOM killer, earlyoom, or a shell's "Killed" as the last line: needs the text's lines (`raw`), which
// normalise() joins.
bool system_kill(const std::string& raw, const std::string& n, Report& r);

// Reads the size printed just before `pos` ("... 3.96 GiB is reserved", pos at " is reserved").
std::optional<Size> size_before(const std::string& n, std::size_t pos);

}  // namespace headroom::oom::detail
