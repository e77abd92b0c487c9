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
// llama_cpp_vulkan, cublas, cudnn, miopen, cuda_runtime, hip_runtime, transformers_dispatch,
// ollama_system_memory, xla.
#include <string>

#include "core/oom/oom_report.hpp"

namespace headroom::oom {

// Fills every field of Report except `diagnosis` (see oom_diagnose.hpp).
//
// A caller that knows where the error happened says so in a line of its own:
//   headroom-context: app=comfyui os=linux
// (app: comfyui | vllm | llama.cpp | ollama; os: linux | windows | macos). It fills Report::app and
// Report::os only where the message itself does not tell (a vLLM log stays vLLM; Windows paths in the
// traceback stay Windows), so ComfyUI's Explain OOM gets ComfyUI's levers for a bare PyTorch message and
// allocator settings only for the OS they work on. The line is removed before the message is read.
Report parse(const std::string& text);

}  // namespace headroom::oom
