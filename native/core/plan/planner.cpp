// The planner (see planner.hpp). Every candidate is priced by the estimator itself, so a change is
// listed with the peak the estimator predicts for the changed job, never with a rule of thumb.
#include "core/plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/changes.hpp"
#include "core/base/units.hpp"

namespace headroom {

using plan_search::fits;
using plan_search::try_estimate;

NeedBasis need_basis(const Estimate& e) {
  return e.verdict == spelling(Verdict::DoesNotFit) ? NeedBasis::Runs : NeedBasis::FullyResident;
}

// Cached models are freed for a stage that needs the room, so they are not what a change must save.
std::uint64_t need_bytes(const Estimate& e, NeedBasis basis) {
  return basis == NeedBasis::Runs ? std::max(e.own_peak_bytes, e.required_bytes())
                                  : std::max(e.own_peak_bytes, e.full_load_peak_bytes);
}

std::uint64_t need_bytes(const Estimate& e) { return need_bytes(e, need_basis(e)); }

std::optional<PlanChange> plan_change(const std::string& kind, const Job& job, const Runtime& rt,
                                      std::uint64_t baseline_need, NeedBasis basis) {
  const PresetData& data = planner_preset_data();
  const ChangeSpec* spec = data.change(kind);
  if (!spec) throw InputError("change", "unknown change kind '" + kind + "'");
  const ChangeKind& fn = change_kinds().find(kind)->second;  // every kind of the data has one
  std::optional<ChangeOutcome> r = fn.apply(ChangeContext{job, rt, *spec, data.search});
  if (!r) return std::nullopt;
  const Estimate& est = r->priced.est;
  PlanChange c;
  c.kind = kind;
  c.cost = spec->cost;
  c.widget = spec->widget;
  c.job = std::move(r->priced.job);
  c.new_peak_bytes = est.peak_bytes;
  c.new_need_bytes = need_bytes(est, basis);
  c.saving_bytes = baseline_need > c.new_need_bytes ? baseline_need - c.new_need_bytes : 0;
  c.verdict = est.verdict;
  c.fits = fits(est);
  c.description = r->what + " (" + spec->effect + ")";
  return c;
}

Plan make_plan(const Job& job_in, const Runtime& rt, const PlanOptions& options) {
  Plan plan;
  plan.estimate = options.reuse ? options.reuse->estimate : estimate(job_in, rt);
  // Candidates are priced without the job's notes, which never change an estimate: every candidate
  // copies its job, and a workflow with thousands of loaders carries thousands of notes. The notes
  // go back on the jobs of the changes returned.
  Job job = job_in;
  job.notes.clear();
  plan.verdict = plan.estimate.verdict;
  const NeedBasis basis = need_basis(plan.estimate);
  const std::uint64_t need = need_bytes(plan.estimate, basis);
  const bool baseline_runs = plan.verdict != spelling(Verdict::DoesNotFit);
  // A change is a fix when it lowers the need, makes the run fit, or makes a failing run run at all.
  auto helps = [&](const PlanChange& c) {
    return c.saving_bytes > 0 || c.fits || (!baseline_runs && c.verdict != spelling(Verdict::DoesNotFit));
  };
  const PresetData& data = planner_preset_data();

  if (rt.has_card() && plan.verdict != spelling(Verdict::Fits)) {
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
        c = plan_change(spec.kind, job, rt, need, basis);
      first[spec.kind] = c;
      if (c && helps(*c)) plan.changes.push_back(std::move(*c));
    }
    // What makes the run fit first, then what makes it run, each group in the data's cost order
    // (quality loss, then slowdown): the cheapest change that fits leads the list when one exists.
    auto rank = [](const PlanChange& c) { return c.fits ? 0 : (c.verdict != spelling(Verdict::DoesNotFit) ? 1 : 2); };
    std::stable_sort(plan.changes.begin(), plan.changes.end(),
                     [&](const PlanChange& a, const PlanChange& b) { return rank(a) < rank(b); });
    Job cur = job;
    std::uint64_t cur_need = need;
    bool cur_fits = false;
    bool cur_runs = baseline_runs;
    // Greedy, cheapest first, restarting from the cheapest after each accepted change: one that
    // saves nothing while another stage sets the need (an fp8 text encoder next to 16-bit diffusion
    // weights) is taken as soon as the cheaper changes have made it useful, before any dearer one.
    std::set<std::string> applied;
    while (!cur_fits) {
      bool progress = false;
      for (const auto& kind : order) {
        if (!allowed(kind) || applied.count(kind)) continue;
        auto cached = applied.empty() ? first.find(kind) : first.end();
        auto c = cached != first.end() ? cached->second : plan_change(kind, cur, rt, cur_need, basis);
        if (!c || !(c->saving_bytes > 0 || c->fits || (!cur_runs && c->verdict != spelling(Verdict::DoesNotFit)))) continue;
        cur = c->job;
        cur_need = c->new_need_bytes;
        cur_fits = c->fits;
        cur_runs = c->verdict != spelling(Verdict::DoesNotFit);
        applied.insert(kind);
        progress = true;
        plan.cumulative.push_back(std::move(*c));
        break;
      }
      if (!progress) break;
    }
    plan.cumulative_fits = cur_fits;
    if (plan.verdict == spelling(Verdict::Streams)) {
      // Under dynamic VRAM a run that streams works as it is; it is only slower.
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.1f", plan.estimate.slowdown);
      plan.advice = "runs as it is, streaming weights, about " + std::string(buf) + "x slower than fully resident";
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
    std::vector<const GpuInfo*> gpus;
    for (const auto& g : catalog_data().gpus) gpus.push_back(&g);
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const GpuInfo* a, const GpuInfo* b) { return a->memory_bytes < b->memory_bytes; });
    for (const GpuInfo* g : gpus) {
      // A card below the fully-resident peak can only run it with partial loading: not "unchanged".
      if (g->memory_bytes < plan.estimate.full_load_peak_bytes) continue;
      Runtime r = rt;
      r.vram_bytes = g->memory_bytes;
      r.free_bytes = 0;  // a whole other card, not this one's free memory
      r.fp8_compute = g->fp8_compute ? (*g->fp8_compute ? 1 : 0) : -1;
      auto e = try_estimate(job, r);
      if (e && fits(*e)) {
        plan.smallest_gpu = SmallestGpu{g->name, g->memory_bytes, g->price_eur_per_hour, e->peak_bytes};
        break;
      }
    }
  }
  return plan;
}

