#include "core/oom/oom_diagnose.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

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

std::string node(const Report& r) {
  return r.extra.contains("comfy_node") && r.extra["comfy_node"].is_string() ? r.extra["comfy_node"].get<std::string>()
                                                                            : "";
}

std::string alloc_conf_var(const Report& r) {
  return r.backend == "rocm" ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}

std::string smi(const Report& r) { return r.backend == "rocm" ? "rocm-smi --showpids" : "nvidia-smi"; }

bool comfy(const Report& r) { return r.app == "comfyui"; }

// The allocator settings exist on Linux only ("expandable_segments not supported on this platform" on
// Windows; PyTorch's CUDA caching allocator docs). Unknown OS: offer it, and say where it works.
bool expandable_segments_apply(const Report& r) { return r.os != "windows" && r.os != "macos"; }
std::string linux_only(const Report& r) { return r.os == "linux" ? std::string() : std::string(" (Linux only)"); }

// Fixes for the general case, by the software that ran out. `offer_plan_preset`: the diagnosis is
// "the job needs more memory than the card has", which the planner's "fit this card" preset answers;
// for fragmentation or another process on the card it would be an unrelated change.
void general_fixes(const Report& r, std::vector<Fix>& f, bool offer_plan_preset) {
  if (comfy(r)) {
    // ComfyUI's own levers: widgets of its nodes and its launch flags (comfy/cli_args.py).
    std::string nd = node(r);
    const bool partial = r.extra.contains("comfy_offloaded_bytes");
    if (partial)
      f.push_back({"comfy_reserve_vram",
                   "ComfyUI had already left part of the model in RAM (loaded partially), so its estimate of the "
                   "room needed for activations was too small: start it with --reserve-vram 1.5 (GB kept free)."});
    bool decode = nd.find("VAEDecode") != std::string::npos || nd.find("VAE Decode") != std::string::npos;
    if (decode)
      f.push_back({"comfy_tiled_decode",
                   "Replace VAE Decode with VAE Decode (Headroom) (mode auto decodes in tiles that fit the free "
                   "memory) or VAE Decode (Tiled) with tile_size 512 or lower."});
    if (r.backend != "mps")  // Apple's MPS has no float8 type
      f.push_back({"comfy_fp8_weights",
                   "Load the diffusion model in fp8: in Load Diffusion Model set weight_dtype to fp8_e4m3fn (halves "
                   "the weights; activations stay 16-bit), or start ComfyUI with --fp8_e4m3fn-unet."});
    f.push_back({"smaller_shape", "Lower batch_size, width/height or length (frames) in the Empty Latent node: memory "
                                  "grows with pixels x frames; upscale afterwards."});
    f.push_back({"comfy_gguf", "Use a GGUF quantised model (Q8_0, Q5_K_M or Q4_K_M) with the ComfyUI-GGUF loaders."});
    if (!decode)
      f.push_back({"comfy_tiled_decode",
                   "If it fails at the VAE decode, use VAE Decode (Headroom) or VAE Decode (Tiled)."});
    if (r.backend == "mps")
      f.push_back({"mps_watermark", "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts PyTorch's limit on Apple silicon, "
                                    "but the system may then swap heavily or freeze."});
    if (!partial)
      f.push_back({"comfy_reserve_vram",
                   "Start ComfyUI with --reserve-vram 1.5 (GB it keeps free for activations and other programs; "
                   "raise it if a browser or another app shares the card)."});
    f.push_back({"comfy_lowvram",
                 "Start ComfyUI with --novram to stream every weight to the GPU per layer (slowest, least VRAM). "
                 "With --disable-dynamic-vram, --lowvram keeps the weights that do not fit in RAM; with dynamic "
                 "VRAM (the default) it changes nothing."});
    // "fit this card" is the planner's cheapest set of changes for the current card (presets.json); the
    // web toast offers the first fix that names a preset as a one-click button.
    if (offer_plan_preset)
      f.push_back({"headroom_plan",
                   "Let Headroom apply the cheapest changes that fit this card (preset \"fit this card\"), or run "
                   "`headroom plan workflow.json --gpu YOUR_CARD` to see the peak per stage.",
                   "fit this card"});
    else
      f.push_back({"headroom_plan", "Add Preflight (Headroom) before the sampler to see the peak per stage against "
                                    "the card before the next run."});
    return;
  }
  if (r.origin == "llama.cpp") {
    f.push_back({"llama_cpp_fewer_gpu_layers",
                 "Offload fewer layers to the GPU: lower -ngl / --n-gpu-layers (Ollama: the num_gpu option)."});
    f.push_back({"llama_cpp_smaller_quant", "Use a smaller quantisation of the model (e.g. Q4_K_M instead of Q8_0)."});
    f.push_back({"llama_cpp_smaller_context",
                 "Lower the context size (-c / --ctx-size; Ollama: num_ctx) and quantise the KV cache "
                 "(-ctk q8_0 -ctv q8_0 with -fa)."});
    return;
  }
  if (r.origin == "transformers") {
    f.push_back({"smaller_model", "Use a smaller model or a stronger quantisation (4-bit instead of 8-bit) so every "
                                  "module fits on the GPU."});
    f.push_back({"transformers_cpu_offload",
                 "Or allow CPU offload explicitly: BitsAndBytesConfig(llm_int8_enable_fp32_cpu_offload=True) with a "
                 "custom device_map (the offloaded modules run slowly on the CPU)."});
    return;
  }
  if (r.app == "vllm") {
    f.push_back({"vllm_gpu_memory_utilization",
                 "Lower --gpu-memory-utilization if other work shares the card, or raise it if vLLM is alone on it."});
    f.push_back({"vllm_smaller_batch", "Lower --max-num-seqs and --max-num-batched-tokens (smaller activation peak)."});
    f.push_back({"vllm_enforce_eager", "Add --enforce-eager to skip CUDA graph capture and its memory."});
    return;
  }
  if (r.origin == "cudnn")
    f.push_back({"cudnn_no_benchmark",
                 "Set torch.backends.cudnn.benchmark = False: benchmarking tries algorithms with large workspaces."});
  if (r.origin == "cublas")
    f.push_back({"cublas_memory_full",
                 "cuBLAS could not get memory for its handle or workspace: the card was already full when the first "
                 "matrix multiply ran. Check what else is on it with " + smi(r) + "."});
  f.push_back({"smaller_batch", "Lower the batch size or the input size (resolution, sequence length)."});
  f.push_back({"lower_precision",
               "Run in bf16/fp16 (torch.autocast or model.half()), or load quantised weights (8-bit or 4-bit)."});
  f.push_back({"no_grad_or_checkpointing",
               "Inference: wrap it in torch.inference_mode(). Training: enable gradient checkpointing "
               "(activations are recomputed instead of stored)."});
}

}  // namespace

