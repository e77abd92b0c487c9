#pragma once
// Reads an error text and says whether it is an out-of-memory message, which one, and the
// figures it carries. Never guesses: text that is not an OOM message comes back with
// recognised == false and every figure empty.
//
// Families (Report::format): pytorch_sentence (PyTorch >= 2.1 "GPU N has a total capacity of"),
// pytorch_sentence_truncated (the device index was printed as a char and cut the message, e.g.
// pytorch/pytorch#123984), pytorch_parenthesised ("(GPU 0; ... reserved in total by PyTorch)",
// also the <= 1.3 "cached" form), pytorch_short (a size and nothing else), pytorch_async
// (cudaMallocAsync: "Allocation on device 0 would exceed allowed memory"), pytorch_async_truncated,
// mps, directml, cpu_allocator, pytorch_generic, vllm_v0_kv_cache, vllm_v1_kv_cache,
// vllm_no_cache_blocks, vllm_startup_free_memory, llama_cpp_alloc, llama_cpp_cuda_error,
// llama_cpp_vulkan, cublas, cudnn, cudnn_no_algorithm, miopen, cuda_runtime, hip_runtime,
// transformers_dispatch, ollama_system_memory, ollama_runner_exited, xla; and the failures that never say
// "out of memory": aimdo_host_buffer (comfy-aimdo's pinned buffers), aimdo_vbar_reserve (its virtual
// address reservations), aimdo_fault ("Fault failed"), aimdo_vram_grow, linux_oom_killer, earlyoom,
// process_killed (a shell's "Killed" or Ollama's "signal: killed"), windows_silent_exit (the portable's
// "pause" right after a model load), comfyui_oom_hint (ComfyUI's "Got an OOM" lines alone),
// comfyui_vae_tiled_retry (its tiled-VAE retry warning alone) and comfyui_unfinished_run (the caller's
// run=unfinished, below).
#include <string>

#include "core/oom/oom_report.hpp"

namespace headroom::oom {

// Fills every field of Report except `diagnosis` (see oom_diagnose.hpp).
//
// A caller that knows where the error happened says so in a line of its own:
//   headroom-context: app=comfyui os=linux loader=dynamic
// (app: comfyui | vllm | llama.cpp | ollama; os: linux | windows | macos; loader: dynamic | legacy, the
// ComfyUI loader that ran). It fills Report::app, Report::os and extra.comfy_dynamic_vram only where the
// message itself does not tell (a vLLM log stays vLLM; Windows paths in the traceback stay Windows), so
// ComfyUI's Explain OOM gets ComfyUI's levers for a bare PyTorch message and allocator settings only for
// the OS they work on. A run recorder that finds, on the next start, a run that never finished adds
//   run=unfinished stage=NAME ram_available=BYTES ram_total=BYTES
// (the last three optional: the stage and the system RAM of its last record); the text may then hold
// nothing but the log's last lines, and is explained as that run. The line is removed before the message
// is read; unknown keys and malformed values are ignored.
Report parse(const std::string& text);

}  // namespace headroom::oom
