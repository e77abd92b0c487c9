// Failures of 2026 that never say "CUDA out of memory" (issue 22): comfy-aimdo under dynamic VRAM, pinned
// memory, the system ending the process, the Windows portable closing silently, ComfyUI's own OOM lines,
// cuDNN's "no algorithm" and Ollama's runner exit. Each message is copied from the public report named
// next to it (log prefixes as pasted); where only the printing code was read, the text is the code's and
// the file is named. Expected byte values: the printed figure x 1024^n (ComfyUI's and the kernel's MB/kB
// are binary).
#include <string>

#include "catch.hpp"
#include "oom/oom_answers.hpp"
#include "core/api/api.hpp"

using headroom::api::explain;
using nlohmann::json;

namespace {

std::uint64_t u(const json& v) { return v.get<std::uint64_t>(); }

using oom_answers::has_fix;
using oom_answers::fix_text;

bool contains(const std::string& s, const char* t) { return s.find(t) != std::string::npos; }

// ComfyUI's levers only: no PyTorch-programmer calls, and every fix says what it costs.
void check_comfy_fixes(const json& r) {
  REQUIRE(!r["fixes"].empty());
  const std::string text = fix_text(r);
  CHECK(!contains(text, "torch."));
  CHECK(!contains(text, "inference_mode"));
  for (const auto& f : r["fixes"]) {
    INFO(f["id"]);
    const std::string t = f["text"];
    CHECK((contains(t, "Costs:") || contains(t, "costs:")));
  }
}

}  // namespace

TEST_CASE("oom comfy: comfy-aimdo's VBAR address reservation fails (laptop, vGPU)") {
  // Comfy-Org/ComfyUI#16225 (2026-09-10), the error report of an RTX 5060 Laptop GPU; fixed by
  // --disable-dynamic-vram.
  json laptop = explain("- **Node ID:** 7\n- **Node Type:** CLIPTextEncode\n- **Exception Type:** MemoryError\n"
                        "- **Exception Message:** MemoryError: VBAR allocation failed");
  REQUIRE(laptop["recognised"] == true);
  CHECK(laptop["format"] == "aimdo_vbar_reserve");
  CHECK(laptop["origin"] == "comfy-aimdo");
  CHECK(laptop["app"] == "comfyui");
  CHECK(laptop["extra"]["comfy_node"] == "CLIPTextEncode");
  CHECK(laptop["extra"]["comfy_dynamic_vram"] == true);
  CHECK(laptop["diagnosis"]["id"] == "dynamic_vram_address_space");
  CHECK(contains(laptop["diagnosis"]["text"], "not VRAM running out"));
  CHECK(has_fix(laptop, "comfy_disable_dynamic_vram"));
  CHECK(contains(fix_text(laptop), "--disable-dynamic-vram"));
  CHECK(contains(fix_text(laptop), "comfy-aimdo 0.2.6"));  // the leak fix, Comfy-Org/ComfyUI PR #12764
  check_comfy_fixes(laptop);

  // comfy-aimdo#25 (2026-03-31), an NVIDIA A40-24Q vGPU: the library's own line (its spelling) first.
  json vgpu = explain("Requested to load AutoencoderKL\naimdo: src/model-vbar.c:200:ERROR:Could not reseve Virtual "
                      "Address space for VBAR\n!!! Exception during processing !!! VBAR allocation failed");
  CHECK(vgpu["format"] == "aimdo_vbar_reserve");
  CHECK(vgpu["extra"]["comfy_model"] == "AutoencoderKL");
  CHECK(vgpu["diagnosis"]["id"] == "dynamic_vram_address_space");

  // comfy-aimdo#49 (2026-05-12): the cast buffer's reservation (comfy_aimdo/vram_buffer.py).
  json cast = explain("RuntimeError: VRAM reservation failed");
  CHECK(cast["format"] == "aimdo_vbar_reserve");
  CHECK(cast["extra"]["aimdo_error"] == "VRAM reservation failed");
}

