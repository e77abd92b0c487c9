// Recognisers for inference engines (vLLM, llama.cpp/Ollama), math libraries (cuBLAS, cuDNN,
// MIOpen), the bare CUDA/HIP runtime error and transformers' quantised-dispatch refusal.
#include <cctype>
#include <cstring>
#include <optional>
#include <utility>

#include "core/oom/oom_recognisers.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom::detail {
namespace {

void put_size(Report& r, const char* key, const std::optional<Size>& s) {
  if (s && s->bytes) r.extra[key] = *s->bytes;
}

// "name=23.58GiB" in vLLM's memory-profiling line.
std::optional<Size> kv_size(const std::string& n, const char* key) {
  std::size_t p = rfind_str(n, key);
  if (p == std::string::npos) return std::nullopt;
  return read_size(n, p + std::strlen(key));
}

Backend gpu_backend_word(const std::string& n) {
  if (contains(n, "ROCm") || contains(n, "HIP") || contains(n, "hip")) return Backend::Rocm;
  if (contains(n, "CUDA") || contains(n, "cuda")) return Backend::Cuda;
  return Backend::Unknown;
}

// vLLM's memory-profiling figures, kept as extras (they explain where the budget went).
void vllm_profile(const std::string& n, Report& r) {
  if (!r.total_bytes) {
    if (auto s = kv_size(n, "total_gpu_memory="); s && s->bytes) r.total_bytes = s->bytes;
  }
  put_size(r, "kv_cache_size_bytes", kv_size(n, "kv_cache_size="));
  put_size(r, "peak_torch_memory_bytes", kv_size(n, "peak_torch_memory="));
  put_size(r, "non_torch_memory_bytes", kv_size(n, "non_torch_memory="));
  put_size(r, "kv_cache_available_bytes", kv_size(n, "Available KV cache memory: "));
  put_size(r, "weights_bytes", kv_size(n, "Loading model weights took "));
  put_size(r, "weights_bytes", kv_size(n, "Model loading took "));
  if (std::size_t p = rfind_str(n, "gpu_memory_utilization="); p != std::string::npos) {
    if (auto u = read_decimal(n, p + 23)) r.extra["gpu_memory_utilization"] = *u;
  }
}

}  // namespace

