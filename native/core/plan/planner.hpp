#pragma once
// The planner: when a job does not fit the card, the changes that make it fit, cheapest first
// (cost ranks in native/data/presets.json "changes"), each estimated on its own and then combined
// cumulatively until the job fits; plus the smallest card of gpus.json that runs it unchanged.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/estimator.hpp"
#include "core/estimate/job.hpp"

namespace headroom {

struct PlanChange {
  std::string kind;          // decode_tiled, text_encoder_fp8, text_encoder_cpu, weights_fp8, gguf_q8, block_swap,
                             // gguf_q5, gguf_q4, batch, frames, resolution
  int cost = 0;              // rank of quality/speed loss (presets.json)
  bool widget = false;       // a preset can apply it by rewriting widget values
  std::string description;   // for people: what to change, to what, and what it costs
  Job job;                   // the job after the change
  std::uint64_t new_peak_bytes = 0;
  std::uint64_t new_need_bytes = 0;  // peak with every model fully resident (no partial loading)
  std::uint64_t saving_bytes = 0;    // old need - new need: what the change saves, even where partial
                                     // loading (lowvram) hides it in the reserved peak
  std::string verdict;       // estimate's verdict of the changed job
  bool fits = false;         // verdict "fits" (no partial loading, inside the margin)
  // Whether a named preset would make this change for this workflow and card (set by api::plan from
  // the "fit this card" preset); unset = `widget`.
  std::optional<bool> by_preset;
  nlohmann::json to_json() const;
};

struct SmallestGpu {
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::optional<double> price_eur_per_hour;
  std::uint64_t peak_bytes = 0;
  nlohmann::json to_json() const;
};

struct Plan {
  Estimate estimate;                    // of the job as it is
  std::string verdict;                  // "fits" | "tight" | "does not fit" | "" (no card given)
  std::vector<PlanChange> changes;      // single changes that lower the need: those that make it fit first,
                                        // then those that make it run, each group cheapest first
  std::vector<PlanChange> cumulative;   // changes applied one on top of the other until it fits
  bool cumulative_fits = false;
  // What the user may do instead of changing anything (a run that streams under dynamic VRAM: how much
  // slower, and the cheapest change that would make it fully resident); "" when there is nothing to say.
  std::string advice;
  std::optional<SmallestGpu> smallest_gpu;  // nullopt when no catalog card runs it unchanged
  // Every single change tried on the unchanged job (also those not listed), for PlanOptions::reuse.
  std::map<std::string, std::optional<PlanChange>> singles;
  nlohmann::json to_json() const;       // estimate's shape + {verdict, changes, cumulative, smallest_gpu}
};

struct PlanOptions {
  std::optional<std::set<std::string>> allowed;  // kinds to try (all when unset)
  std::vector<std::string> order;                // cumulative order (cost order when empty)
  bool smallest_gpu = true;
  // A plan of the same job on the same runtime: its estimate and single changes are reused
  // instead of priced again (the preset check in api::plan).
  const Plan* reuse = nullptr;
};

Plan make_plan(const Job& job, const Runtime& runtime, const PlanOptions& options = {});

// Applies one change kind to `job` with the least reduction that makes it fit `runtime`
// (the strongest one when nothing fits). nullopt when the change does not apply to the job.
// `baseline_need` is need_bytes() of the unchanged job.
// What a change is measured against. A run that does not fit must lower what it really needs (its own
// peak, at least the required bytes); one that runs but streams or loads partially must lower what it
// needs with every model resident. Both measures leave out models cached from earlier stages.
enum class NeedBasis { Runs, FullyResident };
NeedBasis need_basis(const Estimate& unchanged);
std::uint64_t need_bytes(const Estimate& e, NeedBasis basis);
std::uint64_t need_bytes(const Estimate& e);  // with need_basis(e)

std::optional<PlanChange> plan_change(const std::string& kind, const Job& job, const Runtime& runtime,
                                      std::uint64_t baseline_need, NeedBasis basis = NeedBasis::FullyResident);

}  // namespace headroom