TEST_CASE("oom comfy: comfy-aimdo's Fault failed on the second generation") {
  // Comfy-Org/ComfyUI#15269 (2026-08-03, QwenImage, comfy-aimdo 0.4.11).
  json r = explain("[INFO] Model QwenImage prepared for dynamic VRAM loading. 19483MB Staged. 720 patches attached. "
                   "Force pre-loaded 241 weights: 72 KB.\n\nError during second generation:\naimdo: "
                   "src/model-vbar.c:393:ERROR:VRAM Allocation failed (non OOM)\nRuntimeError: Fault failed: 2\n\n"
                   "Full traceback:\n[ERROR] !!! Exception during processing !!! Fault failed: 2");
  REQUIRE(r["recognised"] == true);
  CHECK(r["format"] == "aimdo_fault");
  CHECK(r["app"] == "comfyui");
  CHECK(r["extra"]["comfy_staged_model"] == "QwenImage");
  CHECK(u(r["extra"]["comfy_staged_bytes"]) == 19483ull * 1048576);
  CHECK(r["diagnosis"]["id"] == "dynamic_vram_fault");
  CHECK(contains(r["diagnosis"]["text"], "not the card being full"));
  CHECK(r["fixes"][0]["id"] == "comfy_requeue");  // comfy-aimdo#100: "a retry makes it go away"
  CHECK(has_fix(r, "comfy_update"));
  CHECK(has_fix(r, "comfy_disable_dynamic_vram"));
  check_comfy_fixes(r);

  // Comfy-Org/ComfyUI#12943, comment of 2026-08-09 (RTX 3090, Windows portable 0.31.0): the driver call.
  json d = explain("CUDA API FAILED (600): err = cuMemSetAccess(vaddr, size, &accessDesc, 1): device not ready\n"
                   "VRAM Allocation failed (non OOM)\nRuntimeError: Fault failed: 2");
  CHECK(d["format"] == "aimdo_fault");
  CHECK(d["extra"]["cuda_api"] == "cuMemSetAccess");
  CHECK(d["extra"]["cuda_error"] == "device not ready");
  CHECK(d["extra"]["cuda_error_code"] == 600);
  CHECK(contains(d["diagnosis"]["text"], "cuMemSetAccess: device not ready"));

  // The same issue's description (2026-03-14, comfy-aimdo 0.2.x): --verbose DEBUG spelling, no error code,
  // the next log line glued on after normalising.
  json old = explain("aimdo: D:\\a\\comfy-aimdo\\comfy-aimdo\\src\\plat.h:142:DEBUG:CUDA API FAILED : err = "
                     "cuMemSetAccess(vaddr, size, &accessDesc, 1) : device not ready\naimdo: "
                     "src/model-vbar.c:307:ERROR:VRAM Allocation failed (non OOM)");
  CHECK(old["format"] == "aimdo_fault");
  CHECK(old["extra"]["cuda_error"] == "device not ready");
  CHECK(!old["extra"].contains("cuda_error_code"));
}

TEST_CASE("oom comfy: pinned-memory HostBuffer failures come before the CUDA OOM that follows them") {
  // Comfy-Org/ComfyUI#14250, comment of 2026-08-03: "The first relevant Python exception is: RuntimeError:
  // HostBuffer.read_file_slice failed ... It is followed by `CUDA error: out of memory`"; the workaround
  // is --disable-pinned-memory (#14250 title; maintainers in #15255).
  json r = explain("RuntimeError: HostBuffer.read_file_slice failed\nCUDA error: out of memory");
  REQUIRE(r["recognised"] == true);
  CHECK(r["format"] == "aimdo_host_buffer");
  CHECK(r["diagnosis"]["id"] == "pinned_memory");
  CHECK(contains(r["diagnosis"]["text"], "NVIDIA"));
  CHECK(r["fixes"][0]["id"] == "comfy_disable_pinned_memory");
  CHECK(contains(r["fixes"][0]["text"].get<std::string>(), "--disable-pinned-memory"));
  CHECK(has_fix(r, "comfy_cuda_device"));
  check_comfy_fixes(r);

  // Plain PyTorch: pinning host RAM reports failure with the runtime's words (tensor.pin_memory() ->
  // cudaHostAlloc -> C10_CUDA_CHECK); the traceback names the call. Constructed in PyTorch's wording.
  json pin = explain("  File \"train.py\", line 40, in <module>\n    batch = batch.pin_memory()\nRuntimeError: CUDA error: "
                     "out of memory");
  CHECK(pin["format"] == "cuda_runtime");
  CHECK(pin["extra"]["pinned_host_memory"] == "pin_memory");
  CHECK(pin["diagnosis"]["id"] == "pinned_memory");
  CHECK(pin["fixes"][0]["id"] == "pin_memory_off");
}

