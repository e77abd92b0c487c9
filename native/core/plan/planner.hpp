#pragma once
// The planner: when a job does not fit the card, the changes that make it fit, cheapest first
// (cost ranks in native/data/presets.json "changes"), each estimated on its own and then combined
// cumulatively until the job fits; plus the smallest cards that run it unchanged and fully resident.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/estimator.hpp"
#include "core/estimate/job.hpp"
#include "core/plan/change_gain.hpp"
#include "core/plan/smallest_card.hpp"

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
  std::uint64_t saving_bytes = 0;    // what the change saves on the stage it changes most (saving_stage),
                                     // with every model resident unless the run does not fit as it is
  std::string saving_stage;
  std::optional<Verdict> verdict;  // estimate's verdict of the changed job
  bool fits = false;         // verdict "fits" (no partial loading, inside the margin)
  // Whether a named preset would make this change for this workflow and card (set by api::plan from
  // the "fit this card" preset); unset = `widget`.
  std::optional<bool> by_preset;
  Estimate estimate;         // of `job` (not in the JSON): what a further change is judged against
  nlohmann::json to_json() const;
};

struct Plan {
  Estimate estimate;                    // of the job as it is
  std::optional<Verdict> verdict;       // none when no card was given
  std::vector<PlanChange> changes;      // single changes that lower the need: those that make it fit first,
                                        // then those that make it run, each group cheapest first
  std::vector<PlanChange> cumulative;   // changes applied one on top of the other until it fits
  bool cumulative_fits = false;
  // What the user may do instead of changing anything (a run that streams under dynamic VRAM: how much
  // slower, and the cheapest change that would make it fully resident); "" when there is nothing to say.
  std::string advice;
  std::optional<SmallestGpu> smallest_gpu;       // fully resident; nullopt when no card does it
  std::optional<SmallestGpu> smallest_gpu_runs;  // runs unchanged, perhaps slower; nullopt when none
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
// `before` is the estimate of `job`, what the saving is measured against (on `basis`).
std::optional<PlanChange> plan_change(const std::string& kind, const Job& job, const Runtime& runtime,
                                      const Estimate& before, NeedBasis basis = NeedBasis::FullyResident);

}  // namespace headroom
