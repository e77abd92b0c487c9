#include "core/estimate/runtime_policy.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/units.hpp"
#include "core/estimate/runtime_dynamic.hpp"

namespace headroom {
namespace {

std::uint64_t sum_weights(const StageDemand& d) { return demand_weight_bytes(d); }

std::uint64_t sum_transient(const StageDemand& d) {
  std::uint64_t s = 0;
  for (const auto& t : d.transient) s += t.second;
  return s;
}

std::string ratio(double x) { return ratio_text(x); }

}  // namespace

std::uint64_t demand_weight_bytes(const StageDemand& d) {
  std::uint64_t s = 0;
  for (const auto& w : d.weights) s += w.second;
  return s;
}

std::string ratio_text(double x) {
  // Sized by snprintf itself: a huge ratio is written whole, never cut at a buffer's end.
  const int n = std::snprintf(nullptr, 0, "%.1f", x);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::snprintf(out.data(), out.size() + 1, "%.1f", x);
  return out;
}

Stage tiled_retry(Stage s, const Stage& untiled, const std::string& stage_name, std::uint64_t vram) {
  s.full_load_bytes = untiled.full_load_bytes;
  s.min_bytes = untiled.min_bytes;
  s.mode = s.peak_bytes <= vram ? StageMode::TiledFallback : StageMode::DoesNotFit;
  s.notes.insert(s.notes.begin(), "the untiled " + stage_name + " needs " + format_bytes(untiled.peak_bytes) +
                                      "; ComfyUI runs out of memory and retries tiled");
  return s;
}

// Breakdown with every model fully resident.
Stage resident_stage(const StageDemand& d, const PolicyContext& c) {
  Stage s;
  s.name = d.name;
  s.breakdown["cuda_context"] = c.context_bytes;
  s.breakdown["comfyui_reserve"] = c.reserve_bytes;
  for (const auto& w : d.weights) s.breakdown["weights:" + w.first] += w.second;
  for (const auto& t : d.transient) s.breakdown[t.first] += t.second;
  for (const auto& r : d.reserved) s.breakdown[r.first] += r.second;
  const std::uint64_t oh = static_cast<std::uint64_t>(sum_transient(d) * c.allocator_overhead);
  s.breakdown["allocator_overhead"] = oh;
  for (const auto& kv : s.breakdown) s.peak_bytes += kv.second;
  s.resident = d.resident_labels;
  s.notes = d.notes;
  s.slowdown = d.slowdown;
  if (d.streamed_bytes) {
    const double transfer = transfer_seconds(d.streamed_bytes, c);
    s.slowdown *= 1.0 + transfer / std::max(forward_seconds(d, c), 1e-9);
  }
  s.full_load_bytes = s.peak_bytes;
  s.min_bytes = s.peak_bytes;
  return s;
}

namespace {

// The legacy loader's weights per model as they ended up in the stage's breakdown.
void record_residency(Stage& s, const StageDemand& d) {
  for (const auto& w : d.weights) {
    auto it = s.breakdown.find("weights:" + w.first);
    const std::uint64_t resident = it == s.breakdown.end() ? 0 : std::min(it->second, w.second);
    s.resident_bytes[w.first] += resident;
    if (w.second > resident) s.streamed_bytes[w.first] += w.second - resident;
  }
}

}  // namespace

PolicyContext policy_context(const Runtime& rt) {
  PolicyContext c;
  const std::uint64_t context = static_cast<std::uint64_t>(runtime_constant("cuda_context_bytes"));
  c.reserve_bytes = rt.reserve_bytes ? rt.reserve_bytes
                                     : static_cast<std::uint64_t>(runtime_constant(
                                           rt.windows ? "comfy_reserve_bytes_windows" : "comfy_reserve_bytes_linux"));
  // Windows reserves 100 MiB more on cards of 15 GiB and up (comfy/model_management.py).
  if (!rt.reserve_bytes && rt.windows && runtime_total_bytes(rt) > 15 * GiB)
    c.reserve_bytes += static_cast<std::uint64_t>(runtime_constant("comfy_reserve_bytes_windows_16gb_extra"));
  if (rt.free_bytes) {
    // Free memory as ComfyUI measures it: the context (and other processes) are already outside it.
    c.vram_bytes = rt.free_bytes;
    c.context_bytes = 0;
  } else {
    c.vram_bytes = rt.vram_bytes;
    c.context_bytes = context;
  }
  c.allocator_overhead = runtime_constant("allocator_overhead_fraction");
  c.allow_lowvram = rt.allow_lowvram;
  if (rt.ram_bytes || !rt.pinned_memory)
    c.pinned_limit_bytes = pinned_limit_bytes(rt.ram_bytes, rt.swap_bytes, rt.windows, rt.pinned_memory);
  c.offload_streams = rt.offload_streams >= 0 ? rt.offload_streams : static_cast<int>(runtime_constant("offload_streams"));
  c.pcie_bytes_per_s = rt.pcie_bytes_per_s > 0 ? rt.pcie_bytes_per_s : runtime_constant("pcie_bytes_per_s");
  c.flops_per_s = rt.flops_per_s > 0 ? rt.flops_per_s : runtime_constant("gpu_flops_per_s");
  if (rt.loader == Runtime::Loader::Dynamic) {
    // aimdo evicts weights until max(its own headroom counting every process, --reserve-vram counting
    // only its own use) stays free, plus --vram-headroom on top (comfy-aimdo control.c deficit). The
    // legacy EXTRA_RESERVED_VRAM default does not apply: --reserve-vram only when given.
    c.dynamic = true;
    c.reserve_bytes = 0;
    // On Windows aimdo polls the WDDM budget with a 512 MiB headroom instead (src-win/shmem-detect.c).
    const char* headroom = rt.windows ? "aimdo_headroom_bytes_windows" : "aimdo_headroom_bytes";
    c.keep_free_bytes = std::max<std::uint64_t>(static_cast<std::uint64_t>(runtime_constant(headroom)), rt.reserve_bytes) +
                        rt.vram_headroom_bytes;
  }
  return c;
}

std::uint64_t pinned_limit_bytes(std::uint64_t ram, std::uint64_t swap, bool windows, bool pinned_memory) {
  if (!pinned_memory) return 0;
  const double r = static_cast<double>(ram);
  if (windows) return static_cast<std::uint64_t>(0.4 * r);
  const double g4 = 4.0 * GiB, g16 = 16.0 * GiB;
  const double capped = std::min({0.9 * r, r - g4, r + static_cast<double>(swap) - g16});
  return static_cast<std::uint64_t>(std::max(0.4 * r, capped));
}

double transfer_seconds(std::uint64_t streamed, const PolicyContext& c) {
  const std::uint64_t pinned = std::min(streamed, c.pinned_limit_bytes);
  const double pageable_rate = c.pcie_bytes_per_s * runtime_constant("pageable_copy_fraction");
  return static_cast<double>(pinned) / c.pcie_bytes_per_s + static_cast<double>(streamed - pinned) / pageable_rate;
}

std::uint64_t runtime_total_bytes(const Runtime& rt) {
  if (rt.vram_bytes || !rt.free_bytes) return rt.vram_bytes;
  return rt.free_bytes + static_cast<std::uint64_t>(runtime_constant("cuda_context_bytes"));
}

std::uint64_t in_flight_bytes(const StageDemand& d, const PolicyContext& c) {
  const std::uint64_t layer = d.stored_layer_bytes ? d.stored_layer_bytes : d.stream_layer_bytes;
  if (!c.dynamic) return layer * (1 + static_cast<std::uint64_t>(c.offload_streams));
  // make_prefetch_queue returns no queue when NUM_STREAMS is 0: the model then streams layer by layer.
  // The next block is faulted in whole while the current one runs; before the first block that is the
  // largest layer outside the blocks (an LLM's token embedding), whichever is larger.
  if (d.prefetch_block_bytes && c.offload_streams > 0) return d.prefetch_block_bytes + std::max(d.prefetch_block_bytes, layer);
  return layer * static_cast<std::uint64_t>(std::max(1, c.offload_streams));
}

double forward_seconds(const StageDemand& d) { return d.flops_per_pass / runtime_constant("gpu_flops_per_s"); }

double forward_seconds(const StageDemand& d, const PolicyContext& c) {
  return d.flops_per_pass / (c.flops_per_s > 0 ? c.flops_per_s : runtime_constant("gpu_flops_per_s"));
}

Stage fit_stage(const StageDemand& d, const PolicyContext& c) {
  Stage s;
  if (c.dynamic) {
    s = fit_stage_dynamic(d, c);
    s.cache_floor_bytes = s.peak_bytes;  // aimdo evicts cached weights only when an allocation needs the room
  } else {
    s = fit_stage_legacy(d, c);
    record_residency(s, d);
    // load_models_gpu frees cached models until the stage's weights and ComfyUI's own inference
    // estimate fit; whatever is cached beyond that stays on the card.
    std::uint64_t weights = 0;
    for (const auto& kv : s.resident_bytes) weights += kv.second;
    const std::uint64_t keep = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(runtime_constant("minimum_inference_bytes")), d.comfy_minimum_bytes);
    s.cache_floor_bytes = std::max(s.peak_bytes, c.context_bytes + weights + keep + c.reserve_bytes);
  }
  // Sampling's forward passes per step at this card's throughput, slowed by what streams.
  if (d.name == "sample") s.seconds_per_step = d.passes * forward_seconds(d, c) * s.slowdown;
  return s;
}