TEST_CASE("oom comfy: the Linux OOM killer, earlyoom and a log that ends in Killed") {
  // equinor/ert#7797 (2024-04-29): dmesg --time-format iso around a kill.
  json k = explain("2024-04-29T14:55:41,678628+02:00 pool invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), "
                   "order=0, oom_score_adj=0\n2024-04-29T14:55:41,679700+02:00 Out of memory: Killed process 1440763 "
                   "(perl) total-vm:87033376kB, anon-rss:60356340kB, file-rss:0kB, shmem-rss:0kB, UID:21417 "
                   "pgtables:169956kB oom_score_adj:0\n2024-04-29T14:55:46,947445+02:00 oom_reaper: reaped process "
                   "1440763 (perl), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB");
  REQUIRE(k["recognised"] == true);
  CHECK(k["format"] == "linux_oom_killer");
  CHECK(k["backend"] == "cpu");
  CHECK(k["os"] == "linux");
  CHECK(k["extra"]["killed_pid"] == 1440763);
  CHECK(k["extra"]["killed_process"] == "perl");
  CHECK(u(k["extra"]["killed_rss_bytes"]) == 60356340ull * 1024);
  CHECK(k["diagnosis"]["id"] == "system_ram");
  CHECK(contains(k["diagnosis"]["text"], "out-of-memory killer"));

  // intel/platform-resource-manager#42 (2019-03-14): older kernels' "Kill process ... or sacrifice child".
  json old = explain("[Thu Mar 14 01:57:55 2019] Out of memory: Kill process 89746 (python) score 1031 or sacrifice child\n"
                     "[Thu Mar 14 01:57:55 2019] Killed process 89746 (python) total-vm:118026216kB, anon-rss:109819332kB, "
                     "file-rss:3324kB, shmem-rss:0kB");
  CHECK(old["format"] == "linux_oom_killer");
  CHECK(u(old["extra"]["killed_rss_bytes"]) == 109819332ull * 1024);

  // Comfy-Org/ComfyUI#15276 (2026-08-04): earlyoom ends ComfyUI (journal prefixes as pasted).
  json e = explain("Aug 04 10:39:10 debian earlyoom[845]: low memory! at or below SIGTERM limits: mem  3.00%, swap 10.00%\n"
                   "Aug 04 10:39:10 debian earlyoom[845]: sending SIGTERM to process 322603 uid 1000 \"python3.13\": "
                   "oom_score 1282, VmRSS 29931 MiB, cmdline \"/home/x/miniconda3/envs/comfy-env/bin/python3.13 main.py "
                   "--listen 0.0.0.0 --reserve-vram=0.05 --use-sage-attention --fast\"\nAug 04 10:48:44 debian "
                   "earlyoom[845]: mem avail:   105 of 30236 MiB ( 0.35%), swap free:  486 of 5119 MiB ( 9.50%)\n"
                   "headroom-context: app=comfyui");
  CHECK(e["format"] == "earlyoom");
  CHECK(e["extra"]["killed_process"] == "python3.13");
  CHECK(u(e["extra"]["killed_rss_bytes"]) == 29931ull * 1048576);
  CHECK(u(e["extra"]["host_ram_available_bytes"]) == 105ull * 1048576);
  CHECK(u(e["extra"]["host_ram_total_bytes"]) == 30236ull * 1048576);
  CHECK(e["diagnosis"]["id"] == "system_ram");
  CHECK(contains(e["diagnosis"]["text"], "earlyoom"));
  // ComfyUI's RAM levers, and Linux's own (swap), not the Windows page file.
  CHECK(has_fix(e, "comfy_disable_pinned_memory"));
  CHECK(has_fix(e, "comfy_cache_ram"));
  CHECK(contains(fix_text(e), "swap"));
  CHECK(!contains(fix_text(e), "page file"));
  check_comfy_fixes(e);

  // kijai/ComfyUI-WanVideoWrapper#20 (2025-02-26): the sampler finished, then the shell's "Killed".
  json killed = explain("100%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 30/30 [06:13<00:00, 12.46s/it]\nKilled\n");
  CHECK(killed["format"] == "process_killed");
  CHECK(killed["diagnosis"]["id"] == "system_ram");
  // Comfy-Org/ComfyUI#3430 (2024-05-08): bash reports the script's child, behind a compose prefix.
  json script = explain("comfyui     | /home/scripts/entrypoint.sh: line 42:     8 Killed                  python3 "
                        "./ComfyUI/main.py --listen --port 8188 ${CLI_ARGS}");
  CHECK(script["format"] == "process_killed");
  CHECK(script["app"] == "comfyui");
  // Ollama's runner got SIGKILL (llm/server.go's "llama runner process has terminated: %v"; ollama/ollama#788).
  json ollama = explain("Error: llama runner process has terminated: signal: killed");
  CHECK(ollama["format"] == "process_killed");
  CHECK(ollama["app"] == "ollama");
  CHECK(has_fix(ollama, "smaller_quant"));

  // "Killed" that is not the last line is not a kill report.
  CHECK(explain("Killed\nPrompt executed in 2.10 seconds")["recognised"] == false);
}