nlohmann::json PlanChange::to_json() const {
  return {{"kind", kind},       {"cost", cost},   {"description", description},
          {"saving_bytes", saving_bytes}, {"new_peak_bytes", new_peak_bytes},
          {"new_full_load_bytes", new_need_bytes}, {"fits", fits},
          {"verdict", verdict}, {"applies_by_preset", by_preset.value_or(widget)}};
}

nlohmann::json SmallestGpu::to_json() const {
  return {{"name", name},
          {"memory_bytes", memory_bytes},
          {"price_eur_per_hour", price_eur_per_hour ? nlohmann::json(*price_eur_per_hour) : nlohmann::json(nullptr)},
          {"peak_bytes", peak_bytes}};
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j = estimate.to_json();
  j["verdict"] = verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(verdict);
  j["changes"] = nlohmann::json::array();
  for (const auto& c : changes) j["changes"].push_back(c.to_json());
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& c : cumulative) steps.push_back(c.to_json());
  j["cumulative"] = {{"steps", steps},
                     {"fits", cumulative_fits},
                     {"new_peak_bytes", cumulative.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json(cumulative.back().new_peak_bytes)}};
  j["smallest_gpu"] = smallest_gpu ? smallest_gpu->to_json() : nlohmann::json(nullptr);
  j["advice"] = advice;
  return j;
}

}  // namespace headroom
