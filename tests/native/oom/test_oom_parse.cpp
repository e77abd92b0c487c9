// OOM message parsing, field by field. The messages marked "oom-NNN" are copied verbatim from
// shared/facts/oom-examples.json (real messages from public GitHub issues); their expected byte
// values are that file's `expected` block, which applies the README's conversion rules (binary
// units, half-up rounding of the printed decimals). Constructed messages follow PyTorch's wording;
// their expected values are computed in the comment next to each (value x 1024^n, half up).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "catch.hpp"
#include "oom/oom_answers.hpp"
#include "core/api/api.hpp"
#include "core/base/data_files.hpp"
#include "core/oom/oom_parse.hpp"
#include "core/oom/oom_text.hpp"

using headroom::api::explain;
using nlohmann::json;

namespace {

std::uint64_t u(const json& v) { return v.get<std::uint64_t>(); }

}  // namespace

TEST_CASE("oom: PyTorch sentence format with a listed process (oom-001)") {
  json r = explain(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of 44.53 "
      "GiB of which 91.25 MiB is free. Process 3579258 has 44.43 GiB memory in use. Of the allocated memory 43.93 GiB "
      "is allocated by PyTorch, and 18.76 MiB is reserved by PyTorch but unallocated.");
  REQUIRE(r["recognised"] == true);
  CHECK(u(r["requested_bytes"]) == 104857600);
  CHECK(r["gpu_index"] == 0);
  CHECK(u(r["total_bytes"]) == 47813723423);
  CHECK(u(r["free_bytes"]) == 95682560);
  CHECK(u(r["allocated_bytes"]) == 47169478328);
  CHECK(u(r["reserved_unallocated_bytes"]) == 19671286);
  CHECK(r["reserved_total_bytes"].is_null());
  CHECK(r["process_bytes"].is_null());
  REQUIRE(r["other_processes"].size() == 1);
  CHECK(r["other_processes"][0]["pid"] == 3579258);
  CHECK(u(r["other_processes"][0]["bytes"]) == 47706349240);
  CHECK(r["backend"] == "cuda");
  CHECK(r["origin"] == "pytorch");
  // The README's cause note: that PID is this same process seen through a container PID namespace.
  CHECK(r["diagnosis"]["id"] == "out_of_memory");
}

