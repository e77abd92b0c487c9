// api::apply_preset and api::suggest_preset: a preset's rewrite of a workflow with its before/after, and
// the preset to offer when a run failed for want of memory, ranked once here for every surface.
#include <algorithm>

#include "core/api/api.hpp"
#include "core/api/workflow_request.hpp"
#include "core/base/error.hpp"
#include "core/catalog/presets.hpp"
#include "core/catalog/verdict.hpp"
#include "core/plan/changes.hpp"
#include "core/plan/preset_rank.hpp"
#include "core/plan/presets_apply.hpp"

namespace headroom::api {

namespace {

// What each change a preset made costs in quality or speed (presets.json "effect"), in its order: the
// speed a preview shows is the weights' streaming only, and a text encoder moved to the CPU is slower
// in a stage that figure does not cover.
json costs_of(const std::vector<std::string>& kinds) {
  json out = json::array();
  for (const auto& k : kinds)
    if (const ChangeSpec* c = planner_preset_data().change(k)) out.push_back({{"kind", k}, {"effect", c->effect}});
  return out;
}

// A verdict the plan would withhold (a broken file, an assumed size) is withheld here too: a preset
// changes widgets, never the file a loader reads, so "fits" after it would rest on the same figures.
void withhold(json& side, const std::optional<Withheld>& withheld) {
  if (!withheld) return;
  put_verdict(side, Verdict::Unknown);
  side["verdict_reason"] = withheld->why;
  side["not_covered"] = withheld->not_covered;
}

// before/after in the estimate's shape (stages, verdict, reason, slowdown), on the judged card.
json side_of(const Estimate& e, std::uint64_t need, const std::optional<Withheld>& withheld) {
  json j = e.to_json();
  j["full_load_bytes"] = need;
  if (!j.contains("verdict")) put_verdict(j, e.verdict, "");
  withhold(j, withheld);
  return j;
}

json bytes_or_null(std::uint64_t b) { return b ? json(b) : json(nullptr); }

// apply_preset's answer without the rewritten workflow's plan.
json preset_answer(const PresetResult& r, const std::string& preset) {
  const std::optional<Withheld> withheld = withheld_verdict(r.info);
  json target = {{"bytes", bytes_or_null(r.target_bytes)}, {"peak_bytes", r.target_after.peak_bytes}};
  put_verdict(target, r.target_after.verdict, "");
  withhold(target, withheld);
  return {{"workflow", r.workflow},
          {"preset", preset},
          {"target_bytes", bytes_or_null(r.target_bytes)},
          {"judged_bytes", bytes_or_null(r.judged_bytes)},
          {"judged_on", r.judged_on_request ? "request" : "target"},
          {"before", side_of(r.before, r.before_need, withheld)},
          {"after", side_of(r.after, r.after_need, withheld)},
          {"target", std::move(target)},
          {"changes", r.changes},
          {"kinds", r.kinds},
          {"costs", costs_of(r.kinds)},
          {"notes", r.notes}};
}

// The figures of one side that the ranking and the toast show.
json brief_of(const json& side) {
  return {{"verdict", side["verdict"]}, {"verdict_id", side["verdict_id"]},
          {"verdict_reason", side.value("verdict_reason", json())}, {"peak_bytes", side["peak_bytes"]}};
}

json ranked_entry(const PresetSpec& spec, const json& answer) {
  return {{"preset", spec.name}, {"description", spec.description}, {"before", brief_of(answer["before"])},
          {"after", brief_of(answer["after"])}, {"changes", answer["changes"]}, {"kinds", answer["kinds"]},
          {"costs", answer["costs"]}, {"judged_bytes", answer["judged_bytes"]}};
}

// Why a preset that was tried is not in the ranking.
std::string unranked_reason(const PresetOutcome& o, const json& answer) {
  if (!o.changes) return "changes nothing in this workflow";
  const json reason = answer["after"].value("verdict_reason", json());
  return "no verdict after it: " + (reason.is_string() ? reason.get<std::string>() : std::string("not sized"));
}

}  // namespace

const request::Fields& apply_preset_fields() {
  static const request::Fields f = [] {
    request::Fields t = workflow_fields();
    t.insert(t.begin() + 1, {"preset", request::Kind::String, "a preset name from the catalog (\"fit 12 GB\")", 0, 0, {}, true});
    return t;
  }();
  return f;
}

// The workflow and the card it failed on: the plan's own fields.
const request::Fields& suggest_preset_fields() { return plan_fields(); }

json apply_preset(const json& body) {
  const request::Request request(body, "apply_preset", apply_preset_fields());
  json parsed;
  const json& wf = workflow_of(request, parsed);
  PresetResult r = headroom::apply_preset(wf, request.text("preset"), runtime_of(request),
                                          request.text_or("source", "workflow"), options_of(request));
  json out = preset_answer(r, request.text("preset"));
  // The plan of the rewritten workflow on the same card, as POST /headroom/estimate would answer it, so
  // whoever applies the preset has the new verdict, peak and speed without asking again.
  json again = body;
  again.erase("preset");
  again["workflow"] = r.workflow;
  out["plan"] = plan(again);
  return out;
}

json suggest_preset(const json& body) {
  const request::Request request(body, "suggest_preset", suggest_preset_fields());
  json parsed;
  const json& wf = workflow_of(request, parsed);
  const Runtime rt = runtime_of(request);
  const std::string source = request.text_or("source", "workflow");
  const workflow::ParseOptions options = options_of(request);
  const auto& presets = planner_preset_data().presets;
  std::vector<PresetOutcome> outcomes;
  std::vector<json> answers;
  json not_ranked = json::array();
  for (const PresetSpec& spec : presets) {
    try {
      answers.push_back(preset_answer(headroom::apply_preset(wf, spec.name, rt, source, options), spec.name));
    } catch (const InputError& e) {
      if (e.field() != "gpu") throw;  // a workflow no preset can size fails as apply_preset does
      not_ranked.push_back({{"preset", spec.name}, {"reason", e.what()}});  // "fit this card" without a card
      continue;
    }
    const json& after = answers.back()["after"];
    const auto verdict = answer_verdict(after);
    outcomes.push_back({spec.name, spec.target_request, !answers.back()["changes"].empty(),
                        verdict.value_or(Verdict::Unknown), after.value("peak_bytes", std::uint64_t{0})});
  }
  const PresetRanking ranking = rank_presets(outcomes);
  json ranked = json::array();
  for (std::size_t i : ranking.order) ranked.push_back(ranked_entry(*planner_preset_data().preset(outcomes[i].name), answers[i]));
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    if (std::find(ranking.order.begin(), ranking.order.end(), i) == ranking.order.end())
      not_ranked.push_back({{"preset", outcomes[i].name}, {"reason", unranked_reason(outcomes[i], answers[i])}});
  json chosen = ranked.empty() ? json(nullptr) : ranked.front();
  if (ranking.pick) chosen["why"] = pick_id(*ranking.pick);
  return {{"chosen", std::move(chosen)}, {"ranked", std::move(ranked)}, {"not_ranked", std::move(not_ranked)}};
}

}  // namespace headroom::api