TEST_CASE("oom comfy: the Windows portable closes with no error after Requested to load") {
  // Comfy-Org/ComfyUI#10542 (2025-10-30): RTX 4090, 64 GB RAM, the window's last lines.
  json r = explain("loaded partially; 17987.61 MB usable, 17972.17 MB loaded, 20995.72 MB offloaded, lowvram patches: 651\n"
                   "loaded partially; 18679.20 MB usable, 18677.40 MB loaded, 20290.49 MB offloaded, lowvram patches: 0\n"
                   "(RES4LYF) rk_type: euler\n100%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 50/50 [02:35<00:00,  3.12s/it]\n"
                   "Requested to load WanVAE\n\nC:\\GenBot\\ComfyUI_windows_portable>pause");
  REQUIRE(r["recognised"] == true);
  CHECK(r["format"] == "windows_silent_exit");
  CHECK(r["os"] == "windows");
  CHECK(r["app"] == "comfyui");
  CHECK(r["extra"]["comfy_model"] == "WanVAE");
  CHECK(r["diagnosis"]["id"] == "system_ram");
  CHECK(contains(r["diagnosis"]["text"], "\"Requested to load WanVAE\""));
  const std::string text = fix_text(r);
  CHECK(contains(text, "page file"));
  CHECK(contains(text, "--disable-pinned-memory"));
  CHECK(!contains(text, "swap file"));
  // The legacy loader's "loaded partially" lines and no dynamic VRAM line: --fast-disk does not apply.
  CHECK(r["extra"]["comfy_dynamic_vram"] == false);
  CHECK(!has_fix(r, "comfy_fast_disk"));
  check_comfy_fixes(r);

  // Comfy-Org/ComfyUI#6770 (2025-02-10): the portable failing to start also ends in "pause"; no model was
  // being loaded, and Python printed its error.
  json start = explain("K:\\ComfyUI_windows_portable>.\\python_embeded\\python.exe -s ComfyUI\\main.py "
                       "--windows-standalone-build\n.\\python_embeded\\python.exe: can't open file "
                       "'K:\\\\ComfyUI_windows_portable\\\\ComfyUI\\\\main.py': [Errno 2] No such file or directory\n\n"
                       "K:\\ComfyUI_windows_portable>pause\nPress any key to continue . . .");
  CHECK(start["recognised"] == false);
}

