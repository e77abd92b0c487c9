#pragma once
// Which preset to offer when a run failed for want of memory (the OOM toast's button): the rule the
// toast applied in the browser, decided once here from each preset's answer on the workflow.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog/verdict.hpp"

namespace headroom {

// One preset's answer on the workflow, in catalog order.
struct PresetOutcome {
  std::string name;
  bool targets_request = false;  // "fit this card": the planner's own cheapest fit on the request's card
  bool changes = false;          // it rewrites at least one widget
  Verdict after = Verdict::Unknown;  // the rewritten workflow's verdict on the judged card
  std::uint64_t after_peak = 0;
};

// Why the first preset of the ranking is first.
enum class PresetPick {
  OwnFit,         // the request's own card preset changes something and the run completes after it
  FirstThatRuns,  // the first preset in catalog order (cheapest first) after which the run completes
  LowestPeak,     // none makes it run: the one that leaves the lowest peak
};

const char* pick_id(PresetPick p);  // "own_fit", "first_that_runs", "lowest_peak"

struct PresetRanking {
  std::vector<std::size_t> order;  // indices into the outcomes, best first; only presets that change
                                   // something and whose after-verdict was sized
  std::optional<PresetPick> pick;  // of order.front(); none when nothing is ranked
};

// Own fit first (when it runs), then every preset after which the run completes in catalog order, then
// the rest by their peak (lowest first, catalog order breaking ties). A preset that changes nothing or
// whose answer has no verdict (a broken file, an assumed size) is not ranked: its figures prove nothing.
PresetRanking rank_presets(const std::vector<PresetOutcome>& outcomes);

}  // namespace headroom
