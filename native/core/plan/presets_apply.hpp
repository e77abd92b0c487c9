#pragma once
// Applying a named preset to a workflow: the planner picks the changes, this writes them back as
// widget values (weight_dtype, VAE decode and tile size, CLIPLoader device, batch_size, length,
// width/height) and nothing else, in the workflow's own format.
#include <string>

#include <nlohmann/json.hpp>

#include "core/estimate/estimator.hpp"
#include "core/plan/planner.hpp"
#include "core/workflow/workflow.hpp"

namespace headroom {

struct PresetResult {
  nlohmann::json workflow;                          // rewritten copy
  std::uint64_t before_peak = 0, after_peak = 0;
  std::uint64_t before_need = 0, after_need = 0;    // with every model fully resident (planner.hpp need_bytes)
  std::uint64_t target_bytes = 0;                   // the memory the preset aimed at (0 = none)
  // The figures shown are judged on the request's card when it has one (the user's), else on the
  // preset's target: the after-estimate is then what the user's own estimate of the rewritten
  // workflow says, and every preset row is judged against the same card.
  std::uint64_t judged_bytes = 0;
  bool judged_on_request = false;
  Estimate before, after;                           // on the judged card
  Estimate target_after;                            // of the rewritten workflow on the preset's target
  nlohmann::json changes = nlohmann::json::array(); // [{node_id, widget, from, to}]
  std::vector<std::string> notes;
  std::vector<std::string> kinds;                   // the planner changes made (presets.json "changes"), in order
  workflow::WorkflowInfo info;                      // the workflow as read before the preset
};

// `request_runtime` is the card of the request (gpu / vram_bytes); "fit N GB" presets use their own.
// The before_/after_ fields are of `before`/`after`. Throws InputError("preset") for an unknown preset, InputError("gpu") when "fit this card" has no card.
PresetResult apply_preset(const nlohmann::json& workflow, const std::string& preset, const Runtime& request_runtime,
                          const std::string& source = "workflow",
                          const workflow::ParseOptions& options = {});

// The planner change kinds (presets.json "changes") that preset `name` would make to this workflow on
// this card, in order; what api::plan reports as applies_by_preset for "fit this card". `plan`, when
// given, is make_plan of info.job on request_runtime, whose prices are reused.
std::vector<std::string> preset_change_kinds(const std::string& name, const workflow::WorkflowInfo& info,
                                             const Runtime& request_runtime, const Plan* plan = nullptr);

}  // namespace headroom
