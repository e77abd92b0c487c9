// Presets -> widget edits. The after-peak is estimated from the rewritten workflow parsed again,
// so the figures shown are those of what the user will actually run.
#include "core/plan/presets_apply.hpp"

#include <algorithm>
#include <set>

#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/plan/planner.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/change_search.hpp"
#include "core/plan/changes.hpp"
#include "core/workflow/workflow_names.hpp"
#include "core/base/json_reader.hpp"

namespace headroom {

namespace {

using nlohmann::json;
using workflow::WidgetRef;
using workflow::WorkflowInfo;

std::uint64_t target_bytes_for(const PresetSpec& p);

// The runtime a preset sizes for: the request's card (and its free memory) for "fit this card", or
// the smallest catalog card of the preset's size, whole and empty, for "fit N GB".
Runtime target_runtime_for(const PresetSpec& p, const Runtime& request) {
  Runtime rt = request;
  if (p.target_request) {
    if (!request.has_card())
      throw InputError("gpu", "preset '" + p.name +
                                  "' needs the card: give gpu (a name from gpus.json), vram_bytes or free_bytes");
    return rt;
  }
  if (!p.target_memory_gb) return rt;
  rt.free_bytes = 0;  // another card than the one whose free memory was measured
  rt.vram_bytes = target_bytes_for(p);
  return rt;
}

std::uint64_t usable_bytes(const Runtime& rt) { return rt.free_bytes ? rt.free_bytes : rt.vram_bytes; }

std::uint64_t target_bytes_for(const PresetSpec& p) {
  // "fit 24 GB" = the smallest card sold as 24 GB (what the driver reports is a little less than 24 GiB).
  std::uint64_t best = 0;
  for (const auto& g : catalog_data().gpus)
    if (std::abs(g.memory_gb - *p.target_memory_gb) < 0.5 && (best == 0 || g.memory_bytes < best)) best = g.memory_bytes;
  if (best == 0) best = static_cast<std::uint64_t>(*p.target_memory_gb * 1e9);
  return best;
}

class Rewriter {
 public:
  explicit Rewriter(json wf) : wf_(std::move(wf)) {}

  void set(const WidgetRef& r, const json& to) {
    if (r.value == to) return;
    for (const auto& p : r.where) wf_[p] = to;
    changes_.push_back({{"node_id", r.node_id}, {"widget", r.widget}, {"from", r.value}, {"to", to}});
  }

  // VAEDecode <-> VAEDecodeTiled: the node keeps its id, links and inputs; only its type and widgets change.
  void decoder(const workflow::Decoder& d, bool api, const std::string& to_type, int tile, int overlap) {
    json& node = wf_[d.where];
    if (api) {
      node["class_type"] = to_type;
      json& in = node["inputs"];
      if (to_type == "VAEDecodeTiled") {
        in["tile_size"] = tile;
        in["overlap"] = overlap;
        in["temporal_size"] = 64;   // the node's defaults (comfyui-internals.md 2.4)
        in["temporal_overlap"] = 8;
      } else {
        for (const char* k : {"tile_size", "overlap", "temporal_size", "temporal_overlap"}) in.erase(k);
      }
    } else {
      node["type"] = to_type;
      node["widgets_values"] = to_type == "VAEDecodeTiled" ? json::array({tile, overlap, 64, 8}) : json::array();
      if (node.contains("properties") && node["properties"].is_object() &&
          node["properties"].contains("Node name for S&R"))
        node["properties"]["Node name for S&R"] = to_type;
    }
    // One change for the replaced node, with the widgets the new node gets: a node type is no widget
    // a browser can set, so `replace` tells it to swap the node (keeping its id and links).
    json widgets = json::object();
    if (to_type == "VAEDecodeTiled")
      widgets = {{"tile_size", tile}, {"overlap", overlap}, {"temporal_size", 64}, {"temporal_overlap", 8}};
    changes_.push_back({{"node_id", d.node_id}, {"widget", "type"}, {"from", d.type}, {"to", to_type},
                        {"replace", true}, {"widgets", widgets}});
  }

  json& workflow() { return wf_; }
  json& changes() { return changes_; }

