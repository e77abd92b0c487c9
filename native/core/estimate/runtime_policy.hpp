#pragma once
// ComfyUI's loading policy applied to one stage's demand: everything resident while it fits,
// partial loading (lowvram: part of the weights stream per layer) when it does not, the automatic
// tiled retry of the VAE decode after an OOM, and the fixed costs (CUDA context, ComfyUI's reserve,
// allocator overhead) so that the result is reserved memory on the card.
#include <cstdint>

#include "core/estimate/estimator.hpp"
#include "core/estimate/memory_model.hpp"

namespace headroom {

struct PolicyContext {
  std::uint64_t vram_bytes = 0;        // 0 = no card: report the unconstrained need
  std::uint64_t reserve_bytes = 0;     // ComfyUI's reserve (counted in every stage's peak)
  std::uint64_t context_bytes = 0;     // CUDA context outside PyTorch's allocator
  double allocator_overhead = 0.2;     // reserved/allocated - 1 for transient tensors
  bool allow_lowvram = true;
  // Dynamic VRAM (runtime_dynamic.hpp): what aimdo keeps free beside the stage, and the rates the
  // slowdown of streamed weights is priced at.
  bool dynamic = false;
  std::uint64_t keep_free_bytes = 0;   // max(aimdo's headroom, --reserve-vram) + --vram-headroom
  int offload_streams = 2;             // ComfyUI's NUM_STREAMS (--async-offload N, 0 = --disable-async-offload)
  double pcie_bytes_per_s = 0;
  double flops_per_s = 0;
  // Host memory ComfyUI pins for streamed weights (pinned_limit_bytes); what streams beyond it is
  // copied from pageable memory, slower. UINT64_MAX = no limit known (host RAM not given).
  std::uint64_t pinned_limit_bytes = UINT64_MAX;
};

// ComfyUI's cap on pinned host memory: Linux max(0.4 RAM, min(0.9 RAM, RAM - 4 GiB, RAM + swap - 16 GiB)),
// Windows 40 % of RAM (Comfy-Org/ComfyUI comfy/model_management.py@02b2b388); 0 with
// --disable-pinned-memory.
std::uint64_t pinned_limit_bytes(std::uint64_t ram, std::uint64_t swap, bool windows, bool pinned_memory);
// Seconds to copy `streamed` bytes in: pinned at the link's rate, the rest pageable at
// pageable_copy_fraction of it.
double transfer_seconds(std::uint64_t streamed, const PolicyContext& context);

PolicyContext policy_context(const Runtime& runtime);

// The card's total memory: vram_bytes, or with only free_bytes given, free + the CUDA context
// (a lower bound: other processes' memory is unknown).
std::uint64_t runtime_total_bytes(const Runtime& runtime);

// The stage as it runs on the card. `demand.fallback` (VAE decode) is used when the full decode
// does not fit, as ComfyUI retries tiled after the OOM.
Stage fit_stage(const StageDemand& demand, const PolicyContext& context);
// The legacy loader alone (ComfyUI before 0.15; GGUF models under any version).
Stage fit_stage_legacy(const StageDemand& demand, const PolicyContext& context);
// The weights a stage needs on the card, summed; and a ratio as the notes print it ("1.6").
std::uint64_t demand_weight_bytes(const StageDemand& demand);
std::string ratio_text(double x);

// The stage with every model it needs fully resident, before any card policy.
Stage resident_stage(const StageDemand& demand, const PolicyContext& context);
// ComfyUI's retry after the untiled VAE decode ran out of memory: the tiled stage `tiled`, keeping the
// untiled stage's figures (full load, least need) and saying why it retried; it fits or not on `vram`.
Stage tiled_retry(Stage tiled, const Stage& untiled, const std::string& stage_name, std::uint64_t vram);

// The weights in flight while a stage streams, beside the resident ones. Legacy (ModelPatcher.load):
// the offload buffer of the module plus the next NUM_STREAMS modules, as stored. Dynamic
// (ops.cast_modules_with_vbar, model_prefetch.py): one stored layer per offload stream (one at least:
// with no stream the cast runs on the compute stream), or, for a model whose loop prefetches whole
// blocks, the next block beside the running one (or beside the largest layer outside the blocks). The cast to the compute dtype is the stage's
// dequant_transient, counted with the activations.
std::uint64_t in_flight_bytes(const StageDemand& demand, const PolicyContext& context);

// Seconds of one forward pass, for the offload slowdown (rough: see models.json runtime).
double forward_seconds(const StageDemand& demand);
double forward_seconds(const StageDemand& demand, const PolicyContext& context);

}  // namespace headroom
