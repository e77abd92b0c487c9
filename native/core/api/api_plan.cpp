// api::plan and api::apply_preset: JSON in, JSON out, for the CLI, the Python module and the routes.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/base/json_reader.hpp"
#include "core/catalog/catalog.hpp"
#include "core/base/error.hpp"
#include "core/plan/planner.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/presets_apply.hpp"
#include "core/base/units.hpp"
#include "core/workflow/workflow.hpp"

namespace headroom::api {

namespace {

// The preset that sizes a workflow for the request's own card (presets.json).
constexpr const char* kCardPreset = "fit this card";

void check_keys(const json& request, const std::set<std::string>& known, const std::string& what) {
  if (!request.is_object()) throw InputError(what, "expected a JSON object");
  for (auto it = request.begin(); it != request.end(); ++it)
    if (!known.count(it.key())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InputError(it.key(), "unknown field in the " + what + " request; fields: " + list);
    }
}

Runtime runtime_of(const json& request) {
  Runtime rt;
  int given = request.contains("gpu") + request.contains("vram_bytes") + request.contains("vram");
  if (given > 1) throw InputError("gpu", "give only one of gpu, vram_bytes and vram");
  if (request.contains("gpu")) {
    if (!request["gpu"].is_string()) throw InputError("gpu", "expected a card name such as \"4090\"");
    const GpuInfo& g = resolve_gpu(request["gpu"].get<std::string>(), "gpu");
    rt.vram_bytes = g.memory_bytes;
    if (g.fp8_compute) rt.fp8_compute = *g.fp8_compute ? 1 : 0;  // as api::estimate does
    apply_gpu_rates(g, rt);
  } else if (request.contains("vram_bytes")) {
    if (!request["vram_bytes"].is_number_unsigned() || request["vram_bytes"].get<std::uint64_t>() == 0 ||
        request["vram_bytes"].get<std::uint64_t>() > kMaxMemoryBytes)
      throw InputError("vram_bytes", "expected a whole number of bytes from 1 to " + std::to_string(kMaxMemoryBytes) +
                                         " (1 PiB), e.g. 25769803776 for 24 GiB");
    rt.vram_bytes = request["vram_bytes"].get<std::uint64_t>();
  } else if (request.contains("vram")) {
    if (!request["vram"].is_string()) throw InputError("vram", "expected a size such as \"12GB\" or \"11.5GiB\"");
    rt.vram_bytes = parse_size(request["vram"].get<std::string>(), "vram");
  }
  if (request.contains("free_bytes")) {
    if (!request["free_bytes"].is_number_unsigned() || request["free_bytes"].get<std::uint64_t>() == 0 ||
        request["free_bytes"].get<std::uint64_t>() > kMaxMemoryBytes)
      throw InputError("free_bytes", "expected a whole number of bytes from 1 to " + std::to_string(kMaxMemoryBytes) +
                                         " (free VRAM as ComfyUI counts it)");
    rt.free_bytes = request["free_bytes"].get<std::uint64_t>();
    if (rt.vram_bytes && rt.free_bytes > rt.vram_bytes)
      throw InputError("free_bytes", "is more than the card's memory (" + std::to_string(rt.vram_bytes) + " bytes)");
  }
  if (request.contains("reserve_bytes")) {
    const auto& v = request["reserve_bytes"];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (1ull << 40))
      throw InputError("reserve_bytes", "expected ComfyUI's --reserve-vram as a whole number of bytes, got " + json_preview(v));
    rt.reserve_bytes = v.get<std::uint64_t>();
  }
  apply_runtime_fields(request, rt);
  return rt;
}

// The memory verdicts are against: the free memory when given, else the card.
json budget_json(const Runtime& rt) {
  if (rt.free_bytes) return rt.free_bytes;
  return rt.vram_bytes ? json(rt.vram_bytes) : json(nullptr);
}

workflow::ParseOptions options_of(const json& request) {
  workflow::ParseOptions o;
  if (request.contains("models_dir")) {
    if (!request["models_dir"].is_string()) throw InputError("models_dir", "expected a folder path");
    o.models_dir = request["models_dir"].get<std::string>();
  }
  return o;
}

const json& workflow_of(const json& request, json& parsed) {
  if (!request.contains("workflow")) throw InputError("workflow", "missing: give the workflow JSON (UI or API format)");
  const json& w = request["workflow"];
  if (w.is_string()) {  // a workflow sent as text
    parsed = workflow::parse_workflow_text(w.get<std::string>(), "workflow");
    return parsed;
  }
  return w;
}

}  // namespace