bool vllm(const std::string& n, Report& r) {
  // V0: "The model's max seq len (29000) is larger than the maximum number of tokens that can be
  // stored in KV cache (23648)."
  if (std::size_t p = rfind_str(n, "is larger than the maximum number of tokens that can be stored in KV cache (");
      p != std::string::npos) {
    r.format = "vllm_v0_kv_cache";
    if (auto m = read_uint(n, p + 76)) r.extra["kv_cache_max_tokens"] = *m;
    std::size_t s = rfind_str(n, "max seq len (", p);
    if (s != std::string::npos && p - s < 80) {
      if (auto len = read_uint(n, s + 13)) r.extra["max_model_len"] = *len;
    }
  } else if (std::size_t q = rfind_str(n, "KV cache is needed, which is larger than the available"); q != std::string::npos) {
    // V1: "To serve at least one request with the model's max seq len (40960), (10.00 GiB KV cache
    // is needed, which is larger than the available KV cache memory (1.25 GiB). Based on the
    // available memory, the estimated maximum model length is 7440."
    r.format = "vllm_v1_kv_cache";
    put_size(r, "kv_cache_needed_bytes", size_before(n, q));
    std::size_t a = q + 54;
    if (n.compare(a, 16, " KV cache memory") == 0) a += 16;
    if (a + 2 <= n.size() && n.compare(a, 2, " (") == 0) put_size(r, "kv_cache_available_bytes", read_size(n, a + 2));
    std::size_t s = rfind_str(n, "max seq len (", q);
    if (s != std::string::npos && q - s < 120) {
      if (auto len = read_uint(n, s + 13)) r.extra["max_model_len"] = *len;
    }
    if (std::size_t e = n.find("estimated maximum model length is ", q); e != std::string::npos && e - q < 300) {
      if (auto m = read_uint(n, e + 34)) r.extra["estimated_max_model_len"] = *m;
    }
  } else if (rfind_str(n, "No available memory for the cache blocks") != std::string::npos) {
    r.format = "vllm_no_cache_blocks";
  } else if (std::size_t f = rfind_str(n, "Free memory on device"); f != std::string::npos &&
                                                           n.find("is less than desired GPU memory utilization", f) !=
                                                               std::string::npos) {
    // "Free memory on device (3.21/4.0 GiB) on startup is less than desired GPU memory
    // utilization (0.85, 3.4 GiB)"
    r.format = "vllm_startup_free_memory";
    std::size_t open = n.find('(', f);
    if (open != std::string::npos && open - f < 40) {
      std::size_t slash = n.find('/', open);
      if (slash != std::string::npos && slash - open < 24) {
        auto total = read_size(n, slash + 1);
        if (total) {
          r.total_bytes = total->bytes;
          std::string unit = total->display.substr(total->display.find_first_not_of("0123456789. "));
          auto free = read_size(n.substr(open + 1, slash - open - 1) + " " + unit, 0);
          if (free) r.free_bytes = free->bytes;
        }
      }
    }
    std::size_t u = n.find("utilization (", f);
    if (u != std::string::npos) {
      std::size_t end = 0;
      if (auto v = read_decimal(n, u + 13, &end)) {
        r.extra["gpu_memory_utilization"] = *v;
        if (end + 1 < n.size() && n[end] == ',') put_size(r, "requested_budget_bytes", read_size(n, end + 1));
      }
    }
  } else {
    return false;
  }
  r.origin = "vllm";
  r.app = "vllm";
  r.backend = gpu_backend_word(n);
  vllm_profile(n, r);
  return true;
}

namespace {

// The backend a llama.cpp device word names ("CUDA0", "Metal", "MTL" ...); none for another word.
std::optional<Backend> llama_device_backend(const std::string& dev) {
  static const std::pair<const char*, Backend> kDevices[] = {{"CUDA", Backend::Cuda},   {"ROCm", Backend::Rocm},
                                                             {"Vulkan", Backend::Vulkan}, {"Metal", Backend::Metal},
                                                             {"MTL", Backend::Metal},   {"SYCL", Backend::Xpu}};
  for (const auto& [word, backend] : kDevices)
    if (dev == word) return backend;
  return std::nullopt;
}

// The letters of a device word from `b` on ("CUDA" of "CUDA0"); `e` is set past them.
std::string device_word(const std::string& n, std::size_t b, std::size_t& e) {
  e = b;
  while (e < n.size() && std::isalpha(static_cast<unsigned char>(n[e]))) ++e;
  return n.substr(b, e - b);
}

// "failed to allocate CUDA0 buffer of size 292926534144": the exact byte count. Metal has one device
// and no index: "failed to allocate Metal buffer of size 17376872352" (ollama/ollama#11750, 2025-08-06).
bool llama_device_buffer(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "failed to allocate ");
  if (p == std::string::npos) return false;
  std::size_t e = 0;
  const std::string dev = device_word(n, p + 19, e);
  std::size_t idx_end = e;
  std::uint64_t index = 0;
  bool indexed = false;
  if (e < n.size() && std::isdigit(static_cast<unsigned char>(n[e]))) {
    if (auto v = read_uint(n, e, &idx_end)) {
      index = *v;
      indexed = idx_end == e + std::to_string(index).size();
    }
  }
  bool metal = idx_end == e && (dev == "Metal" || dev == "MTL");
  if (!(indexed || metal) || n.compare(idx_end, 16, " buffer of size ") != 0) return false;
  if (auto size = read_size(n, idx_end + 16, false); size && size->bytes) r.requested_bytes = size->bytes;
  if (indexed && index <= 1024) r.gpu_index = static_cast<int>(index);
  if (auto backend = llama_device_backend(dev)) r.backend = *backend;
  return true;
}

