// api::plan: JSON in, JSON out, for the CLI, the Python module and the routes; and what the requests
// that take a workflow share (workflow_request.hpp).
#include <algorithm>
#include <unordered_set>

#include "core/api/api.hpp"
#include "core/api/workflow_request.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/api/unknown_sampler.hpp"
#include "core/base/request_fields.hpp"
#include "core/catalog/card_budget.hpp"
#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/plan/planner.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/changes.hpp"
#include "core/plan/presets_apply.hpp"
#include "core/base/units.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/workflow/workflow.hpp"

namespace headroom::api {

namespace {

// The preset that sizes a workflow for the request's own card (presets.json).
constexpr const char* kCardPreset = "fit this card";

// The memory verdicts are against: the free memory when given, else the card.
json budget_json(const Runtime& rt) {
  if (rt.free_bytes) return rt.free_bytes;
  return rt.vram_bytes ? json(rt.vram_bytes) : json(nullptr);
}

// {"loras": ["/a/models/loras", "/b/Lora"], ...}: every name a string, every list of non-empty strings.
std::map<std::string, std::vector<std::string>> model_folders_of(const json& folders) {
  std::map<std::string, std::vector<std::string>> out;
  for (auto it = folders.begin(); it != folders.end(); ++it) {
    const std::string field = "model_folders." + it.key();
    if (!it.value().is_array())
      throw InputError(field, "expected a list of directories, got " + json_preview(it.value(), 40));
    auto& dirs = out[it.key()];
    for (std::size_t i = 0; i < it.value().size(); ++i) {
      const json& d = it.value()[i];
      if (!d.is_string() || d.get<std::string>().empty())
        throw InputError(field + "[" + std::to_string(i) + "]", "expected a directory path, got " + json_preview(d, 40));
      dirs.push_back(d.get<std::string>());
    }
  }
  return out;
}

}  // namespace

Runtime runtime_of(const request::Request& request) { return api::runtime_of(request, card_budget_of(request)); }

workflow::ParseOptions options_of(const request::Request& request) {
  workflow::ParseOptions o;
  if (request.has("models_dir")) o.models_dir = request.text("models_dir");
  if (request.has("model_folders")) o.model_folders = model_folders_of(request.raw("model_folders"));
  if (request.has("input_dir")) o.input_dir = request.text("input_dir");
  return o;
}

const json& workflow_of(const request::Request& request, json& parsed) {
  const json& w = request.raw("workflow");
  if (w.is_string()) {  // a workflow sent as text
    parsed = workflow::parse_workflow_text(w.get<std::string>(), "workflow");
    return parsed;
  }
  return w;
}

request::Fields workflow_fields() {
  using request::Kind;
  return with_runtime_fields(with_card_budget({
      {"workflow", Kind::Any, "the workflow JSON (UI or API format) or its text", 0, 0, {}, true},
      {"models_dir", Kind::String, "ComfyUI's models folder, to read the headers of the files the loaders name"},
      {"model_folders", Kind::Object, "ComfyUI's folder lists (folder name -> directories, extra_model_paths.yaml "
                                      "included), searched before models_dir"},
      {"input_dir", Kind::String, "ComfyUI's input folder, to read the size of the images LoadImage nodes load "
                                  "from their files' headers", 0, 0, {}, false, "input-dir"},
      {"source", Kind::String, "where the workflow came from, for notes (default \"workflow\")"},
  }));
}

std::optional<Withheld> withheld_verdict(const workflow::WorkflowInfo& info) {
  if (const auto& from = info.size_from_unknown) {
    // No verdict, change or card may rest on a size Headroom assumed: the stages stay as "what the
    // assumed size would need", and the answer says which node decides the real one.
    const std::string why = "the sampled latent's size comes from " + from->type + " #" + from->id + ", " + from->why +
                            "; the stages are for an assumed " +
                            std::to_string(info.job.width) + "x" + std::to_string(info.job.height) + ", " +
                            std::to_string(info.job.frames) + " frame(s), batch " + std::to_string(info.job.batch);
    return Withheld{why, {{"kind", "size"}, {"node_id", from->id}, {"node_type", from->type}, {"why", from->why},
                          {"assumed", {{"width", info.job.width}, {"height", info.job.height},
                                       {"frames", info.job.frames}, {"batch", info.job.batch}}}}};
  }
  if (!info.unsized_parts.empty()) {
    // An audio encoder or model patch the catalog lacks: the peak leaves its weights out, so it is no peak.
    const workflow::UnknownNode& u = info.unsized_parts.front();
    return Withheld{u.why, {{"kind", "part"}, {"node_id", u.id}, {"node_type", u.type}, {"why", u.why}}};
  }
  if (auto sampler = unknown_sampler(info.job)) return sampler;
  const auto broken = std::find_if(info.loaders.begin(), info.loaders.end(),
                                   [](const workflow::Loader& l) { return l.broken(); });
  if (broken == info.loaders.end()) return std::nullopt;
  // A 0-byte or truncated file is not what the figures count (they follow its name): ComfyUI would
  // fail to load it, so no verdict, change or card rests on it, as for a size Headroom assumed.
  return Withheld{broken->file_problem_text,
                  {{"kind", "file"}, {"node_id", broken->node_id}, {"node_type", broken->type}, {"file", broken->file},
                   {"file_problem", broken->file_problem}, {"why", broken->file_problem_text}}};
}

namespace {

// What a valid workflow holds that the estimator does not cover, for scripts (the CLI's exit status 3):
// the loader node and file of a diffusion model the catalog lacks, with the file's size where it was
// read (the least that model holds), or, when no diffusion loader runs, the nodes Headroom does not
// know, one of which may load it.
json not_covered(const workflow::WorkflowInfo& info, const json& unknown_nodes) {
  if (!info.job.diffusion) {
    std::string why = "no diffusion model loader runs in this workflow";
    if (!unknown_nodes.empty()) {
      why += "; nodes Headroom does not know: ";
      for (std::size_t i = 0; i < unknown_nodes.size(); ++i)
        why += (i ? ", " : "") + unknown_nodes[i]["type"].get<std::string>() + " #" + unknown_nodes[i]["id"].get<std::string>();
    }
    return {{"kind", "no_diffusion_loader"}, {"nodes", unknown_nodes}, {"reason", why}};
  }
  const Component& d = *info.job.diffusion;
  json out = {{"kind", "model"}, {"file", d.file}, {"node_id", nullptr}, {"node_type", nullptr}, {"role", nullptr},
              {"file_bytes", d.weight_bytes ? json(*d.weight_bytes) : json(nullptr)}};
  std::string node;
  for (const auto& l : info.loaders)
    if ((l.role == "diffusion" || l.role == "checkpoint") && l.file == d.file) {
      out["node_id"] = l.node_id;
      out["node_type"] = l.type;
      out["role"] = l.role;
      node = " (" + l.type + " #" + l.node_id + ")";
      break;
    }
  std::string why = "diffusion model '" + d.file + "'" + node +
                    " is not in the catalog (`headroom models` lists the models it knows)";
  if (d.weight_bytes) why += "; the file holds " + format_bytes(*d.weight_bytes) + ", the least the model takes";
  out["reason"] = why;
  return out;
}

// The stages of the models Headroom knows in a workflow it cannot size as a whole (its diffusion model is
// missing or unknown): a VAE decode or a text encode alone, at the workflow's size. No verdict rests on
// them; the run recorder sets them beside what those stages measured. Empty when none is known.
json sized_stages(const workflow::WorkflowInfo& info, const Runtime& rt) {
  Job job = info.job;
  job.diffusion.reset();
  job.model_patches.clear();  // sampled with the diffusion model, which is not sized here
  auto unknown = [](const Component& c) { return c.model.empty(); };
  job.text_encoders.erase(std::remove_if(job.text_encoders.begin(), job.text_encoders.end(), unknown), job.text_encoders.end());
  if (job.vae && unknown(*job.vae)) job.vae.reset();
  if (job.clip_vision && unknown(*job.clip_vision)) job.clip_vision.reset();
  if (!job.vae && job.text_encoders.empty() && !job.clip_vision && !job.audio_encoder) return json::array();
  try {
    return headroom::estimate(job, rt).to_json()["stages"];
  } catch (const Error&) {  // a part the estimator refuses alone: nothing sized, as before
    return json::array();
  }
}

// The plan's figures stay (what the workflow would need as Headroom reads it), but nothing that judges
// them: `not_covered` says what they rest on that Headroom could not know.
void withhold_verdict(json& out, const Withheld& withheld) {
  put_verdict(out, Verdict::Unknown);
  out["verdict_reason"] = withheld.why;
  out["reason"] = withheld.why;
  out["not_covered"] = withheld.not_covered;
  out["changes"] = json::array();
  // The same shape as a plan's (Plan::to_json), empty: readers need not tell the two apart.
  out["cumulative"] = {{"steps", json::array()}, {"fits", false}, {"new_peak_bytes", nullptr}};
  out["smallest_gpu"] = nullptr;
  out["smallest_gpu_runs"] = nullptr;
  out["advice"] = nullptr;
}

}  // namespace

const request::Fields& plan_fields() {
  static const request::Fields f = workflow_fields();
  return f;
}

json plan(const json& body) {
  const request::Request request(body, "plan", plan_fields());
  json parsed;
  const json& wf = workflow_of(request, parsed);
  std::string source = request.text_or("source", "workflow");
  Runtime rt = runtime_of(request);
  workflow::WorkflowInfo info = workflow::analyse_workflow(wf, source, options_of(request));
  json info_json = info.to_json();
  json unknown = info_json["unknown_nodes"];
  if (!info.job.diffusion || info.job.diffusion->model.empty()) {
    // Not fatal for a workflow we cannot size (SDXL, a custom model): say why, list what was found.
    json covered = not_covered(info, unknown);
    const std::string why = covered["reason"].get<std::string>();
    covered.erase("reason");
    json out = {{"reason", why}, {"not_covered", std::move(covered)},
                {"peak_bytes", nullptr}, {"stages", json::array()}, {"changes", json::array()},
                {"unknown_nodes", unknown}, {"smallest_gpu", nullptr}, {"smallest_gpu_runs", nullptr},
                {"sized_stages", sized_stages(info, rt)}, {"job", job_to_json(info.job)}, {"workflow", std::move(info_json)},
                {"budget_bytes", budget_json(rt)}};
    put_verdict(out, Verdict::Unknown);
    return out;
  }
  // The verdict, the stages and the plan are the binding sampler's, on this card (issue 19).
  info.job = bind_worst_sampler(info.job, rt);
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
  if (const auto withheld = withheld_verdict(info)) withhold_verdict(out, *withheld);
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

}  // namespace headroom::api
