#pragma once
// From the figures of an out-of-memory message to a diagnosis in plain words and ordered fixes.
#include <nlohmann/json.hpp>

#include "core/oom/oom_report.hpp"

namespace headroom::oom {

// Sets report.diagnosis (and may add notes). Needs report.recognised; otherwise leaves it empty.
//
// Diagnoses, the first that applies wins:
//   system_ram               system RAM: PyTorch's CPU allocator, Ollama's RAM check, the process killed
//                            by the OOM killer / earlyoom / SIGKILL, the Windows portable closing right
//                            after a model load, or a run the caller reports as never finished
//   pinned_memory            pinned (page-locked) host memory: comfy-aimdo's HostBuffer, pin_memory()
//   dynamic_vram_address_space  comfy-aimdo could not reserve virtual address space (VBAR)
//   dynamic_vram_fault       comfy-aimdo's "Fault failed": a mapping refused for a reason other than
//                            a shortage
//   vae_tiled_retry          ComfyUI's tiled-VAE retry warning alone (not a failure)
//   kv_cache_too_large       vLLM refused the KV cache at start-up, or llama.cpp failed while creating
//                            the context (KV cache + compute buffer)
//   pytorch_limit            the per-process memory fraction refused it, not the card
//   request_larger_than_card one allocation is larger than the whole card (or the MPS limit)
//   freed_before_report      the message's own free figure covers the request: a momentary peak
//   other_process            other processes (PIDs listed) or memory outside PyTorch hold enough that,
//                            freed, the request would fit
//   fragmentation            PyTorch holds enough reserved-but-unallocated memory for the request
//   out_of_memory            the rest: the job needs more than the card has
// Fixes are in the terms of where it happened: ComfyUI's widgets and launch flags when Report::app is
// comfyui (and, within those, the levers of the loader that ran: dynamic VRAM or the legacy one),
// PyTorch calls for plain PyTorch, each engine's options for vLLM, llama.cpp and Ollama. Every fix says
// what it costs.
// The rules are an ordered table (oom_diagnose.cpp kRules); their words are native/data/oom_fixes.json,
// read once. Throws Error naming the file and the key when a text the rules use is missing (or the file
// has one they do not use).
Diagnosis diagnose(Report& report);

// The check diagnose() applies to oom_fixes.json at load, for a document given here (tests).
void check_texts(const nlohmann::json& doc);

}  // namespace headroom::oom
