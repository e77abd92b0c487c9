#include "core/estimate/runtime_dynamic.hpp"
#include "core/catalog/verdict.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "core/base/units.hpp"

namespace headroom {
namespace {

// The stage fully resident, with what aimdo keeps free in its breakdown instead of the legacy reserve.
Stage resident_dynamic(const StageDemand& d, const PolicyContext& c) {
  Stage s = resident_stage(d, c);
  s.breakdown.erase("comfyui_reserve");  // 0 under dynamic VRAM: --reserve-vram is in keep_free_bytes
  s.breakdown["dynamic_vram_headroom"] = c.keep_free_bytes;
  s.peak_bytes = 0;
  for (const auto& kv : s.breakdown) s.peak_bytes += kv.second;
  s.full_load_bytes = s.peak_bytes;
  s.loader = Runtime::Loader::Dynamic;
  for (const auto& w : d.weights) s.resident_bytes[w.first] += w.second;
  return s;
}

// The kept-free room gives way before an allocation fails: a stage that fits without it runs with
// less of it (the card filled to its edge).
bool give_up_headroom(Stage& s, std::uint64_t V) {
  const std::uint64_t room = s.breakdown.count("dynamic_vram_headroom") ? s.breakdown["dynamic_vram_headroom"] : 0;
  if (V == 0 || s.peak_bytes <= V || s.peak_bytes - room > V) return s.peak_bytes <= V;
  s.breakdown["dynamic_vram_headroom"] = room - (s.peak_bytes - V);
  s.peak_bytes = V;
  return true;
}

}  // namespace

Stage fit_stage_dynamic(const StageDemand& d, const PolicyContext& c) {
  Stage full = resident_dynamic(d, c);
  const std::uint64_t weights = demand_weight_bytes(d);
  const std::uint64_t fixed = c.context_bytes + c.keep_free_bytes;
  const std::uint64_t activations = full.peak_bytes - fixed - weights;  // transients, overhead, reserved items
  // Weights in flight while streaming (in_flight_bytes). A stage whose layer size the data does not give
  // (a VAE) cannot be priced as streaming: all its weights count.
  const std::uint64_t layer = in_flight_bytes(d, c);
  const std::uint64_t in_flight = layer ? std::min<std::uint64_t>(weights, layer) : weights;
  // What aimdo keeps free is not an out-of-memory line: only a weight page is refused for it (vbar_fault);
  // torch and cast-buffer allocations evict what they can and are then made anyway (comfy-aimdo 0.6.0,
  // set_simple_vram_headroom: "counted against it but never refused"). So it decides how many weights stay
  // resident, and the least the run needs is the context, the activations and the layers in flight.
  const std::uint64_t required = c.context_bytes + activations + in_flight;
  full.min_bytes = required;
  std::optional<Stage> fallback;
  if (!d.fallback.empty()) {
    fallback = resident_dynamic(d.fallback.front(), c);
    full.min_bytes = std::min(full.min_bytes, fallback->peak_bytes - c.keep_free_bytes);
  }
  const std::uint64_t V = c.vram_bytes;
  if (V == 0 || full.peak_bytes <= V) return full;

  if (required <= V && in_flight < weights) {
    Stage s = full;
    s.mode = StageMode::Streams;
    // Weights stay only where they leave the kept-free room free beside the working set.
    const std::uint64_t resident = V > required + c.keep_free_bytes ? std::min(weights, V - required - c.keep_free_bytes) : 0;
    const double keep = weights ? static_cast<double>(resident) / weights : 1.0;
    s.resident_bytes.clear();
    for (const auto& w : d.weights) {
      const auto r = static_cast<std::uint64_t>(w.second * keep);
      s.breakdown["weights:" + w.first] = r;
      s.resident_bytes[w.first] += r;
      s.streamed_bytes[w.first] += w.second - r;
    }
    s.breakdown["streaming_buffers"] = in_flight;
    // With every weight streamed the run still goes on when the kept-free room is not there: it shrinks.
    s.breakdown["dynamic_vram_headroom"] = std::min(c.keep_free_bytes, V - required - resident);
    s.peak_bytes = 0;
    for (const auto& kv : s.breakdown) s.peak_bytes += kv.second;
    s.peak_bytes = std::min(s.peak_bytes, V);  // the card fills to its edge and no further
    const std::uint64_t streamed = weights - resident;
    const double transfer = transfer_seconds(streamed, c);
    s.slowdown = full.slowdown * (1.0 + transfer / std::max(forward_seconds(d, c), 1e-9));
    s.notes.push_back("dynamic VRAM: " + format_bytes(resident) + " of " + format_bytes(weights) +
                      " weights stay resident, " + format_bytes(streamed) + " are copied in per forward pass, about " +
                      ratio_text(s.slowdown) + "x slower than with everything resident");
    return s;
  }

  // A stage whose weights are all needed at once (no layer size to stream by) still runs when only the
  // kept-free room is short.
  if (give_up_headroom(full, V)) return full;
  if (fallback) {
    give_up_headroom(*fallback, V);
    return tiled_retry(std::move(*fallback), full, d.name, V);
  }

  full.mode = StageMode::DoesNotFit;
  full.notes.push_back("even with every weight streamed, the CUDA context, the activations and the layers in flight need " +
                       format_bytes(required) + " on a " + format_bytes(V) + " card");
  return full;
}

}  // namespace headroom
