// The planner (see planner.hpp). Every candidate is priced by the estimator itself, so a change is
// listed with the peak the estimator predicts for the changed job, never with a rule of thumb.
#include "core/plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/estimate/job_models.hpp"
#include "core/estimate/runtime_policy.hpp"
#include "core/base/error.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/changes.hpp"
#include "core/base/units.hpp"

namespace headroom {

using plan_search::fits;

std::optional<PlanChange> plan_change(const std::string& kind, const Job& job, const Runtime& rt,
                                      const Estimate& before, NeedBasis basis) {
  const PresetData& data = planner_preset_data();
  const ChangeSpec* spec = data.change(kind);
  if (!spec) throw InputError("change", "unknown change kind '" + kind + "'");
  const ChangeKind& fn = change_kinds().find(kind)->second;  // every kind of the data has one
  std::optional<ChangeOutcome> r = fn.apply(ChangeContext{job, rt, *spec, data.search});
  if (!r) return std::nullopt;
  PlanChange c;
  c.kind = kind;
  c.cost = spec->cost;
  c.widget = spec->widget;
  c.job = std::move(r->priced.job);
  c.estimate = std::move(r->priced.est);
  const Estimate& est = c.estimate;
  c.new_peak_bytes = est.peak_bytes;
  c.new_need_bytes = need_bytes(est, basis);
  const StageSaving saved = stage_saving(before, est, basis);
  c.saving_bytes = saved.bytes;
  c.saving_stage = saved.stage;
  c.verdict = est.verdict;
  c.fits = fits(est);
  c.description = r->what + " (" + spec->effect + ")";
  return c;
}

namespace {

const std::string& group_of(const std::string& kind) {
  static const std::string none;
  static std::map<std::string, std::string> groups = [] {
    std::map<std::string, std::string> g;
    for (const auto& [k, fn] : change_kinds()) g[k] = fn.exclusive_group;
    return g;
  }();
  auto it = groups.find(kind);
  return it == groups.end() ? none : it->second;
}

struct Combined {
  std::vector<PlanChange> steps;
  bool fits = false;
  const Estimate& last(const Estimate& unchanged) const { return steps.empty() ? unchanged : steps.back().estimate; }
};

// Greedy, cheapest first, restarting from the cheapest after each accepted change: one that helps
// nothing while another stage sets the need (an fp8 text encoder next to 16-bit diffusion weights)
// is taken as soon as the cheaper changes have made it useful, before any dearer one. Of each
// exclusive group only the first kind taken counts; `skip` leaves kinds out altogether.
Combined combine(const Job& job, const Runtime& rt, const Estimate& unchanged, NeedBasis basis,
                 const std::vector<std::string>& order, const std::function<bool(const std::string&)>& allowed,
                 const std::set<std::string>& skip, const std::map<std::string, std::optional<PlanChange>>& first) {
  Combined out;
  Job cur = job;
  const Estimate* cur_est = &unchanged;
  std::set<std::string> taken, groups;
  while (!out.fits) {
    bool progress = false;
    for (const auto& kind : order) {
      if (!allowed(kind) || taken.count(kind) || skip.count(kind)) continue;
      if (!group_of(kind).empty() && groups.count(group_of(kind))) continue;
      auto cached = taken.empty() ? first.find(kind) : first.end();
      auto c = cached != first.end() ? cached->second : plan_change(kind, cur, rt, *cur_est, basis);
      if (!c || !improves(*cur_est, c->estimate, basis)) continue;
      cur = c->job;
      out.fits = c->fits;
      taken.insert(kind);
      if (!group_of(kind).empty()) groups.insert(group_of(kind));
      out.steps.push_back(std::move(*c));
      cur_est = &out.steps.back().estimate;
      progress = true;
      break;
    }
    if (!progress) break;
  }
  return out;
}

// The better of two combinations: the one that fits, else the better verdict, else the lower need.
bool better(const Combined& a, const Combined& b, const Estimate& unchanged, NeedBasis basis) {
  if (a.fits != b.fits) return a.fits;
  const Estimate &ea = a.last(unchanged), &eb = b.last(unchanged);
  if (verdict_rank(ea.verdict) != verdict_rank(eb.verdict)) return verdict_rank(ea.verdict) < verdict_rank(eb.verdict);
  return need_bytes(ea, basis) < need_bytes(eb, basis);
}

}  // namespace

Plan make_plan(const Job& job_in, const Runtime& rt, const PlanOptions& options) {
  Plan plan;
  plan.estimate = options.reuse ? options.reuse->estimate : estimate(job_in, rt);
  // Candidates are priced without the job's notes, which never change an estimate: every candidate
  // copies its job, and a workflow with thousands of loaders carries thousands of notes. The notes
  // go back on the jobs of the changes returned.
  Job job = job_in;
  job.notes.clear();
  resolve_models(job);  // once: every candidate below is a copy of this job
  plan.verdict = plan.estimate.verdict;
  const NeedBasis basis = need_basis(plan.estimate);
  const PresetData& data = planner_preset_data();

  if (rt.has_card() && plan.verdict != Verdict::Fits) {
    std::vector<std::string> order = options.order;
    if (order.empty())
      for (const auto& c : data.changes) order.push_back(c.kind);
    auto allowed = [&](const std::string& k) { return !options.allowed || options.allowed->count(k); };
    std::map<std::string, std::optional<PlanChange>>& first = plan.singles;  // reused by the first greedy step
    for (const auto& spec : data.changes) {
      if (!allowed(spec.kind)) continue;
      std::optional<PlanChange> c;
      auto known = options.reuse ? options.reuse->singles.find(spec.kind) : first.end();
      if (options.reuse && known != options.reuse->singles.end())
        c = known->second;
      else
        c = plan_change(spec.kind, job, rt, plan.estimate, basis);
      first[spec.kind] = c;
      if (c && improves(plan.estimate, c->estimate, basis)) plan.changes.push_back(*c);
    }
    // What makes the run fit first, then what makes it run, each group in the data's cost order
    // (quality loss, then slowdown): the cheapest change that fits leads the list when one exists.
    auto rank = [](const PlanChange& c) { return c.fits ? 0 : (c.verdict != Verdict::DoesNotFit ? 1 : 2); };
    std::stable_sort(plan.changes.begin(), plan.changes.end(),
                     [&](const PlanChange& a, const PlanChange& b) { return rank(a) < rank(b); });
    // One combination per choice of exclusive kind: when the cheapest format taken does not make it
    // fit, the same search again without it may take a stronger one instead (never both).
    std::set<std::string> skip;
    Combined best = combine(job, rt, plan.estimate, basis, order, allowed, skip, first);
    for (Combined cur = best; !cur.fits;) {
      auto format = std::find_if(cur.steps.begin(), cur.steps.end(),
                                 [](const PlanChange& c) { return !group_of(c.kind).empty(); });
      if (format == cur.steps.end()) break;
      skip.insert(format->kind);
      cur = combine(job, rt, plan.estimate, basis, order, allowed, skip, first);
      if (better(cur, best, plan.estimate, basis)) best = cur;
    }
    plan.cumulative = std::move(best.steps);
    plan.cumulative_fits = best.fits;
    if (plan.verdict == Verdict::Streams) {
      // Under dynamic VRAM a run that streams works as it is; it is only slower.
      plan.advice = "runs as it is, streaming weights, about " + ratio_text(plan.estimate.slowdown) + "x slower than fully resident";
      auto cheapest = std::find_if(plan.changes.begin(), plan.changes.end(), [](const PlanChange& c) { return c.fits; });
      if (cheapest != plan.changes.end()) plan.advice += "; " + cheapest->description.substr(0, cheapest->description.find(" (")) +
                       " would make it fully resident";
    }
  }

  for (auto* list : {&plan.changes, &plan.cumulative})
    for (auto& c : *list) c.job.notes = job_in.notes;
  for (auto& [kind, c] : plan.singles)
    if (c) c->job.notes = job_in.notes;

  if (options.smallest_gpu) {
    SmallestCards cards = smallest_cards(job, rt, plan.estimate);
    plan.smallest_gpu = std::move(cards.resident);
    plan.smallest_gpu_runs = std::move(cards.runs);
  }
  return plan;
}

nlohmann::json PlanChange::to_json() const {
  nlohmann::json j = {{"kind", kind},       {"cost", cost},   {"description", description},
                      {"saving_bytes", saving_bytes}, {"saving_stage", saving_stage}, {"new_peak_bytes", new_peak_bytes},
                      {"new_full_load_bytes", new_need_bytes}, {"fits", fits},
                      {"applies_by_preset", by_preset.value_or(widget)}};
  put_verdict(j, verdict, "");
  return j;
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j = estimate.to_json();
  put_verdict(j, verdict);
  j["changes"] = nlohmann::json::array();
  for (const auto& c : changes) j["changes"].push_back(c.to_json());
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& c : cumulative) steps.push_back(c.to_json());
  j["cumulative"] = {{"steps", steps},
                     {"fits", cumulative_fits},
                     {"new_peak_bytes", cumulative.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json(cumulative.back().new_peak_bytes)}};
  j["smallest_gpu"] = smallest_gpu ? smallest_gpu->to_json() : nlohmann::json(nullptr);
  j["smallest_gpu_runs"] = smallest_gpu_runs ? smallest_gpu_runs->to_json() : nlohmann::json(nullptr);
  j["advice"] = advice;
  return j;
}

}  // namespace headroom