TEST_CASE("oom comfy: ComfyUI's own out-of-memory lines") {
  // execution.py (Comfy-Org/ComfyUI@cb707e9c) logs this line for a torch.cuda.OutOfMemoryError; pasted
  // alone it still means PyTorch ran out, with no figures.
  json hint = explain("Got an OOM, unloading all loaded models.");
  REQUIRE(hint["recognised"] == true);
  CHECK(hint["format"] == "comfyui_oom_hint");
  CHECK(hint["app"] == "comfyui");
  CHECK(hint["diagnosis"]["id"] == "out_of_memory");
  CHECK(contains(hint["diagnosis"]["text"], "unloaded all models"));
  check_comfy_fixes(hint);

  // Comfy-Org/ComfyUI#7164 (2025-03-10): with the PyTorch message above it, the figures come from there.
  json full = explain("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.11 GiB. GPU 0 has a total capacity of "
                      "11.98 GiB of which 1.48 GiB is free. Of the allocated memory 9.97 GiB is allocated by PyTorch, and "
                      "176.02 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
                      "setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
                      "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n\n"
                      "Got an OOM, unloading all loaded models.\nPrompt executed in 15.86 seconds");
  CHECK(full["format"] == "pytorch_sentence");
  CHECK(full["backend"] == "rocm");
  CHECK(full["app"] == "comfyui");
  CHECK(u(full["requested_bytes"]) == 2265595249);  // 2.11 GiB x 1024^3 = 2265595248.64, half up

  // Acly/krita-ai-diffusion#86 (2023-11-20): the tiled retry's warning alone ("Prompt generates"); the 2023
  // wording, without "VAE" after "regular".
  json warn = explain("Warning: Ran out of memory when regular decoding, retrying with tiled VAE decoding.");
  CHECK(warn["format"] == "comfyui_vae_tiled_retry");
  CHECK(warn["diagnosis"]["id"] == "vae_tiled_retry");
  CHECK(contains(warn["diagnosis"]["text"], "Not a failure by itself"));
  CHECK(warn["fixes"][0]["id"] == "comfy_tiled_decode");
  // Today's wording (comfy/sd.py@033046cc), the encode side.
  json enc = explain("Warning: Ran out of memory when regular VAE encoding, retrying with tiled VAE encoding.");
  CHECK(enc["extra"]["vae_stage"] == "encode");
  CHECK(contains(enc["diagnosis"]["text"], "VAE encode"));

  // lamikr/rocm_sdk_builder#98: the tiled retry itself ran out (the message cut after "GPU"): smaller tiles.
  json tiled = explain("Warning: Ran out of memory when regular VAE decoding, retrying with tiled VAE decoding.\n!!! Exception "
                       "during processing!!! HIP out of memory. Tried to allocate 2.25 GiB. GPU ");
  CHECK(tiled["format"] == "pytorch_sentence_truncated");
  CHECK(tiled["extra"]["comfy_vae_tiled_retry"] == true);
  CHECK(tiled["fixes"][0]["text"].get<std::string>().find("smaller tile_size") != std::string::npos);
}