// "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 279356.51 MiB on device 0: cudaMalloc
// failed: out of memory"
bool llama_cuda_malloc(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "cudaMalloc failed: out of memory");
  if (p == std::string::npos) return false;
  std::size_t a = rfind_str(n, "allocating ", p);
  if (a != std::string::npos && p - a < 80) {
    auto size = read_size(n, a + 11);
    if (size) {
      r.extra["requested_display"] = size->display;
      if (!r.requested_bytes && size->bytes) r.requested_bytes = size->bytes;
      if (n.compare(size->end, 11, " on device ") == 0) {
        if (auto d = read_uint(n, size->end + 11); d && *d <= 1024 && !r.gpu_index) r.gpu_index = static_cast<int>(*d);
      }
    }
  }
  if (r.backend == Backend::None) r.backend = Backend::Cuda;
  return true;
}

// ggml's CUDA_CHECK: "CUDA error 2 at .../ggml-cuda.cu:7949: out of memory current device: 0"
// (error 2 is cudaErrorMemoryAllocation), newer: "CUDA error: out of memory current device: 0, in
// function ggml_..."; and Vulkan's ErrorOutOfDeviceMemory.
bool ggml_runtime_error(const std::string& n, Report& r) {
  if (!contains(n, "ggml") && !contains(n, "current device: ")) return false;
  std::size_t p = rfind_str(n, "CUDA error");
  std::size_t m = p == std::string::npos ? p : n.find("out of memory", p);
  if (m != std::string::npos && m - p < 400) {
    r.format = "llama_cpp_cuda_error";
    r.backend = contains(n, "ROCm") || contains(n, "hip") ? Backend::Rocm : Backend::Cuda;
    if (std::size_t d = n.find("current device: ", m); d != std::string::npos && d - m < 200) {
      if (auto idx = read_uint(n, d + 16); idx && *idx <= 1024) r.gpu_index = static_cast<int>(*idx);
    }
    return true;
  }
  if (!contains(n, "ErrorOutOfDeviceMemory")) return false;
  r.format = "llama_cpp_vulkan";
  r.backend = Backend::Vulkan;
  return true;
}

// "error loading model: unable to allocate CUDA0 buffer" (llama.cpp, also inside Ollama's
// "llama runner process has terminated: ...").
bool llama_unable_to_allocate(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "unable to allocate ");
  if (p == std::string::npos) return false;
  std::size_t e = 0;
  const std::string dev = device_word(n, p + 19, e);
  std::size_t idx_end = 0;
  auto idx = read_uint(n, e, &idx_end);
  const std::optional<Backend> backend = dev == "MTL" ? std::nullopt : llama_device_backend(dev);
  if (!backend || !idx || idx_end <= e || n.compare(idx_end, 7, " buffer") != 0) return false;
  r.format = "llama_cpp_alloc";
  if (*idx <= 1024) r.gpu_index = static_cast<int>(*idx);
  r.backend = *backend;
  return true;
}

// ggml-alloc's own line before the buffer one: "failed to allocate buffer, size = 16571.89 MiB"
// (ollama/ollama#11750).
bool ggml_alloc_buffer(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "failed to allocate buffer, size = ");
  if (p == std::string::npos) return false;
  auto size = read_size(n, p + 34);
  if (!size) return false;
  r.extra["requested_display"] = size->display;
  if (!r.requested_bytes && size->bytes) r.requested_bytes = size->bytes;
  return true;
}

// Context creation allocates the KV cache and the compute buffer, both sized by the context
// length; model loading allocates the weights.
void llama_phase(const std::string& n, Report& r) {
  static const char* kContext[] = {"llama_new_context_with_model", "llama_init_from_model", "llama_context",
                                   "llama_kv_cache", "KV buffer", "compute buffer", "ggml_gallocr"};
  static const char* kWeights[] = {"llama_model_load", "load_tensors", "model buffer", "llm_load_tensors"};
  std::string phase;
  for (const char* k : kWeights)
    if (contains(n, k)) phase = "load_weights";
  for (const char* k : kContext)
    if (contains(n, k)) phase = "create_context";
  if (!phase.empty()) r.extra["llama_cpp_phase"] = phase;
}

}  // namespace