 private:
  json wf_;
  json changes_ = json::array();
};

// What a preset may change in this workflow: only knobs that exist as widgets.
std::set<std::string> widget_kinds(const WorkflowInfo& info) {
  std::set<std::string> k;
  if (!info.decoders.empty()) k.insert("decode_tiled");
  if (!info.text_encoder_device.empty()) k.insert("text_encoder_cpu");
  if (!info.weight_dtype.empty()) k.insert("weights_fp8");
  if (!info.batch.empty()) k.insert("batch");
  if (!info.length.empty()) k.insert("frames");
  // A side computed by a node (ResolutionSelector's output) has no widget to write: not a knob here.
  auto writable = [](const std::vector<workflow::WidgetRef>& refs) {
    return !refs.empty() && std::all_of(refs.begin(), refs.end(), [](const auto& r) { return !r.where.empty(); });
  };
  if (writable(info.width) && writable(info.height) && info.size_known) k.insert("resolution");
  return k;
}

// 1. The preset's fixed settings (weight dtype, decode, text encoder device), where the workflow has the widget.
void apply_fixed_settings(const PresetSpec& preset, const WorkflowInfo& info, const Runtime& rt,
                          const Estimate& before, Job& job, std::vector<std::string>* kinds) {
  const json& set = preset.set;
  std::string dtype = set.value("weight_dtype", "");
  std::string decode = set.value("decode", "");
  std::string device = set.value("text_encoder_device", "");
  if (!dtype.empty() && job.diffusion && !info.weight_dtype.empty()) {
    std::string forced = workflow::precision_from_weight_dtype(dtype);
    std::string file_precision = precision_from_file_name(job.diffusion->file).value_or("");
    const std::string to = forced.empty() ? file_precision : forced;
    // weight_dtype only ever lowers what a file holds: an fp8mixed, fp8_scaled, GGUF or fp4 file is left
    // as it is (its weight_dtype fp8 would change nothing but the widget).
    const PrecisionInfo* p = plan_search::precision_named(to);
    const bool lowers = p && plan_search::bits_of(*job.diffusion) > p->bits_per_weight() + 0.01;
    if (file_precision != "fp8_scaled" && (forced.empty() || lowers)) job.diffusion->precision = to;
  }
  if (decode == "full") job.decode_mode = DecodeMode::Full;
  if (decode == "tiled" && job.decode_mode == DecodeMode::Full && !info.decoders.empty()) {
    if (auto c = plan_change("decode_tiled", job, rt, before)) {
      job = c->job;
      kinds->push_back("decode_tiled");
    }
  }
  if (device == "cpu" && !info.text_encoder_device.empty() && !job.text_encoder_on_cpu) {
    job.text_encoder_on_cpu = true;
    kinds->push_back("text_encoder_cpu");
  }
  if (device == "default") job.text_encoder_on_cpu = false;
}

// The plan did not fit with every change: smaller batches, clips or images that still do not fit would
// cost the user content for nothing, unless the run would otherwise fail: then the cuts go as far as is
// needed to make it run at all (verdict "tight": with weights streamed), as `headroom plan` shows them.
void take_until_it_runs(const Plan& plan, const Runtime& rt, Job& job, std::vector<std::string>* kinds,
                        std::vector<std::string>* notes) {
  std::optional<Verdict> verdict = plan.verdict;
  bool cut = false;
  // The job and kinds before the first content cut: what is kept when the cuts do not make it run.
  Job uncut = job;
  std::size_t uncut_kinds = kinds->size();
  for (const auto& step : plan.cumulative) {
    const bool content = step.kind == "batch" || step.kind == "frames" || step.kind == "resolution";
    if (content && verdict != Verdict::DoesNotFit) break;
    job = step.job;
    kinds->push_back(step.kind);
    verdict = step.verdict;
    cut = cut || content;
    if (!cut) {
      uncut = job;
      uncut_kinds = kinds->size();
    }
  }
  if (verdict == Verdict::DoesNotFit && cut) {
    job = uncut;
    kinds->resize(uncut_kinds);
  }
  if (verdict == Verdict::DoesNotFit)
    notes->push_back("even the widget changes this preset may make do not fit " + std::to_string(usable_bytes(rt)) +
                     " bytes, so batch, length and size were left as they are; see `headroom plan` for GGUF "
                     "files and block swap");
  else if (cut)
    notes->push_back("the run does not fit " + std::to_string(usable_bytes(rt)) +
                     " bytes as it is, so batch, length or size were reduced until it runs; ComfyUI will "
                     "stream weights (slower); see `headroom plan` for GGUF files and block swap");
  else
    notes->push_back("the widget changes this preset may make are not enough to fit " +
                     std::to_string(usable_bytes(rt)) + " bytes, so batch, length and size were left as they "
                     "are; ComfyUI will stream weights (slower); see `headroom plan` for GGUF files and "
                     "block swap");
}

Job preset_job(const PresetSpec& preset, const WorkflowInfo& info, const Runtime& rt, const Estimate& before,
               std::vector<std::string>* kinds, std::vector<std::string>* notes, const Plan* reuse = nullptr) {
  Job job = info.job;
  resolve_models(job);
  apply_fixed_settings(preset, info, rt, before, job, kinds);
  if (preset.until_fits.empty() || !rt.has_card()) return job;

  // 2. Planner changes in the preset's order until it fits.
  PlanOptions po;
  std::set<std::string> ok = widget_kinds(info);
  std::set<std::string> allowed;
  for (const auto& k : preset.until_fits)
    if (ok.count(k)) allowed.insert(k);
  po.allowed = allowed;
  po.order = preset.until_fits;
  po.smallest_gpu = false;
  // The caller's plan priced the same job on the same card unless fixed settings changed it.
  if (kinds->empty() && preset.set.empty()) po.reuse = reuse;
  Plan plan = make_plan(job, rt, po);
  if (plan.cumulative_fits) {
    for (const auto& step : plan.cumulative) {
      job = step.job;
      kinds->push_back(step.kind);
    }
  } else if (plan.verdict != Verdict::Fits) {
    take_until_it_runs(plan, rt, job, kinds, notes);
  }
  return job;
}

}  // namespace

std::vector<std::string> preset_change_kinds(const std::string& name, const WorkflowInfo& info,
                                             const Runtime& request_runtime, const Plan* plan) {
  const PresetSpec* preset = planner_preset_data().preset(name);
  if (!preset) throw InputError("preset", "unknown preset '" + text_preview(name) + "'");
  if (!info.job.diffusion || info.job.diffusion->model.empty()) return {};
  const Runtime rt = target_runtime_for(*preset, request_runtime);
  // `plan` is of the request's runtime: reusable only when the preset sizes for that same card.
  if (!preset->target_request) plan = nullptr;
  std::vector<std::string> kinds, notes;
  preset_job(*preset, info, rt, plan ? plan->estimate : estimate(info.job, rt), &kinds, &notes, plan);
  return kinds;
}

PresetResult apply_preset(const json& wf, const std::string& name, const Runtime& request_runtime,
                          const std::string& source, const workflow::ParseOptions& options) {
  const PresetData& data = planner_preset_data();
  const PresetSpec* preset = data.preset(name);
  if (!preset) {
    std::string names;
    for (const auto& p : data.presets) names += (names.empty() ? "" : ", ") + ("'" + p.name + "'");
    throw InputError("preset", "unknown preset '" + text_preview(name) + "'; presets: " + names);
  }
  WorkflowInfo info = workflow::analyse_workflow(wf, source, options);
  if (!info.job.diffusion || info.job.diffusion->model.empty())
    throw InputError("workflow", "no catalog diffusion model runs in this workflow, so no preset can be sized for it");

  PresetResult out;
  const Runtime rt = target_runtime_for(*preset, request_runtime);
  info.job = bind_worst_sampler(info.job, rt);  // the preset sizes the binding sampler's job, as the plan does
  out.target_bytes = usable_bytes(rt);
  Estimate before = estimate(info.job, rt);
  out.judged_on_request = request_runtime.has_card();
  const Runtime& judged = out.judged_on_request ? request_runtime : rt;
  out.judged_bytes = usable_bytes(judged);
  out.before = out.judged_on_request ? estimate(info.job, judged) : before;
  out.before_peak = out.before.peak_bytes;
  out.before_need = need_bytes(out.before);

  std::vector<std::string> kinds;
  Job job = preset_job(*preset, info, rt, before, &kinds, &out.notes);
  out.kinds = kinds;

  // 3. Write the job back as widget values.
  Rewriter rw(wf);
  const Job& j0 = info.job;
  if (job.diffusion && j0.diffusion && job.diffusion->precision != j0.diffusion->precision) {
    std::string to = job.diffusion->precision == "fp8_e4m3fn" ? "fp8_e4m3fn"
                     : job.diffusion->precision == "fp8_e5m2" ? "fp8_e5m2" : "default";
    for (const auto& r : info.weight_dtype) rw.set(r, to);
  }
  if (job.text_encoder_on_cpu != j0.text_encoder_on_cpu)
    for (const auto& r : info.text_encoder_device) rw.set(r, job.text_encoder_on_cpu ? "cpu" : "default");
  if (job.batch != j0.batch)
    for (const auto& r : info.batch) rw.set(r, job.batch);
  if (job.frames != j0.frames)
    for (const auto& r : info.length) rw.set(r, job.frames);
  if (job.width != j0.width || job.height != j0.height) {
    for (const auto& r : info.width) rw.set(r, job.width);
    for (const auto& r : info.height) rw.set(r, job.height);
  }
  if (job.decode_mode != j0.decode_mode || job.decode_tile_px != j0.decode_tile_px) {
    int overlap = std::min(data.search.tile_overlap_px, job.decode_tile_px / 4);
    for (const auto& d : info.decoders) {
      if (job.decode_mode == DecodeMode::Tiled) {
        if (d.type == "VAEDecode") rw.decoder(d, info.api_format, "VAEDecodeTiled", job.decode_tile_px, overlap);
        else if (d.type == "VAEDecodeTiled" && d.tile_size) rw.set(*d.tile_size, job.decode_tile_px);
        else if (d.type == "HeadroomVAEDecode" && d.mode && d.mode->value == "full") rw.set(*d.mode, "auto");
      } else if (job.decode_mode == DecodeMode::Full) {
        if (d.type == "VAEDecodeTiled") rw.decoder(d, info.api_format, "VAEDecode", 0, 0);
      }
    }
  }

  // 4. The after-peak of the rewritten workflow, parsed again.
  WorkflowInfo after = workflow::analyse_workflow(rw.workflow(), source, options);
  after.job = bind_worst_sampler(after.job, rt);
  out.target_after = estimate(after.job, rt);
  out.after = out.judged_on_request ? estimate(after.job, judged) : out.target_after;
  out.after_peak = out.after.peak_bytes;
  out.after_need = need_bytes(out.after);
  out.workflow = std::move(rw.workflow());
  out.changes = std::move(rw.changes());
  out.info = std::move(info);
  return out;
}

}  // namespace headroom