TEST_CASE("oom comfy: the diagnosis agrees with cudaMallocAsync's own figures") {
  // Real cudaMallocAsync messages with less free than requested keep "needs more than the card" (oom-061,
  // Comfy-Org/ComfyUI#8687: 10.94 MiB free, 192 MiB requested).
  json short_r = explain("Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : "
                         "22.45 GiB\nRequested               : 192.00 MiB\nDevice limit            : 23.69 GiB\nFree "
                         "(according to CUDA): 10.94 MiB\nPyTorch limit (set by user-supplied memory fraction)\n         "
                         "               : 17179869184.00 GiB");
  CHECK(short_r["diagnosis"]["id"] == "out_of_memory");

  // The message's layout (c10/cuda/CUDAMallocAsyncAllocator.cpp) with free above the request: the free
  // figure is read after the failure, so the card was not short then. Figures constructed.
  const std::string freed =
      "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently "
      "allocated     : 10.20 GiB\nRequested               : 1.00 GiB\nDevice limit            : 23.99 GiB\nFree "
      "(according to CUDA): 9.50 GiB\nPyTorch limit (set by user-supplied memory fraction)\n                        : "
      "17179869184.00 GiB";
  json plain = explain(freed);
  CHECK(plain["diagnosis"]["id"] == "freed_before_report");
  CHECK(!contains(plain["diagnosis"]["text"], "more memory than the card has"));
  CHECK(contains(plain["diagnosis"]["text"], "9.50 GiB of 23.99 GiB was free"));
  CHECK(has_fix(plain, "retry_after_empty_cache"));
  CHECK(has_fix(plain, "pytorch_native_allocator"));
  json comfy = explain(freed + "\nheadroom-context: app=comfyui os=windows");
  CHECK(comfy["diagnosis"]["id"] == "freed_before_report");
  CHECK(has_fix(comfy, "comfy_disable_cuda_malloc"));
  CHECK(contains(fix_text(comfy), "--disable-cuda-malloc"));
  check_comfy_fixes(comfy);

  // A memory fraction below the card: PyTorch refused before asking the driver (same source file).
  const std::string fraction =
      "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently "
      "allocated     : 11.50 GiB\nRequested               : 1.00 GiB\nDevice limit            : 23.99 GiB\nFree "
      "(according to CUDA): 12.00 GiB\nPyTorch limit (set by user-supplied memory fraction)\n                        : "
      "12.00 GiB";
  json limit = explain(fraction);
  CHECK(limit["diagnosis"]["id"] == "pytorch_limit");
  CHECK(contains(limit["diagnosis"]["text"], "exceed the 12.00 GiB"));
  CHECK(limit["fixes"][0]["id"] == "pytorch_memory_fraction");
  json comfy_limit = explain(fraction + "\nheadroom-context: app=comfyui");
  CHECK(comfy_limit["diagnosis"]["id"] == "pytorch_limit");
  CHECK(contains(comfy_limit["fixes"][0]["text"], "custom node"));
  check_comfy_fixes(comfy_limit);
}

TEST_CASE("oom comfy: dynamic VRAM in the log changes the levers") {
  // A PyTorch OOM under dynamic VRAM: --reserve-vram and --lowvram do not make room there (comfy-aimdo evicts
  // cached weights first), so ComfyUI's update and --disable-dynamic-vram are offered instead. The staged
  // line is Comfy-Org/ComfyUI PR #12658's (2026-02-26); the OOM follows PyTorch's wording.
  json r = explain("Model Flux2 prepared for dynamic VRAM loading. 33813MB Staged.\ntorch.OutOfMemoryError: CUDA out of "
                   "memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 31.36 GiB of which 1.10 GiB is free. "
                   "Of the allocated memory 28.90 GiB is allocated by PyTorch, and 40.00 MiB is reserved by PyTorch but "
                   "unallocated.");
  CHECK(r["diagnosis"]["id"] == "out_of_memory");
  CHECK(contains(r["diagnosis"]["text"], "Dynamic VRAM was on (Flux2: 33.02 GiB of weights staged)"));
  CHECK(!has_fix(r, "comfy_reserve_vram"));
  CHECK(!has_fix(r, "comfy_lowvram"));
  CHECK(!has_fix(r, "comfy_gguf"));
  CHECK(has_fix(r, "comfy_disable_dynamic_vram"));
  // The caller's loader=legacy keeps the legacy levers for a bare message.
  json legacy = explain("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                        "of 12.00 GiB of which 120.00 MiB is free. Of the allocated memory 11.20 GiB is allocated by "
                        "PyTorch, and 40.00 MiB is reserved by PyTorch but unallocated.\n"
                        "headroom-context: app=comfyui loader=legacy");
  CHECK(legacy["extra"]["comfy_dynamic_vram"] == false);
  CHECK(has_fix(legacy, "comfy_reserve_vram"));
  CHECK(!has_fix(legacy, "comfy_disable_dynamic_vram"));
}