bool llama_cpp(const std::string& n, Report& r) {
  bool found = llama_device_buffer(n, r);
  found = llama_cuda_malloc(n, r) || found;
  if (!found) found = ggml_runtime_error(n, r);
  if (!found) found = llama_unable_to_allocate(n, r);
  found = ggml_alloc_buffer(n, r) || found;
  if (!found) return false;
  if (r.format.empty()) r.format = "llama_cpp_alloc";
  if (r.backend == Backend::None) r.backend = gpu_backend_word(n);
  r.origin = "llama.cpp";
  r.app = contains(n, "llama runner process") || contains(n, "ollama") ? "ollama" : "llama.cpp";
  llama_phase(n, r);
  if (std::size_t c = rfind_str(n, "pipeline parallelism enabled (n_copies="); c != std::string::npos) {
    if (auto copies = read_uint(n, c + 39)) r.extra["llama_cpp_pipeline_copies"] = *copies;
  }
  return true;
}

bool math_library(const std::string& n, Report& r) {
  if (contains(n, "CUBLAS_STATUS_ALLOC_FAILED")) {
    r.format = "cublas";
    r.origin = "cublas";
    r.backend = contains(n, "HIP") || contains(n, "hipblas") ? Backend::Rocm : Backend::Cuda;  // cuBLAS is NVIDIA's
  } else if (contains(n, "CUDNN_STATUS_ALLOC_FAILED") || contains(n, "CUDNN_STATUS_NOT_ENOUGH_WORKSPACE")) {
    r.format = "cudnn";
    r.origin = "cudnn";
    r.backend = Backend::Cuda;  // cuDNN exists only for NVIDIA GPUs
    r.extra["status"] = contains(n, "CUDNN_STATUS_NOT_ENOUGH_WORKSPACE") ? "CUDNN_STATUS_NOT_ENOUGH_WORKSPACE"
                                                                         : "CUDNN_STATUS_ALLOC_FAILED";
  } else if (contains(n, "miopenStatusAllocFailed")) {
    r.format = "miopen";
    r.origin = "miopen";
    r.backend = Backend::Rocm;
  } else {
    return false;
  }
  return true;
}

bool gpu_runtime(const std::string& n, Report& r) {
  static const char* kCuda[] = {"CUDA error: out of memory", "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY",
                                "CUDA driver error: out of memory"};
  static const char* kHip[] = {"HIP error: out of memory", "hipErrorOutOfMemory"};
  for (const char* k : kCuda) {
    std::size_t p = rfind_str(n, k);
    if (p == std::string::npos) continue;
    r.format = "cuda_runtime";
    r.origin = "cuda-runtime";
    r.backend = Backend::Cuda;
    // Pinning host RAM fails with the same words: tensor.pin_memory() asks cudaHostAlloc for page-locked
    // memory and PyTorch's C10_CUDA_CHECK prints "CUDA error: out of memory". The traceback just above
    // names the call.
    std::size_t from = p > 600 ? p - 600 : 0;
    const std::string before = n.substr(from, p - from);
    for (const char* pin : {"pin_memory", "cudaHostAlloc", "cudaHostRegister", "CachingHostAllocator"})
      if (contains(before, pin)) r.extra["pinned_host_memory"] = pin;
    return true;
  }
  for (const char* k : kHip) {
    if (contains(n, k)) {
      r.format = "hip_runtime";
      r.origin = "hip-runtime";
      r.backend = Backend::Rocm;
      return true;
    }
  }
  return false;
}