namespace {

// What legacy ComfyUI streams when the stage's weights do not all fit: the resident share its own estimate
// leaves (fewer when the real activations need more room), each model scaled alike, and the slowdown.
struct LegacySplit {
  std::uint64_t weights, budget, min_resident, transient, layer;
};

Stage partial_stage(const StageDemand& d, const PolicyContext& c, const Stage& full, const LegacySplit& f) {
  const std::uint64_t V = c.vram_bytes, weights = f.weights, budget = f.budget, min_resident = f.min_resident;
  const std::uint64_t transient = f.transient, layer = f.layer;
  std::uint64_t resident = std::min(weights, std::max(min_resident, budget));
  // --reserve-vram only shrinks what ComfyUI loads; nothing is allocated in it, so the activations
  // of a partially loaded stage run in it (model_management.load_models_gpu, EXTRA_RESERVED_VRAM).
  // If ComfyUI's estimate leaves too little for the real activations, fewer weights must stay.
  const std::uint64_t used = c.context_bytes + transient + layer;
  const std::uint64_t room = V > used ? V - used : 0;
  bool comfy_overfills = resident > room;
  if (comfy_overfills) resident = std::max(min_resident, room);
  Stage s = full;
  s.mode = StageMode::Partial;
  s.breakdown.erase("comfyui_reserve");
  // Scale each model's resident share alike; report what stays on the card.
  const double keep = weights ? static_cast<double>(resident) / weights : 1.0;
  for (const auto& w : d.weights) s.breakdown["weights:" + w.first] = static_cast<std::uint64_t>(w.second * keep);
  s.breakdown["streamed_layer"] = layer;
  s.peak_bytes = 0;
  for (const auto& kv : s.breakdown) s.peak_bytes += kv.second;
  const std::uint64_t streamed = weights - resident;
  const double transfer = transfer_seconds(streamed, c);
  s.slowdown = full.slowdown * (1.0 + transfer / std::max(forward_seconds(d, c), 1e-9));
  if (s.peak_bytes > V) {
    s.mode = StageMode::DoesNotFit;
    s.notes.push_back("even with all weights streamed, the activations need " + format_bytes(s.peak_bytes) +
                      " on a " + format_bytes(V) + " card");
    return s;
  }
  s.notes.push_back("partial loading (lowvram): " + format_bytes(resident) + " of " + format_bytes(weights) +
                    " weights resident, " + format_bytes(streamed) + " streamed per forward pass, about " +
                    ratio(s.slowdown) + "x slower");
  if (comfy_overfills) {
    // ComfyUI sizes the resident share by its own estimate, which leaves less than the activations
    // need: as it is, the stage runs out of memory (users of such templates report OOMs in sampling).
    // What it would hold is the stage's peak; the lower share above is what makes it run.
    const std::uint64_t comfy_resident = std::min(weights, std::max(min_resident, budget));
    s.mode = StageMode::DoesNotFit;
    s.peak_bytes += comfy_resident - resident;
    s.notes.push_back("ComfyUI's own estimate keeps " + format_bytes(comfy_resident) +
                      " of weights loaded, which leaves too little for the activations: it runs out of memory "
                      "here; start ComfyUI with --reserve-vram " +
                      ratio((static_cast<double>(c.reserve_bytes) + comfy_resident - resident) / GiB + 0.5) +
                      " (GB)" + (d.name == "sample" ? " or use block swap" : "") + ", and it runs with " +
                      format_bytes(resident) + " resident");
  }
  return s;
}

}  // namespace