TEST_CASE("oom comfy: cuDNN found no algorithm, and Ollama's runner exits") {
  // marqo-ai/marqo#101 (2022-09-30, "This is due to OOM with the GPU") and XPixelGroup/DiffBIR#59 (2023-10-11).
  json v7 = explain("RuntimeError: Unable to find a valid cuDNN algorithm to run convolution");
  REQUIRE(v7["recognised"] == true);
  CHECK(v7["format"] == "cudnn_no_algorithm");
  CHECK(v7["origin"] == "cudnn");
  CHECK(v7["diagnosis"]["id"] == "out_of_memory");
  CHECK(has_fix(v7, "cudnn_disable"));  // the way to tell memory from an incompatibility
  // The v8 benchmark path (aten/src/ATen/native/cudnn/Conv_v8.cpp try_plans), in ComfyUI: leave --fast
  // autotune out.
  json v8 = explain("RuntimeError: FIND was unable to find an engine to execute this computation\n"
                    "headroom-context: app=comfyui");
  CHECK(v8["format"] == "cudnn_no_algorithm");
  CHECK(has_fix(v8, "comfy_fast_autotune"));
  check_comfy_fixes(v8);
  // PyTorch 2's default (no benchmarking) says GET; the diagnosis names the other cause it shares.
  json get = explain("RuntimeError: GET was unable to find an engine to execute this computation");
  CHECK(get["format"] == "cudnn_no_algorithm");
  CHECK(get["extra"]["cudnn_path"] == "v8_heuristics");
  CHECK(contains(get["diagnosis"]["text"], "no kernel for this GPU or data type"));

  // Ollama's llm/server.go: the runner's stream ended.
  json ol = explain("Error: llama runner exited, you may not have enough available memory to run this model");
  CHECK(ol["format"] == "ollama_runner_exited");
  CHECK(ol["app"] == "ollama");
  CHECK(has_fix(ol, "llama_cpp_fewer_gpu_layers"));
  // ollama/ollama#11750 (2025-08-06): a Metal compute buffer, which has no device index.
  json metal = explain("500 Internal Server Error: llama runner process has terminated: error:failed to allocate buffer, "
                       "size = 16571.89 MiB ggml_gallocr_reserve_n: failed to allocate Metal buffer of size 17376872352");
  CHECK(metal["format"] == "llama_cpp_alloc");
  CHECK(metal["backend"] == "metal");
  CHECK(u(metal["requested_bytes"]) == 17376872352ull);
  CHECK(metal["app"] == "ollama");
  CHECK(metal["diagnosis"]["id"] == "kv_cache_too_large");  // ggml_gallocr: the context's compute buffer
}