TEST_CASE("oom: fragmentation suggests expandable_segments (oom-005)") {
  json r = explain(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 884.00 MiB. GPU 0 has a total capacity of 12.00 "
      "GiB of which 38.73 MiB is free. Of the allocated memory 6.68 GiB is allocated by PyTorch, and 3.96 GiB is "
      "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
      "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
  CHECK(u(r["requested_bytes"]) == 926941184);
  CHECK(u(r["total_bytes"]) == 12884901888);
  CHECK(u(r["free_bytes"]) == 40611348);
  CHECK(u(r["allocated_bytes"]) == 7172595384);
  CHECK(u(r["reserved_unallocated_bytes"]) == 4252017623);
  CHECK(r["other_processes"].is_null());
  CHECK(r["diagnosis"]["id"] == "fragmentation");
  REQUIRE(!r["fixes"].empty());
  CHECK(r["fixes"][0]["id"] == "expandable_segments");
  CHECK(r["fixes"][0]["text"].get<std::string>().find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") !=
        std::string::npos);
}

TEST_CASE("oom: PyTorch 2.1 'capacty' typo, GPU 1, KiB units, this process (oom-053)") {
  json r = explain(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 1 has a total capacty of "
      "14.58 GiB of which 808.44 MiB is free. Including non-PyTorch memory, this process has 13.78 GiB memory in use. "
      "Of the allocated memory 13.29 GiB is allocated by PyTorch, and 743.50 KiB is reserved by PyTorch but "
      "unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
      "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
  CHECK(u(r["requested_bytes"]) == 1245540516);
  CHECK(r["gpu_index"] == 1);
  CHECK(u(r["total_bytes"]) == 15655155794);
  CHECK(u(r["free_bytes"]) == 847710781);
  CHECK(u(r["process_bytes"]) == 14796162335);
  CHECK(u(r["allocated_bytes"]) == 14270028841);
  CHECK(u(r["reserved_unallocated_bytes"]) == 761344);
  CHECK(r["diagnosis"]["id"] == "out_of_memory");
}

TEST_CASE("oom: parenthesised format, request and reserved in total (oom-057)") {
  json r = explain(
      "RuntimeError: CUDA out of memory. Tried to allocate 3.20 GiB (GPU 0; 10.76 GiB total capacity; 3.22 GiB "
      "already allocated; 3.18 GiB free; 3.28 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
      "memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
      "PYTORCH_CUDA_ALLOC_CONF");
  CHECK(u(r["requested_bytes"]) == 3435973837);
  CHECK(r["gpu_index"] == 0);
  CHECK(u(r["total_bytes"]) == 11553462026);
  CHECK(u(r["allocated_bytes"]) == 3457448673);
  CHECK(u(r["free_bytes"]) == 3414499000);
  CHECK(u(r["reserved_total_bytes"]) == 3521873183);
  CHECK(r["reserved_unallocated_bytes"].is_null());
  CHECK(r["format"] == "pytorch_parenthesised");
  // ~4.3 GiB is outside this process's PyTorch memory (README cause note: other DDP ranks on GPU 0).
  CHECK(r["diagnosis"]["id"] == "other_process");
}

TEST_CASE("oom: parenthesised figures pasted alone (oom-077) and the <= 1.3 'cached' form") {
  json r = explain("(GPU 0; 15.75 GiB total capacity; 79.11 MiB already allocated; 3.62 MiB free; 86.00 MiB reserved "
                   "in total by PyTorch)");
  REQUIRE(r["recognised"] == true);
  CHECK(r["requested_bytes"].is_null());
  CHECK(u(r["total_bytes"]) == 16911433728);
  CHECK(u(r["free_bytes"]) == 3795845);
  CHECK(u(r["allocated_bytes"]) == 82952847);
  CHECK(u(r["reserved_total_bytes"]) == 90177536);
  CHECK(r["diagnosis"]["id"] == "other_process");  // 86 MiB held here, 15.6 GiB elsewhere

  // PyTorch <= 1.3 wording ("cached" instead of "reserved in total"); 3.50 GiB = 3758096384,
  // 1.00 GiB = 1073741824 bytes.
  json old = explain("RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 2; 7.93 GiB total capacity; "
                     "3.50 GiB already allocated; 10.56 MiB free; 3.50 GiB cached)");
  CHECK(old["gpu_index"] == 2);
  CHECK(u(old["requested_bytes"]) == 1073741824);
  CHECK(u(old["reserved_total_bytes"]) == 3758096384);
}

TEST_CASE("oom: cudaMallocAsync message and its 2^64 'no limit' (oom-013)") {
  json r = explain(
      "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
      "Currently allocated     : 6.89 GiB\nRequested               : 320.00 MiB\nDevice limit            : 23.69 "
      "GiB\nFree (according to CUDA): 2.94 MiB\nPyTorch limit (set by user-supplied memory fraction)\n"
      "                        : 17179869184.00 GiB");
  CHECK(r["format"] == "pytorch_async");
  CHECK(u(r["requested_bytes"]) == 335544320);
  CHECK(r["gpu_index"] == 0);
  CHECK(u(r["total_bytes"]) == 25436943811);
  CHECK(u(r["free_bytes"]) == 3082813);
  CHECK(u(r["allocated_bytes"]) == 7398081167);
  CHECK(r["extra"]["pytorch_limit_exact"] == "17179869184.00 GiB");  // does not fit 64 bits: kept as text
  CHECK(r["diagnosis"]["id"] == "other_process");  // ~16.8 GiB held outside (README cause note)
}

TEST_CASE("oom: NUL-truncated messages keep the GPU index null (oom-009, pytorch#123984)") {
  json r = explain("- **Node Type:** KSampler\n- **Exception Type:** torch.OutOfMemoryError\n- **Exception Message:** "
                   "Allocation on device ");
  REQUIRE(r["recognised"] == true);
  CHECK(r["gpu_index"].is_null());
  CHECK(r["extra"]["gpu_index_implied"] == 0);
  CHECK(r["app"] == "comfyui");
  CHECK(r["extra"]["comfy_node"] == "KSampler");

  // The caching allocator's variant, with the NUL byte itself: 56.50 GiB = 60666413056 bytes.
  std::string text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 56.50 GiB. GPU";
  text.push_back('\0');
  text += " has a total capacity of";
  json t = explain(text);
  CHECK(t["format"] == "pytorch_sentence_truncated");
  CHECK(u(t["requested_bytes"]) == 60666413056);
  CHECK(t["gpu_index"].is_null());
}

TEST_CASE("oom: HIP messages are ROCm even when they name PYTORCH_CUDA_ALLOC_CONF (oom-021)") {
  json r = explain(
      "HIP out of memory. Tried to allocate 333.38 GiB. GPU 0 has a total capacity of 15.92 GiB of which 7.28 GiB is "
      "free. Of the allocated memory 8.22 GiB is allocated by PyTorch, and 19.88 MiB is reserved by PyTorch but "
      "unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
  CHECK(r["backend"] == "rocm");
  CHECK(u(r["requested_bytes"]) == 357964049285);
  CHECK(u(r["total_bytes"]) == 17093969838);
  CHECK(r["diagnosis"]["id"] == "request_larger_than_card");
}

TEST_CASE("oom: ROCm APU free-memory underflow is flagged, not believed") {
  // 17179869183.96 GiB = 18446744073666601943 bytes (fits 64 bits, just under 2^64); 15.92 GiB as above.
  json r = explain("HIP out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which "
                   "17179869183.96 GiB is free. Of the allocated memory 14.00 GiB is allocated by PyTorch, and 1.00 "
                   "GiB is reserved by PyTorch but unallocated.");
  CHECK(u(r["free_bytes"]) == 18446744073666601943ull);
  CHECK(r["extra"]["free_bytes_invalid"] == true);
  CHECK(r["diagnosis"]["id"] == "fragmentation");  // 1 GiB cached >= 512 MiB requested
  CHECK(r["fixes"][0]["text"].get<std::string>().find("PYTORCH_HIP_ALLOC_CONF") != std::string::npos);
}

TEST_CASE("oom: 'this process has 0 bytes', other processes with PIDs, GPU 3") {
  // 1.00 GiB = 1073741824; 23.65 GiB = 25393994138; 5.06 MiB = 5305795; 23.63 GiB = 25372519301.
  json r = explain("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total capacity "
                   "of 23.65 GiB of which 5.06 MiB is free. Process 4242 has 23.63 GiB memory in use. Including "
                   "non-PyTorch memory, this process has 0 bytes memory in use. Of the allocated memory 0 bytes is "
                   "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.");
  CHECK(r["gpu_index"] == 3);
  CHECK(u(r["process_bytes"]) == 0);
  CHECK(u(r["allocated_bytes"]) == 0);
  REQUIRE(r["other_processes"].size() == 1);
  CHECK(u(r["other_processes"][0]["bytes"]) == 25372519301);
  CHECK(r["diagnosis"]["id"] == "other_process");
  CHECK(r["diagnosis"]["text"].get<std::string>().find("4242") != std::string::npos);
  CHECK(r["fixes"][0]["id"] == "close_other_processes");
}

TEST_CASE("oom: hard-wrapped lines with [rankN] prefixes are joined") {
  // 20.00 MiB = 20971520; 22.9 GiB = 24588687770; 280.9 MiB = 294544998.
  json r = explain("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total\n"
                   "[rank1]: capacity of 23.65 GiB of which 5.06 MiB is free. Including non-PyTorch memory, this\n"
                   "[rank1]: process has 23.63 GiB memory in use. Of the allocated memory 22.9 GiB is allocated by\n"
                   "[rank1]: PyTorch, and 280.9 MiB is reserved by PyTorch but unallocated.");
  CHECK(u(r["requested_bytes"]) == 20971520);
  CHECK(u(r["total_bytes"]) == 25393994138);
  CHECK(u(r["process_bytes"]) == 25372519301);
  CHECK(u(r["allocated_bytes"]) == 24588687770);
  CHECK(u(r["reserved_unallocated_bytes"]) == 294544998);
  CHECK(r["extra"]["distributed"] == true);
}

TEST_CASE("oom: MPS 'GB' labels are binary (oom-025)") {
  json r = explain(
      "- **Node Type:** KSampler\n- **Exception Type:** RuntimeError\n- **Exception Message:** MPS backend out of "
      "memory (MPS allocated: 16.91 GB, other allocations: 2.77 MB, max allowed: 18.13 GB). Tried to allocate 1.28 GB "
      "on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may "
      "cause system failure).");
  CHECK(r["backend"] == "mps");
  CHECK(u(r["requested_bytes"]) == 1374389535);
  CHECK(u(r["total_bytes"]) == 19466939269);
  CHECK(u(r["allocated_bytes"]) == 18156974244);
  CHECK(u(r["extra"]["mps_other_allocations_bytes"]) == 2904556);
  CHECK(r["gpu_index"].is_null());
  CHECK(r["app"] == "comfyui");
}

TEST_CASE("oom: llama.cpp takes the exact byte count and detects context creation (oom-029)") {
  json r = explain("llama_new_context_with_model: pipeline parallelism enabled (n_copies=4)\n"
                   "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 279356.51 MiB on device 0: cudaMalloc "
                   "failed: out of memory\nggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 292926534144");
  CHECK(r["origin"] == "llama.cpp");
  CHECK(r["backend"] == "cuda");
  CHECK(u(r["requested_bytes"]) == 292926534144);
  CHECK(r["gpu_index"] == 0);
  CHECK(r["diagnosis"]["id"] == "kv_cache_too_large");
  bool copies_fix = false;
  for (const auto& f : r["fixes"]) copies_fix = copies_fix || f["id"] == "llama_cpp_pipeline_copies";
  CHECK(copies_fix);
}

TEST_CASE("oom: a HIP llama.cpp build prints cudaMalloc but a ROCm0 buffer") {
  json r = explain("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 1: cudaMalloc failed: "
                   "out of memory\nalloc_tensor_range: failed to allocate ROCm1 buffer of size 4294967296\n"
                   "llama_model_load: error loading model: unable to allocate ROCm1 buffer");
  CHECK(r["backend"] == "rocm");
  CHECK(r["gpu_index"] == 1);
  CHECK(u(r["requested_bytes"]) == 4294967296);
  CHECK(r["diagnosis"]["id"] == "out_of_memory");  // loading weights, not the context
}

TEST_CASE("oom: ggml's CUDA_CHECK error (oom-069)") {
  json r = explain("CUDA error 2 at /home/runner/work/llama-cpp-python-cuBLAS-wheels/llama-cpp-python-cuBLAS-wheels/"
                   "vendor/llama.cpp/ggml-cuda.cu:7949: out of memory\ncurrent device: 0");
  CHECK(r["origin"] == "llama.cpp");
  CHECK(r["gpu_index"] == 0);
  CHECK(r["requested_bytes"].is_null());
}

TEST_CASE("oom: vLLM V0 KV-cache start-up error (oom-033)") {
  json r = explain(
      "Loading model weights took 14.9888 GB\nMemory profiling results: total_gpu_memory=23.58GiB "
      "initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB "
      "non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n# GPU blocks: 1478, # CPU blocks: "
      "2048\nMaximum concurrency for 29000 tokens per request: 0.82x\nThe model's max seq len (29000) is larger than "
      "the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or "
      "decreasing `max_model_len` when initializing the engine.");
  CHECK(r["origin"] == "vllm");
  CHECK(u(r["total_bytes"]) == 25318832210);
  CHECK(r["extra"]["max_model_len"] == 29000);
  CHECK(r["extra"]["kv_cache_max_tokens"] == 23648);
  CHECK(u(r["extra"]["kv_cache_size_bytes"]) == 3103113871);
  CHECK(u(r["extra"]["weights_bytes"]) == 16094101452);
  CHECK(r["diagnosis"]["id"] == "kv_cache_too_large");
  CHECK(r["fixes"][0]["id"] == "vllm_max_model_len");
  CHECK(r["fixes"][0]["text"].get<std::string>().find("23648") != std::string::npos);
}

TEST_CASE("oom: vLLM V1 'KV cache is needed' behind docker-compose and log prefixes") {
  // Real message shape from a public vLLM thread; 10.00 GiB = 10737418240, 1.25 GiB = 1342177280.
  json r = explain(
      "[vllm]                 | ERROR 06-02 05:17:18 [core.py:387] ValueError: To serve at least one request with "
      "the models's max seq len (40960), (10.00 GiB KV cache is needed, which is larger than the available KV cache "
      "memory (1.25 GiB). Based on the available memory,  Try increasing `gpu_memory_utilization` or decreasing "
      "`max_model_len` when initializing the engine.");
  CHECK(r["format"] == "vllm_v1_kv_cache");
  CHECK(r["extra"]["max_model_len"] == 40960);
  CHECK(u(r["extra"]["kv_cache_needed_bytes"]) == 10737418240);
  CHECK(u(r["extra"]["kv_cache_available_bytes"]) == 1342177280);
  CHECK(r["diagnosis"]["id"] == "kv_cache_too_large");

  // Hard-wrapped, with vLLM's own estimate: 1.0 GiB needed, 0.58 GiB = 622770258 available.
  json w = explain("ValueError: To serve at least one request with the model's max seq len (4096), (1.0 GiB KV cache is\n"
                   "needed, which is larger than the available KV cache memory (0.58 GiB). Based on the available "
                   "memory, the estimated maximum model length is 2368.");
  CHECK(u(w["extra"]["kv_cache_available_bytes"]) == 622770258);
  CHECK(w["extra"]["estimated_max_model_len"] == 2368);
  CHECK(w["fixes"][0]["text"].get<std::string>().find("2368") != std::string::npos);

  json none = explain("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                      "when initializing the engine.");
  CHECK(none["format"] == "vllm_no_cache_blocks");
  CHECK(none["diagnosis"]["id"] == "kv_cache_too_large");
}

TEST_CASE("oom: vLLM start-up free-memory check") {
  // 3.21 GiB = 3446711255; 4.0 GiB = 4294967296.
  json r = explain("ValueError: Free memory on device (3.21/4.0 GiB) on startup is less than desired GPU memory "
                   "utilization (0.85, 3.4 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                   "processes.");
  CHECK(r["format"] == "vllm_startup_free_memory");
  CHECK(u(r["free_bytes"]) == 3446711255);
  CHECK(u(r["total_bytes"]) == 4294967296);
  CHECK(r["diagnosis"]["id"] == "other_process");
}

TEST_CASE("oom: cuBLAS, cuDNN and the bare runtime error (oom-037, oom-041, oom-045)") {
  json blas = explain("File \"lib/python3.9/site-packages/torch/nn/modules/linear.py\", line 116, in forward\n    return "
                      "F.linear(input, self.weight, self.bias)\nRuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when "
                      "calling `cublasCreate(handle)`");
  CHECK(blas["origin"] == "cublas");
  CHECK(blas["backend"] == "cuda");
  json dnn = explain("train.py RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED");
  CHECK(dnn["origin"] == "cudnn");
  json ws = explain("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE");
  CHECK(ws["origin"] == "cudnn");
  json rt = explain(
      "Requested to load LTXV\nloaded partially; 4910.36 MB usable, 4910.36 MB loaded, 2888.31 MB offloaded, lowvram "
      "patches: 0\nAttempting to release mmap (398)\n!!! Exception during processing !!! CUDA error: out of memory\n"
      "Search for `cudaErrorMemoryAllocation' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
      "for more information.");
  CHECK(rt["origin"] == "cuda-runtime");
  CHECK(rt["app"] == "comfyui");
  CHECK(u(rt["extra"]["comfy_loaded_bytes"]) == 5148885647);
  CHECK(u(rt["extra"]["comfy_offloaded_bytes"]) == 3028612547);
  CHECK(rt["extra"]["comfy_model"] == "LTXV");
  CHECK(rt["fixes"][0]["id"].get<std::string>().rfind("comfy_", 0) == 0);  // ComfyUI-specific fixes first
  CHECK(rt["fixes"][0]["id"] == "comfy_reserve_vram");  // it had already loaded partially
  std::string preset;
  for (const auto& f : rt["fixes"])
    if (f.contains("preset")) preset = f["preset"];
  CHECK(preset == "fit this card");  // a presets.json name the web toast can apply
  bool listed = false;
  for (const auto& p : headroom::data_file("presets.json")["presets"]) listed = listed || p["name"] == preset;
  CHECK(listed);
  json hip = explain("RuntimeError: HIP error: out of memory");
  CHECK(hip["backend"] == "rocm");
}

TEST_CASE("oom: system RAM is not reported as VRAM (oom-065)") {
  json r = explain("- **Node ID:** 8\n- **Node Type:** VAEDecode\n- **Exception Type:** RuntimeError\n- **Exception "
                   "Message:** [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. DefaultCPUAllocator: not "
                   "enough memory: you tried to allocate 5242880 bytes.");
  CHECK(r["backend"] == "cpu");
  CHECK(u(r["requested_bytes"]) == 5242880);
  CHECK(r["total_bytes"].is_null());
  CHECK(r["diagnosis"]["id"] == "system_ram");
}

TEST_CASE("oom: DirectML and transformers' dispatch refusal") {
  json dml = explain("RuntimeError: Could not allocate tensor with 377487360 bytes. There is not enough GPU video "
                     "memory available!");
  CHECK(dml["backend"] == "directml");
  CHECK(u(dml["requested_bytes"]) == 377487360);
  json tf = explain("Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the "
                    "quantized model.");
  CHECK(tf["recognised"] == true);
  CHECK(tf["origin"] == "transformers");
}

TEST_CASE("oom: text that is not an out-of-memory message is not recognised") {
  const char* texts[] = {
      "",
      "Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n    x = d['model']\nKeyError: "
      "'model'",
      "RuntimeError: CUDA error: device-side assert triggered",
      "Prompt executed in 12.34 seconds",
      "The memory of the card is 24 GiB and it ran fine.",
      // Quoted source in a traceback that ends in another error.
      "  File \"run.py\", line 9\n    except torch.cuda.OutOfMemoryError:\n        retry()\nValueError: bad seed",
  };
  for (const char* t : texts) {
    json r = explain(t);
    CHECK(r["recognised"] == false);
    CHECK(r["diagnosis"].is_null());
    CHECK(r["requested_bytes"].is_null());
    CHECK(r["fixes"].empty());
  }
  std::mt19937 rng(1234);
  std::string noise(65536, '\0');
  for (auto& c : noise) c = static_cast<char>(rng() & 0xff);
  CHECK(explain(noise)["recognised"] == false);
}

TEST_CASE("oom: 10 MB inputs are handled quickly") {
  const std::string message =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 "
      "GiB of which 5.06 MiB is free.";
  std::string log;
  log.reserve(10u << 20);
  while (log.size() < (10u << 20)) log += "step 123/1000 loss=0.1234 lr=1e-5 [rank0]: fine | 12.5 GiB\n";
  std::string one_line(10u << 20, 'a');
  std::string digits(10u << 20, '7');
  auto t0 = std::chrono::steady_clock::now();
  json r = explain(log + message);
  CHECK(u(r["requested_bytes"]) == 20971520);
  CHECK(explain(one_line)["recognised"] == false);
  CHECK(explain(digits + " GiB")["recognised"] == false);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 5.0);  // three 10 MB inputs; measured 0.52 s on the shared 2-core build machine
}

TEST_CASE("oom text: sizes are exact to the printed decimals") {
  using headroom::oom::read_size;
  CHECK(read_size("44.53 GiB", 0)->bytes == 47813723423ull);  // oom-001 total
  CHECK(read_size("23.58GiB", 0)->bytes == 25318832210ull);   // oom-033, no space
  CHECK(read_size("256 bytes", 0)->bytes == 256ull);
  CHECK(read_size("0 bytes", 0)->bytes == 0ull);
  CHECK(read_size("13535.27 GiB", 0)->bytes == 14533385498132ull);  // oom-073
  CHECK_FALSE(read_size("17179869184.00 GiB", 0)->bytes.has_value());  // 2^64: does not fit
  CHECK_FALSE(read_size("12 Blocks", 0).has_value());
  CHECK_FALSE(read_size("GiB", 0).has_value());
}

TEST_CASE("oom: the explain CLI reads a file and sets its exit status") {
  std::string dir = "/tmp/headroom-test-explain-" + std::to_string(::getpid());
  std::string make = "mkdir -p " + dir;
  REQUIRE(std::system(make.c_str()) == 0);
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = dir + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return path;
  };
  auto status = [&](const std::string& args) {
    int s = std::system((std::string(HEADROOM_CLI) + " explain " + args + " > /dev/null 2>&1").c_str());
    return WEXITSTATUS(s);
  };
  std::string oom = write("oom.txt", "RuntimeError: CUDA error: out of memory");
  std::string other = write("other.txt", "KeyError: 'model'");
  CHECK(status(oom + " --json") == 0);
  CHECK(status(oom) == 0);
  CHECK(status(other + " --json") == 1);
  CHECK(status(dir + "/missing.txt") == 2);
  CHECK(status("--json < " + oom) == 0);  // stdin
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("oom: values copied from the text are valid UTF-8 (fuzzer finding)") {
  // A ComfyUI model name with bytes that are not UTF-8 (0xF5 can never start a sequence, 0xED 0xA0
  // is a surrogate); the JSON must still serialise.
  std::string text = "Requested to load LTX\xab\xf5\x93\x90\xed\xa0\x80 ok\nRuntimeError: CUDA error: out of memory";
  json r = explain(text);
  CHECK_NOTHROW(r.dump());
  CHECK(r["extra"]["comfy_model"].get<std::string>().rfind("LTX", 0) == 0);
  CHECK(headroom::oom::clean_utf8("caf\xc3\xa9 \xe4\xb8\xad") == "caf\xc3\xa9 \xe4\xb8\xad");  // valid kept
}

TEST_CASE("oom: more engines: Ollama, XLA, llama.cpp load errors, PyTorch XPU") {
  // 12.3 GiB = 13207024435, 8.1 GiB = 8697308774 (x 1024^3, half up).
  json ol = explain("Error: model requires more system memory (12.3 GiB) than is available (8.1 GiB)");
  CHECK(ol["format"] == "ollama_system_memory");
  CHECK(u(ol["requested_bytes"]) == 13207024435);
  CHECK(u(ol["free_bytes"]) == 8697308774);
  CHECK(ol["diagnosis"]["id"] == "system_ram");
  json x = explain("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                   "17179869184 bytes.");
  CHECK(x["origin"] == "xla");
  CHECK(u(x["requested_bytes"]) == 17179869184ull);
  json ll = explain("Error: llama runner process has terminated: error loading model: unable to allocate CUDA0 buffer");
  CHECK(ll["origin"] == "llama.cpp");
  CHECK(ll["app"] == "ollama");
  CHECK(ll["gpu_index"] == 0);
  // 2.00 GiB = 2147483648; 15.11 GiB = 16224238961 (x 1024^3, half up).
  json xpu = explain("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 15.11 GiB of which 1.00 GiB is free. Of the allocated memory 12.00 GiB is allocated "
                     "by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.");
  CHECK(xpu["backend"] == "xpu");
  CHECK(u(xpu["total_bytes"]) == 16224238961);
}

TEST_CASE("oom: vLLM fixes carry concrete token counts") {
  // V1 without vLLM's own estimate: 40960 x 1.25 / 10.00 = 5120 tokens fit.
  json r = explain("ValueError: To serve at least one request with the model's max seq len (40960), (10.00 GiB KV "
                   "cache is needed, which is larger than the available KV cache memory (1.25 GiB).");
  CHECK(r["fixes"][0]["text"].get<std::string>().find("5120") != std::string::npos);
  bool fp8 = false;
  for (const auto& f : r["fixes"])
    if (f["id"] == "vllm_kv_cache_fp8") fp8 = f["text"].get<std::string>().find("10240") != std::string::npos;
  CHECK(fp8);
}

TEST_CASE("oom text: rfind_str answers like std::string::rfind") {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string hay(rng() % 64, 'a');
    for (auto& c : hay) c = "abc"[rng() % 3];
    std::string needle(1 + rng() % 3, 'a');
    for (auto& c : needle) c = "abc"[rng() % 3];
    std::size_t pos = rng() % 3 == 0 ? std::string::npos : rng() % 70;
    INFO(hay << " / " << needle << " @ " << pos);
    CHECK(headroom::oom::rfind_str(hay, needle.c_str(), pos) == hay.rfind(needle, pos));
  }
}

TEST_CASE("oom: on Windows the fragmentation fix that works there comes first") {
  json r = explain("  File \"C:\\ComfyUI_windows_portable\\ComfyUI\\execution.py\", line 1, in f\n"
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 884.00 MiB. GPU 0 has a total "
                   "capacity of 12.00 GiB of which 38.73 MiB is free. Of the allocated memory 6.68 GiB is allocated by "
                   "PyTorch, and 3.96 GiB is reserved by PyTorch but unallocated.");
  CHECK(r["diagnosis"]["id"] == "fragmentation");
  CHECK(r["os"] == "windows");
  CHECK(r["fixes"][0]["id"] == "max_split_size");
  // expandable_segments is not supported on Windows: not offered there at all.
  for (const auto& f : r["fixes"]) {
    CHECK(f["id"] != "expandable_segments");
    CHECK(f["text"].get<std::string>().find("expandable_segments") == std::string::npos);
  }
}

namespace {

// A PyTorch sentence with 3.96 GiB reserved but unallocated, more than the 884 MiB requested.
const char* kFragmented =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 884.00 MiB. GPU 0 has a total capacity of 12.00 "
    "GiB of which 38.73 MiB is free. Of the allocated memory 6.68 GiB is allocated by PyTorch, and 3.96 GiB is "
    "reserved by PyTorch but unallocated.";
// Nothing cached: 11.2 GiB allocated of a 12 GiB card, 2 GiB requested.
const char* kTooBig =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 12.00 GiB "
    "of which 120.00 MiB is free. Of the allocated memory 11.20 GiB is allocated by PyTorch, and 40.00 MiB is "
    "reserved by PyTorch but unallocated.";

using oom_answers::has_fix;
inline std::string all_fix_text(const json& r) { return oom_answers::fix_text(r); }

}  // namespace

TEST_CASE("oom: the caller's context line gives a bare PyTorch message ComfyUI's levers") {
  json plain = explain(kTooBig);
  CHECK(plain["app"].is_null());
  CHECK(all_fix_text(plain).find("torch.inference_mode()") != std::string::npos);  // a PyTorch programmer's lever

  json comfy = explain(std::string(kTooBig) + "\nheadroom-context: app=comfyui os=linux\n");
  CHECK(comfy["app"] == "comfyui");
  CHECK(comfy["os"] == "linux");
  CHECK(comfy["diagnosis"]["id"] == "out_of_memory");
  CHECK(comfy["requested_bytes"] == plain["requested_bytes"]);  // the line changes no figure
  std::string text = all_fix_text(comfy);
  CHECK(text.find("torch.") == std::string::npos);
  CHECK(text.find("inference_mode") == std::string::npos);
  CHECK(text.find("weight_dtype") != std::string::npos);      // Load Diffusion Model's widget
  CHECK(text.find("VAE Decode (Headroom)") != std::string::npos);
  CHECK(text.find("batch_size") != std::string::npos);
  CHECK(text.find("--reserve-vram") != std::string::npos);    // launch flags of comfy/cli_args.py
  CHECK(text.find("--novram") != std::string::npos);
  std::string preset;
  for (const auto& f : comfy["fixes"])
    if (f.contains("preset")) preset = f["preset"];
  CHECK(preset == "fit this card");  // the job needs more than the card: the planner's preset answers it
}

TEST_CASE("oom: the message's own evidence wins over the context line") {
  json r = explain(std::string("  File \"C:\\ComfyUI_windows_portable\\ComfyUI\\execution.py\", line 1\n") +
                   kFragmented + "\nheadroom-context: app=comfyui os=linux");
  CHECK(r["os"] == "windows");
  json v = explain("Memory profiling results: total_gpu_memory=23.58GiB gpu_memory_utilization=0.90\nThe model's max "
                   "seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache "
                   "(23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
                   "the engine.\nheadroom-context: app=comfyui");  // oom-033, pasted into ComfyUI
  CHECK(v["origin"] == "vllm");
  CHECK(v["app"] == "vllm");
  json junk = explain(std::string(kFragmented) + "\nheadroom-context: app=<script> os=plan9 x");
  CHECK(junk["app"].is_null());
  CHECK(junk["os"].is_null());
  json mid = explain(std::string(kFragmented) + " headroom-context: app=comfyui");  // not a line of its own
  CHECK(mid["app"].is_null());
}

TEST_CASE("oom: fragmentation in ComfyUI: allocator settings for its OS, no preset, no torch calls") {
  json linux_r = explain(std::string(kFragmented) + "\nheadroom-context: app=comfyui os=linux");
  CHECK(linux_r["diagnosis"]["id"] == "fragmentation");
  CHECK(linux_r["fixes"][0]["id"] == "expandable_segments");
  std::string first = linux_r["fixes"][0]["text"];
  CHECK(first.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") != std::string::npos);
  std::string text = all_fix_text(linux_r);
  CHECK(text.find("Windows") == std::string::npos);  // said only where it applies
  CHECK(text.find("torch.cuda.empty_cache") == std::string::npos);
  CHECK(has_fix(linux_r, "comfy_cuda_malloc"));
  for (const auto& f : linux_r["fixes"]) CHECK(!f.contains("preset"));  // "fit this card" is unrelated here

  json windows_r = explain(std::string(kFragmented) + "\nheadroom-context: app=comfyui os=windows");
  CHECK(!has_fix(windows_r, "expandable_segments"));
  CHECK(windows_r["fixes"][0]["id"] == "max_split_size");

  json unknown = explain(kFragmented);  // no OS known: offered, with where it works
  CHECK(unknown["fixes"][0]["id"] == "expandable_segments");
  CHECK(unknown["fixes"][0]["text"].get<std::string>().find("Linux only") != std::string::npos);
}