json plan(const json& request) {
  check_keys(request, {"workflow", "gpu", "vram_bytes", "vram", "free_bytes", "models_dir", "source", "runtime",
                       "vram_headroom_bytes", "ram_bytes", "reserve_bytes"}, "plan");
  json parsed;
  const json& wf = workflow_of(request, parsed);
  std::string source = request.value("source", "workflow");
  Runtime rt = runtime_of(request);
  workflow::WorkflowInfo info = workflow::analyse_workflow(wf, source, options_of(request));
  json info_json = info.to_json();
  json unknown = info_json["unknown_nodes"];
  if (!info.job.diffusion || info.job.diffusion->model.empty()) {
    // Not fatal for a workflow we cannot size (SDXL, a custom model): say why, list what was found.
    std::string why = info.job.diffusion ? "diffusion model '" + info.job.diffusion->file +
                                               "' is not in the catalog (Flux.1 and Wan 2.x models are)"
                                         : "no diffusion model loader runs in this workflow";
    return {{"verdict", "unknown"},   {"reason", why},  {"peak_bytes", nullptr}, {"stages", json::array()},
            {"changes", json::array()}, {"unknown_nodes", unknown}, {"smallest_gpu", nullptr},
            {"workflow", std::move(info_json)}, {"budget_bytes", budget_json(rt)}};
  }
  Plan p = make_plan(info.job, rt);
  const bool any_widget = std::any_of(p.changes.begin(), p.changes.end(), [](const PlanChange& c) { return c.widget; });
  if (any_widget && preset_data().preset(kCardPreset)) {
    // Only what the preset would really do counts as applied by it (the panel offers it as one click).
    const std::vector<std::string> kinds = preset_change_kinds(kCardPreset, info, rt, &p);
    auto mark = [&](PlanChange& c) {
      c.by_preset = c.widget && std::find(kinds.begin(), kinds.end(), c.kind) != kinds.end();
    };
    for (auto& c : p.changes) mark(c);
    for (auto& c : p.cumulative) mark(c);
  }
  json out = p.to_json();
  out["unknown_nodes"] = unknown;
  out["job"] = job_to_json(info.job);
  out["workflow"] = std::move(info_json);
  out["budget_bytes"] = budget_json(rt);
  if (rt.free_bytes) {
    out["free_bytes"] = rt.free_bytes;
    if (rt.vram_bytes) out["vram_bytes"] = rt.vram_bytes;
  }
  if (!out.contains("notes") || !out["notes"].is_array()) out["notes"] = json::array();
  // The estimator may already carry the job's notes. A set, not a search of the array per note:
  // a workflow with thousands of loaders has thousands of notes.
  std::unordered_set<std::string> seen;
  for (const auto& n : out["notes"])
    if (n.is_string()) seen.insert(n.get<std::string>());
  for (const auto& n : info.job.notes)
    if (seen.insert(n).second) out["notes"].push_back(n);
  return out;
}

json apply_preset(const json& request) {
  check_keys(request, {"workflow", "preset", "gpu", "vram_bytes", "vram", "free_bytes", "models_dir", "source", "runtime",
                       "vram_headroom_bytes", "ram_bytes", "reserve_bytes"},
             "apply_preset");
  if (!request.contains("preset") || !request["preset"].is_string())
    throw InputError("preset", "missing: give a preset name such as \"fit 12 GB\"");
  json parsed;
  const json& wf = workflow_of(request, parsed);
  PresetResult r = headroom::apply_preset(wf, request["preset"].get<std::string>(), runtime_of(request),
                                          request.value("source", "workflow"), options_of(request));
  return {{"workflow", r.workflow},
          {"preset", request["preset"]},
          {"target_bytes", r.target_bytes ? json(r.target_bytes) : json(nullptr)},
          {"before", {{"peak_bytes", r.before_peak}, {"verdict", r.before_verdict}, {"full_load_bytes", r.before_need}}},
          {"after", {{"peak_bytes", r.after_peak}, {"verdict", r.after_verdict}, {"full_load_bytes", r.after_need}}},
          {"changes", r.changes},
          {"notes", r.notes}};
}

}  // namespace headroom::api
