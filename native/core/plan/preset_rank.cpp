#include "core/plan/preset_rank.hpp"

#include <algorithm>

namespace headroom {

const char* pick_id(PresetPick p) {
  switch (p) {
    case PresetPick::OwnFit: return "own_fit";
    case PresetPick::FirstThatRuns: return "first_that_runs";
    case PresetPick::LowestPeak: return "lowest_peak";
  }
  return "lowest_peak";
}

PresetRanking rank_presets(const std::vector<PresetOutcome>& outcomes) {
  // Tier 0: the own fit that runs; 1: the others that run; 2: those that do not, by peak.
  auto tier = [&](std::size_t i) {
    const PresetOutcome& o = outcomes[i];
    if (!verdict_runs(o.after)) return 2;
    return o.targets_request ? 0 : 1;
  };
  PresetRanking out;
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    if (outcomes[i].changes && verdict_sized(outcomes[i].after)) out.order.push_back(i);
  std::stable_sort(out.order.begin(), out.order.end(), [&](std::size_t a, std::size_t b) {
    const int ta = tier(a), tb = tier(b);
    if (ta != tb) return ta < tb;
    return ta == 2 && outcomes[a].after_peak < outcomes[b].after_peak;
  });
  if (!out.order.empty()) {
    const int t = tier(out.order.front());
    out.pick = t == 0 ? PresetPick::OwnFit : t == 1 ? PresetPick::FirstThatRuns : PresetPick::LowestPeak;
  }
  return out;
}

}  // namespace headroom
