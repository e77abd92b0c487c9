// Judging a change against the run before it (see change_gain.hpp).
#include "core/plan/change_gain.hpp"

#include <algorithm>

#include "core/catalog/verdict.hpp"

namespace headroom {

namespace {

// Slowdowns closer than this are the same speed (estimates of unchanged stages repeat exactly).
constexpr double kSameSpeed = 1e-6;

const Stage* stage_named(const Estimate& e, const std::string& name) {
  for (const auto& s : e.stages)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

NeedBasis need_basis(const Estimate& e) {
  return e.verdict == Verdict::DoesNotFit ? NeedBasis::Runs : NeedBasis::FullyResident;
}

// Cached models are freed for a stage that needs the room, so they are not what a change must save.
std::uint64_t need_bytes(const Estimate& e, NeedBasis basis) {
  return basis == NeedBasis::Runs ? std::max(e.own_peak_bytes, e.required_bytes())
                                  : std::max(e.own_peak_bytes, e.full_load_peak_bytes);
}

std::uint64_t need_bytes(const Estimate& e) { return need_bytes(e, need_basis(e)); }

// A stage's peak while it streams or loads partially is what the loader chose to fill the card with,
// the same whatever the change: a run that does not fit is measured by what each stage needs at least.
std::uint64_t stage_need_bytes(const Stage& s, NeedBasis basis) {
  if (basis == NeedBasis::Runs) return s.required_bytes();
  const std::uint64_t own = s.peak_bytes > s.cached_bytes ? s.peak_bytes - s.cached_bytes : 0;
  return std::max(own, s.full_load_bytes);
}

int verdict_rank(std::optional<Verdict> verdict) {
  if (verdict == Verdict::Fits) return 0;
  if (verdict == Verdict::DoesNotFit) return 2;
  return 1;
}

StageSaving stage_saving(const Estimate& before, const Estimate& after, NeedBasis basis) {
  StageSaving best;
  for (const auto& b : before.stages) {
    const Stage* a = stage_named(after, b.name);
    const std::uint64_t was = stage_need_bytes(b, basis), now = a ? stage_need_bytes(*a, basis) : 0;
    if (was > now && was - now > best.bytes) best = {was - now, b.name};
  }
  return best;
}

bool improves(const Estimate& before, const Estimate& after, NeedBasis basis) {
  const int was = verdict_rank(before.verdict), now = verdict_rank(after.verdict);
  if (now != was) return now < was;
  const std::uint64_t need = need_bytes(before, basis);
  if (need_bytes(after, basis) > need) return false;
  // Speed counts only for a run that runs: one that fails is not helped by streaming less.
  const bool speed = basis == NeedBasis::FullyResident;
  auto faster = [&](double now_slowdown, double was_slowdown) { return speed && now_slowdown < was_slowdown - kSameSpeed; };
  if (need_bytes(after, basis) < need || faster(after.slowdown, before.slowdown)) return true;
  for (const auto& b : before.stages) {
    const bool limits = b.mode != StageMode::Full || stage_need_bytes(b, basis) == need;
    if (!limits) continue;
    const Stage* a = stage_named(after, b.name);
    if (!a || stage_need_bytes(*a, basis) < stage_need_bytes(b, basis) || faster(a->slowdown, b.slowdown)) return true;
  }
  return false;
}

}  // namespace headroom