TEST_CASE("oom comfy: a run that never finished, reported on the next start") {
  // The run recorder's context line (oom_parse.hpp) with the log's last lines; figures as it would record.
  json r = explain("got prompt\nRequested to load WAN21\n 35%| 7/20 [01:10<02:11, 10.1s/it]\n"
                   "headroom-context: app=comfyui os=linux run=unfinished stage=sampling ram_available=1073741824 "
                   "ram_total=34359738368");
  REQUIRE(r["recognised"] == true);
  CHECK(r["format"] == "comfyui_unfinished_run");
  CHECK(r["extra"]["comfy_stage"] == "sampling");
  CHECK(u(r["extra"]["host_ram_available_bytes"]) == 1073741824);
  CHECK(r["diagnosis"]["id"] == "system_ram");
  CHECK(contains(r["diagnosis"]["text"], "1.00 GiB of 32.00 GiB RAM was available"));
  CHECK(!contains(r["diagnosis"]["text"], "RAM was not short"));
  CHECK(contains(fix_text(r), "swap"));
  check_comfy_fixes(r);
  // An error ComfyUI caught earlier in the tail is an earlier run's; how the process ended still wins.
  json earlier = explain("Got an OOM, unloading all loaded models.\nPrompt executed in 15.86 seconds\ngot prompt\n"
                         "headroom-context: app=comfyui run=unfinished");
  CHECK(earlier["format"] == "comfyui_unfinished_run");
  json killed = explain("got prompt\nKilled\nheadroom-context: app=comfyui run=unfinished");
  CHECK(killed["format"] == "process_killed");
  // Plenty of RAM at the last record: said so.
  json ok = explain("headroom-context: app=comfyui run=unfinished ram_available=20000000000 ram_total=34359738368");
  CHECK(contains(ok["diagnosis"]["text"], "RAM was not short at that record"));
  // Without run=unfinished an empty log is nothing; malformed figures are ignored, not believed.
  CHECK(explain("headroom-context: app=comfyui")["recognised"] == false);
  json bad = explain("headroom-context: run=unfinished ram_available=-5 ram_total=12GB stage=<b>");
  CHECK(bad["recognised"] == true);
  CHECK(!bad["extra"].contains("host_ram_total_bytes"));
  CHECK(!bad["extra"].contains("comfy_stage"));
}

TEST_CASE("oom comfy: errors that are not memory failures stay unrecognised") {
  const char* texts[] = {
      // Comfy-Org/ComfyUI#10396 (2025-10-19): a workflow with a node that is not installed.
      "got prompt\ninvalid prompt: {'type': 'invalid_prompt', 'message': 'Cannot execute because a node is missing the "
      "class_type property.', 'details': \"Node ID '#32'\", 'extra_info': {}}",
      // Comfy-Org/ComfyUI#9062 (2025-07-26): the same, as the frontend's error report.
      "# ComfyUI Error Report\n## Error Details\n- **Node ID:** N/A\n- **Node Type:** N/A\n- **Exception Type:** Prompt "
      "execution failed\n- **Exception Message:** Cannot execute because a node is missing the class_type property.: "
      "Node ID '#16'",
      // darksidewalker/ComfyUI-DaSiWa-Nodes#13 (2026-08-07): a custom node's KeyError in ComfyUI's log.
      "[INFO] got prompt\n[ERROR] !!! Exception during processing !!! 'imd'\n[ERROR] Traceback (most recent call last):\n"
      "  File \"S:\\ComfyUI_windows_portable\\ComfyUI-Easy-Install\\ComfyUI\\execution.py\", line 545, in execute\n"
      "KeyError: 'imd'",
      // Comfy-Org/ComfyUI#5636 (2024-11-16): a KeyError as ComfyUI's error report.
      "# ComfyUI Error Report\n## Error Details\n- **Node Type:** easy forLoopEnd\n- **Exception Type:** KeyError\n- "
      "**Exception Message:** '141.0.0.3.0.0.91'",
      // ollama/ollama#4794 (2024-06-03): the runner's illegal-instruction exit (a CPU without AVX), not memory.
      "Error: llama runner process has terminated: exit status 0xc000001d",
      // cuDNN refusing a layout (pytorch/pytorch#4107's message), not memory.
      "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous "
      "input.",
      // ComfyUI's pin warning is recovered from (comfy/model_management.py pin_memory falls back).
      "Pin error.",
  };
  for (const char* t : texts) {
    INFO(t);
    json r = explain(t);
    CHECK(r["recognised"] == false);
    CHECK(r["fixes"].empty());
  }
}