Diagnosis diagnose(Report& r) {
  Diagnosis d;
  if (!r.recognised) return d;

  // Derived figures (the message's own fields stay as printed).
  std::optional<u64> reserved_total = r.reserved_total_bytes;
  if (!reserved_total && r.allocated_bytes && r.reserved_unallocated_bytes)
    reserved_total = *r.allocated_bytes + *r.reserved_unallocated_bytes;
  std::optional<u64> reserved_free = r.reserved_unallocated_bytes;
  if (!reserved_free && r.reserved_total_bytes && r.allocated_bytes && *r.reserved_total_bytes >= *r.allocated_bytes)
    reserved_free = *r.reserved_total_bytes - *r.allocated_bytes;

  // Which listed processes are other programs. PyTorch lists every process on the device by PID and,
  // when NVML can match our own PID, reports it separately as "this process has". Inside a container
  // the PIDs do not match, so our own process shows up as "Process N" (oom-001): a listed process
  // holding at least what our allocator reserved is most likely ourselves.
  u64 foreign = 0;
  std::vector<ProcessUse> foreign_list;
  if (r.other_processes) {
    bool self_found = r.process_bytes.has_value();
    for (const auto& p : *r.other_processes) {
      if (!self_found && reserved_total && p.bytes >= *reserved_total) {
        self_found = true;
        r.notes.push_back("Process " + std::to_string(p.pid) + " (" + b(p.bytes) +
                          ") is most likely this process seen through a container's PID namespace: it holds at "
                          "least what PyTorch reserved here (" + b(*reserved_total) + ").");
        continue;
      }
      foreign += p.bytes;
      foreign_list.push_back(p);
    }
  }

  const bool have_req = r.requested_bytes.has_value();
  const u64 req = r.requested_bytes.value_or(0);
  const u64 free = (r.free_bytes && !(r.total_bytes && *r.free_bytes > *r.total_bytes)) ? *r.free_bytes : 0;

  if (r.format == "cpu_allocator" || r.format == "ollama_system_memory") {
    d.id = "system_ram";
    d.text = "The computer ran out of system RAM" +
             (have_req ? " while allocating " + b(req) : std::string()) +
             "; this is not GPU memory. Models offloaded from the GPU, cached models and the decoded images all "
             "live in RAM.";
    d.fixes.push_back({"free_ram", "Close other programs, or give the system more swap / a larger page file."});
    if (comfy(r))
      d.fixes.push_back({"comfy_ram_growth",
                         "If RAM grows over many runs, restart ComfyUI between batches, or start it with "
                         "--cache-none so finished outputs are not kept."});
    if (r.origin == "ollama")
      d.fixes.push_back({"smaller_quant", "Pull a smaller quantisation of the model (e.g. a q4_K_M tag) or a "
                                          "smaller model."});
    else
      d.fixes.push_back({"smaller_shape", "Lower the batch size or resolution of the step that failed."});
    return d;
  }

  if (r.origin == "vllm" && r.format != "vllm_startup_free_memory") {
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
      d.text = "vLLM found no memory left for the KV cache: the weights and the profiled activations already use "
               "all of gpu_memory_utilization x the card.";
      d.fixes.push_back({"vllm_gpu_memory_utilization", "Raise --gpu-memory-utilization (e.g. 0.95) if nothing else "
                                                        "runs on the card."});
      d.fixes.push_back({"vllm_quantised_weights", "Serve a quantised model (FP8, AWQ or GPTQ 4-bit) to leave room "
                                                   "for the KV cache."});
      d.fixes.push_back({"vllm_smaller_batch", "Lower --max-num-batched-tokens / --max-num-seqs and add "
                                               "--enforce-eager (smaller profiling peak, no CUDA graphs)."});
      d.fixes.push_back({"vllm_tensor_parallel", "Split the model over more GPUs with --tensor-parallel-size."});
      return d;
    }
    d.text = "vLLM cannot hold the KV cache for one request of the full context" +
             (max_len.empty() ? std::string() : " (" + max_len + " tokens)") +
             (fits.empty() ? std::string() : "; the memory left after the weights holds " + fits + " tokens") + ".";
    d.fixes.push_back({"vllm_max_model_len", "Lower --max-model-len" +
                                                 (fits.empty() ? std::string(" (the context you really need).")
                                                               : " to " + fits + " or less.")});
    std::string util = r.extra.contains("gpu_memory_utilization") && r.extra["gpu_memory_utilization"].is_number()
                           ? std::to_string(r.extra["gpu_memory_utilization"].get<double>()).substr(0, 4)
                           : "";
    d.fixes.push_back({"vllm_gpu_memory_utilization",
                       "Raise --gpu-memory-utilization" + (util.empty() ? std::string() : " (now " + util + ")") +
                           " toward 0.95 if nothing else runs on the card."});
    std::string fp8_tokens;
    if (!fits.empty()) fp8_tokens = " holds about " + std::to_string(2 * std::stoull(fits)) + " tokens in the same memory";
    d.fixes.push_back({"vllm_kv_cache_fp8", "Store the KV cache in 8 bit: --kv-cache-dtype fp8 (half the bytes per "
                                            "token" + (fp8_tokens.empty() ? std::string(")") : ";" + fp8_tokens + ")") +
                                                "."});
    d.fixes.push_back({"vllm_tensor_parallel", "Split over more GPUs with --tensor-parallel-size, or serve a "
                                               "quantised model to leave more room for the cache."});
    d.fixes.push_back({"headroom_llm", "Size it with `headroom llm --model NAME --context TOKENS --gpu CARD`."});
    return d;
  }

  if (r.origin == "llama.cpp" && r.extra.value("llama_cpp_phase", "") == "create_context") {
    d.id = "kv_cache_too_large";
    d.text = "llama.cpp ran out while creating the context" +
             (have_req ? " (" + b(req) + " in one buffer)" : std::string()) +
             ": the KV cache and the compute buffer grow with the context size and the batch.";
    d.fixes.push_back({"llama_cpp_smaller_context", "Lower the context: -c / --ctx-size (Ollama: num_ctx)."});
    d.fixes.push_back({"llama_cpp_kv_quant", "Quantise the KV cache: -fa -ctk q8_0 -ctv q8_0 (half of f16)."});
    d.fixes.push_back({"llama_cpp_ubatch", "Lower the physical batch: -ub / --ubatch-size 256 (smaller compute "
                                           "buffer)."});
    if (r.extra.contains("llama_cpp_pipeline_copies")) {
      // Pipeline parallelism keeps n_copies compute buffers (oom-029 shows n_copies=4).
      d.fixes.push_back({"llama_cpp_pipeline_copies",
                         "With several GPUs, pipeline parallelism keeps several copies of the compute buffer; build "
                         "with -DGGML_SCHED_MAX_COPIES=1 or use --split-mode row/none to avoid them."});
    }
    d.fixes.push_back({"llama_cpp_fewer_gpu_layers", "Offload fewer layers: lower -ngl."});
    return d;
  }

  if (have_req && r.total_bytes && req > *r.total_bytes) {
    d.id = "request_larger_than_card";
    if (r.backend == "mps") {
      d.text = "One allocation of " + b(req) + " is larger than PyTorch's MPS limit (" + b(*r.total_bytes) + ").";
    } else {
      d.text = "One allocation of " + b(req) + " is larger than the whole card (" + b(*r.total_bytes) +
               "): no amount of freeing memory makes it fit.";
    }
    if (req > 4 * *r.total_bytes)
      d.text += " A single tensor this large usually means an unexpected shape (an attention matrix over far more "
                "tokens than intended, a wrong resolution or frame count).";
    d.fixes.push_back({"smaller_shape", "Reduce the input that sets this tensor: resolution, frame count, batch size "
                                        "or sequence length."});
    d.fixes.push_back({"memory_efficient_attention",
                       "Use memory-efficient attention so the full attention matrix is never built (PyTorch SDPA, "
                       "xformers or SageAttention; ComfyUI: --use-pytorch-cross-attention or "
                       "--use-sage-attention)."});
    if (comfy(r))
      d.fixes.push_back({"comfy_tiled_decode",
                         "If it fails at the VAE decode, use VAE Decode (Headroom) or VAE Decode (Tiled)."});
    if (r.backend == "mps")
      d.fixes.push_back({"mps_watermark", "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 removes the limit, but the system "
                                          "may then swap heavily or freeze; prefer a smaller shape."});
    return d;
  }

  // Memory outside what PyTorch reserved in this process: other programs or non-PyTorch memory.
  std::optional<u64> outside;
  if (r.total_bytes && r.free_bytes && free <= *r.total_bytes) {
    u64 used = *r.total_bytes - free;
    // cudaMallocAsync reports only what is allocated; it has trimmed its pool before raising, so
    // allocated is what this process's PyTorch holds (oom-013).
    std::optional<u64> mine = r.process_bytes ? r.process_bytes : reserved_total;
    if (!mine && r.format == "pytorch_async") mine = r.allocated_bytes;
    if (mine && used > *mine) outside = used - *mine;
  }
  bool foreign_matters = foreign > 0 && (foreign >= GiB || !have_req || foreign + free >= req);
  bool outside_matters = !foreign_matters && foreign_list.empty() && outside && *outside > kContextMargin &&
                         (!have_req || *outside + free >= req);
  if (r.format == "vllm_startup_free_memory" || foreign_matters || outside_matters) {
    d.id = "other_process";
    if (r.format == "vllm_startup_free_memory") {
      d.text = "When vLLM started, less memory was free" +
               (r.free_bytes && r.total_bytes ? " (" + b(*r.free_bytes) + " of " + b(*r.total_bytes) + ")"
                                              : std::string()) +
               " than its --gpu-memory-utilization asks for: something else already holds part of the card.";
      d.fixes.push_back({"close_other_processes", "Stop what else uses the card (see " + smi(r) + ")."});
      d.fixes.push_back({"vllm_gpu_memory_utilization",
                         "Or lower --gpu-memory-utilization to fit the free memory (free / total)."});
      return d;
    }
    if (foreign_matters) {
      std::string list;
      for (const auto& p : foreign_list) list += (list.empty() ? "" : ", ") + std::to_string(p.pid) + " (" + b(p.bytes) + ")";
      d.text = "Other processes hold " + b(foreign) + " of this card: PID " + list + "." +
               (have_req && foreign + free >= req ? " Without them the request (" + b(req) + ") would fit."
                                                  : std::string());
      d.fixes.push_back({"close_other_processes", "Stop or move the other processes (PID " + list + "); " + smi(r) +
                                                      " shows what they are."});
    } else {
      d.text = b(*outside) + " of the card is used outside this process's PyTorch memory: another program (a second "
               "training rank, a viewer, another ComfyUI) or a library allocating outside PyTorch." +
               (have_req ? " Without it the request (" + b(req) + ") would fit." : std::string());
      d.fixes.push_back({"close_other_processes", "Check " + smi(r) + " for other processes on GPU " +
                                                      (r.gpu_index ? std::to_string(*r.gpu_index) : std::string("0")) +
                                                      " and stop them."});
      if (r.extra.contains("distributed"))
        d.fixes.push_back({"one_rank_per_gpu",
                         "In multi-GPU training, call torch.cuda.set_device(local_rank) before creating any tensor so "
                         "every rank does not also put a context on GPU 0."});
    }
    if (comfy(r))
      d.fixes.push_back({"pick_idle_gpu", "Run ComfyUI on an idle GPU: start it with --cuda-device N."});
    else
      d.fixes.push_back({"pick_idle_gpu", "Run on an idle GPU: CUDA_VISIBLE_DEVICES=N (HIP_VISIBLE_DEVICES on ROCm)."});
    general_fixes(r, d.fixes, false);
    return d;
  }

  bool fragmented = false;
  if (reserved_free) {
    // "Large" as PyTorch's hint means: enough for the request, and not a rounding remainder (oom-049
    // has 185 MiB cached on a 4 GiB card that is simply too small).
    u64 floor = std::max<u64>(256 * MiB, r.total_bytes ? *r.total_bytes / 20 : 0);
    if (have_req) fragmented = *reserved_free >= req && *reserved_free >= floor;
    if (!fragmented && reserved_total && *reserved_free >= GiB && *reserved_free * 4 >= *reserved_total)
      fragmented = true;
  }
  if (fragmented) {
    d.id = "fragmentation";
    d.text = "PyTorch holds " + b(*reserved_free) + " reserved but unallocated" +
             (have_req ? ", more than the " + b(req) + " requested," : std::string()) +
             " yet no single free block is large enough: the cache is fragmented.";
    const std::string var = alloc_conf_var(r);
    if (expandable_segments_apply(r)) {
      d.fixes.push_back({"expandable_segments",
                         comfy(r) ? "Start ComfyUI with " + var + "=expandable_segments:True in its environment (e.g. `" +
                                        var + "=expandable_segments:True python main.py`)" + linux_only(r) +
                                        ", so freed blocks can grow instead of fragmenting."
                                  : "Set " + var + "=expandable_segments:True before starting Python" + linux_only(r) +
                                        ", so freed blocks can grow instead of fragmenting."});
    }
    d.fixes.push_back({"max_split_size", (comfy(r) ? "Start ComfyUI with " : "Set ") + var +
                                             "=max_split_size_mb:512" + (comfy(r) ? " in its environment" : "") +
                                             " so large cached blocks are not split for small tensors."});
    if (comfy(r)) {
      d.fixes.push_back({"comfy_cuda_malloc",
                         "Or start ComfyUI with --cuda-malloc: PyTorch's cudaMallocAsync backend hands freed memory back "
                         "to the driver instead of keeping a fragmented cache (ComfyUI leaves it off on cards where it "
                         "misbehaved)."});
      d.fixes.push_back({"comfy_restart",
                         "ComfyUI unloads its models after an out-of-memory error; if the next run fails the same way, "
                         "restart ComfyUI (a new process starts with an empty cache)."});
    } else {
      d.fixes.push_back({"empty_cache", "Free cached blocks between stages: torch.cuda.empty_cache() after large "
                                        "temporary tensors are dropped."});
    }
    general_fixes(r, d.fixes, false);
    return d;
  }

  d.id = "out_of_memory";
  if (have_req && r.total_bytes) {
    std::string held = reserved_total    ? ", " + b(*reserved_total) + " held by PyTorch"
                       : r.allocated_bytes ? ", " + b(*r.allocated_bytes) + " allocated by PyTorch"
                                           : "";
    std::string limit = r.backend == "mps" ? " of PyTorch's MPS limit " : " of the card's ";
    d.text = "The job needs more memory than the card has: " + b(req) + " more was requested" +
             (r.free_bytes ? " with " + b(free) + " free" + limit + b(*r.total_bytes) : limit + b(*r.total_bytes)) +
             held + ".";
    if (!r.free_bytes) d.text = "The job needs more memory than the card has: " + b(req) + " more was requested" + held +
                                " (limit " + b(*r.total_bytes) + ").";
  } else if (r.origin == "cublas" || r.origin == "cudnn" || r.origin == "miopen") {
    d.text = "The GPU ran out of memory while " + r.origin + " allocated its workspace or handle; the message "
             "carries no figures.";
  } else {
    d.text = "The GPU ran out of memory; the message carries no figures about what used it.";
  }
  general_fixes(r, d.fixes, true);
  return d;
}

}  // namespace headroom::oom