Stage fit_stage_legacy(const StageDemand& d, const PolicyContext& c) {
  Stage full = resident_stage(d, c);
  const std::uint64_t V = c.vram_bytes;
  const std::uint64_t weights = sum_weights(d);
  const std::uint64_t fixed = c.context_bytes + c.reserve_bytes;
  const std::uint64_t transient = full.peak_bytes - fixed - weights;  // incl. overhead and reserved items

  // Smallest need when ComfyUI streams all it can: min_lowvram_weights_bytes resident (no floor since
  // lowvram_model_memory = max(0, ...)) and the offload buffer.
  const std::uint64_t min_resident = static_cast<std::uint64_t>(runtime_constant("min_lowvram_weights_bytes"));
  const std::uint64_t layer = in_flight_bytes(d, c);
  if (d.partial_loadable && c.allow_lowvram && weights > min_resident)
    full.min_bytes = fixed + min_resident + transient + layer;
  std::optional<Stage> fallback;  // priced once: used for min_bytes and, when the full stage fails, as the stage
  if (!d.fallback.empty()) {
    fallback = resident_stage(d.fallback.front(), c);
    full.min_bytes = std::min(full.min_bytes, fallback->peak_bytes);
  }

  if (V == 0) return full;
  // ComfyUI keeps max(0.8 GiB + reserve, its own estimate + reserve) free and fills the rest with
  // weights (model_management.load_models_gpu); the rest is cast in per layer at each forward. It
  // decides on its own estimate, so it may load partially even where the real need would fit.
  const bool can_stream = d.partial_loadable && c.allow_lowvram && weights > min_resident;
  const std::uint64_t keep_free =
      std::max<std::uint64_t>(static_cast<std::uint64_t>(runtime_constant("minimum_inference_bytes")) + c.reserve_bytes,
                              d.comfy_minimum_bytes + c.reserve_bytes);
  const std::uint64_t budget = V > c.context_bytes + keep_free ? V - c.context_bytes - keep_free : 0;
  if (full.peak_bytes <= V && !(can_stream && weights > budget)) return full;

  if (can_stream) return partial_stage(d, c, full, {weights, budget, min_resident, transient, layer});

  if (fallback) return tiled_retry(std::move(*fallback), full, d.name, V);

  full.mode = StageMode::DoesNotFit;
  full.notes.push_back("needs " + format_bytes(full.peak_bytes) + " on a " + format_bytes(V) + " card");
  return full;
}

}  // namespace headroom