bool ollama_system_memory(const std::string& n, Report& r) {
  // "Error: model requires more system memory (12.3 GiB) than is available (8.1 GiB)"
  std::size_t p = rfind_str(n, "model requires more system memory (");
  if (p == std::string::npos) return false;
  r.format = "ollama_system_memory";
  r.origin = "ollama";
  r.app = "ollama";
  r.backend = Backend::Cpu;
  auto need = read_size(n, p + 35);
  if (need && need->bytes) r.requested_bytes = need->bytes;
  if (std::size_t a = n.find("than is available (", p); a != std::string::npos && a - p < 80) {
    if (auto avail = read_size(n, a + 19); avail && avail->bytes) r.free_bytes = avail->bytes;
  }
  r.notes.push_back("Ollama checks system RAM before loading: this is RAM, not GPU memory.");
  return true;
}

bool cudnn_no_algorithm(const std::string& n, Report& r) {
  // PyTorch runs a convolution by trying cuDNN's candidate algorithms in turn, skipping each that throws
  // an out-of-memory or a cuDNN error, and raises one of these when none ran: "Unable to find a valid cuDNN
  // algorithm to run convolution" (aten/src/ATen/native/cudnn/Conv_v7.cpp, AlgoIterator::try_all,
  // pytorch/pytorch@01b468ad) and, with benchmarking on, "FIND was unable to find an engine to execute this
  // computation" (Conv_v8.cpp try_plans, @06ca69ca, whose candidates are first cut to the largest free
  // block), and without benchmarking, PyTorch 2's default, "GET was unable to find an engine to execute
  // this computation" (Conv_v8.cpp run_single_conv, same skips). Reported as out of memory in
  // marqo-ai/marqo#101 (2022-09-30) and XPixelGroup/DiffBIR#59 (2023-10-11). The same words also come
  // from GPUs or data types cuDNN has no kernel for, which the diagnosis says and its fixes tell apart.
  static const std::pair<const char*, const char*> kMessages[] = {
      {"Unable to find a valid cuDNN algorithm to run convolution", "v7"},
      {"FIND was unable to find an engine to execute this computation", "v8_benchmark"},
      {"GET was unable to find an engine to execute this computation", "v8_heuristics"}};
  for (const auto& [text, api] : kMessages) {
    if (!contains(n, text)) continue;
    r.format = "cudnn_no_algorithm";
    r.origin = "cudnn";
    r.backend = Backend::Cuda;  // cuDNN exists only for NVIDIA GPUs
    r.extra["cudnn_path"] = api;
    return true;
  }
  return false;
}

bool ollama_runner_exited(const std::string& n, Report& r) {
  // Ollama's llm/server.go, when the runner's stream ends in "unexpected EOF" (the runner died mid-answer):
  // "llama runner exited, you may not have enough available memory to run this model". The runner is
  // llama.cpp's server, as in the runner's other failures above.
  if (!contains(n, "llama runner exited, you may not have enough available memory")) return false;
  r.format = "ollama_runner_exited";
  r.origin = "llama.cpp";
  r.app = "ollama";
  r.backend = gpu_backend_word(n);
  return true;
}

bool xla(const std::string& n, Report& r) {
  // JAX / XLA: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes."
  std::size_t p = rfind_str(n, "RESOURCE_EXHAUSTED: Out of memory while trying to allocate ");
  if (p == std::string::npos) return false;
  r.format = "xla";
  r.origin = "xla";
  r.backend = gpu_backend_word(n);
  if (auto s = read_size(n, p + 59); s && s->bytes) r.requested_bytes = s->bytes;
  return true;
}

bool transformers_dispatch(const std::string& n, Report& r) {
  if (!contains(n, "Make sure you have enough GPU RAM to fit the quantized model")) return false;
  r.format = "transformers_dispatch";
  r.origin = "transformers";
  r.backend = gpu_backend_word(n);
  r.notes.push_back("transformers refused to load: the quantized model does not fit the GPU, so some modules "
                    "were placed on the CPU or disk (device_map=\"auto\").");
  return true;
}

}  // namespace headroom::oom::detail
