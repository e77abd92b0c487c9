#include "core/workflow/sampler_jobs.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/workflow/read_loaders.hpp"
#include "core/workflow/sampler_encoders.hpp"

namespace headroom::workflow {
namespace {

constexpr int kMaxHops = 64;  // a longer chain is a cycle the graph layer let through

std::string named(const Node& n) { return n.type + " #" + n.id; }

NodeRef ref_of(const Node& n) { return {n.id, n.type, n.title}; }

// Marks the job's model or size unknown at `at`, the node the trace stopped at.
void stop_at(SamplerJob& job, const Node& at, const std::string& what, std::string why) {
  job.unknown = std::move(why);
  job.unknown_node = ref_of(at);
  job.unknown_what = what;
}

const std::string* latent_input(const Node& n) {
  for (const auto& name : comfy_nodes().sampled_latent_inputs)
    if (n.input(name)) return &name;
  return nullptr;
}

// The guider a SamplerCustomAdvanced runs (its cfg and model), or nullptr.
const Node* guider_of(const ReaderState& st, const Node& sampler) { return source_of(st.g, sampler, "guider"); }

// The node a switch (ComfySwitchNode) passes on: the branch its widget selects, as executed_nodes runs it;
// nullptr when the widget is not a literal boolean.
const Node* switched(const ReaderState& st, const Node& n, const ComfyNode& info) {
  const auto v = resolved_value(st.g, n, info.switch_widget);
  if (!v || !v->is_boolean()) return nullptr;
  return source_of(st.g, n, v->get<bool>() ? info.on_true : info.on_false);
}

// The node behind the first of `inputs` that is linked: the latent a node that keeps (or scales) its size
// hands on, or the model a patch (a LoRA, a guider) hands on (comfy_nodes.json latent_through_inputs and
// model_through_inputs; an audio-video latent's size is its video part's).
const Node* through(const ReaderState& st, const Node& n, const std::vector<std::string>& inputs) {
  for (const auto& name : inputs)
    if (const Node* from = source_of(st.g, n, name)) return from;
  return nullptr;
}

// A node on the model's way that applies a ModelPatchLoader's file (WanInfiniteTalkToVideo's model_patch input):
// the patch loads with the model, once however many nodes apply it.
void add_patches(const ReaderState& st, const Node& at, SamplerJob& job) {
  for (const auto& in : at.inputs) {
    if (!in.from_node) continue;
    auto it = st.patches_by_node.find(*in.from_node);
    if (it == st.patches_by_node.end()) continue;
    const bool seen = std::any_of(job.model_patches.begin(), job.model_patches.end(),
                                  [&](const Component& c) { return same_load(c, it->second); });
    if (!seen) job.model_patches.push_back(it->second);
  }
}

// Follows MODEL back to the loader, adding the LoRAs and model patches on the way; a model patch hands its
// model input on.
void trace_model(const ReaderState& st, const Node& sampler, SamplerJob& job) {
  const Node* guider = guider_of(st, sampler);
  const Node* at = through(st, guider ? *guider : sampler, comfy_nodes().model_through_inputs);
  for (int hops = 0; at && hops < kMaxHops; ++hops) {
    if (auto it = st.diffusion_by_node.find(at->id); it != st.diffusion_by_node.end()) {
      job.diffusion = it->second;
      job.model_loader = ref_of(*at);
      return;
    }
    if (auto it = st.lora_bytes_by_node.find(at->id); it != st.lora_bytes_by_node.end()) job.lora_bytes += it->second;
    add_patches(st, *at, job);
    if (!node_info(at->type)) {
      // A node Headroom does not know that takes a MODEL hands on the model it patches, as the known patches
      // do (what it adds is not counted: it is listed among the unknown nodes); one without may load its own.
      if (const Node* patched = through(st, *at, comfy_nodes().model_through_inputs)) {
        at = patched;
        continue;
      }
      return stop_at(job, *at, "model", "its model comes from " + named(*at) + ", a node Headroom does not know");
    }
    const ComfyNode* info = node_info(at->type);
    const Node* next = info->switch_widget.empty() ? through(st, *at, comfy_nodes().model_through_inputs) : switched(st, *at, *info);
    if (!next)
      return stop_at(job, *at, "model",
                     "its model comes from " + named(*at) + ", which loads no diffusion model Headroom reads");
    at = next;
  }
  stop_at(job, sampler, "model", at ? "its model input runs through over 64 nodes" : "no model input is linked");
}

// The frames a latent_frames node gives its new latent (WanSoundImageToVideoExtend's length); 0 = not a literal.
int frames_of(const ReaderState& st, const Node& n, const std::string& widget) {
  const auto v = resolved_value(st.g, n, widget);
  return v && v->is_number_integer() && v->get<int>() > 0 ? v->get<int>() : 0;
}

// Where a frame-axis join (LatentConcat) hands on the sides, when a later node sets the frames; else null.
const Node* joined_sides(const ReaderState& st, const Node& n, const ComfyNode& info, int frames) {
  if (!info.frames_concat || frames <= 0) return nullptr;
  const std::string dim = text(resolved_value(st.g, n, info.frames_concat->widget));
  const auto& values = info.frames_concat->values;
  return std::find(values.begin(), values.end(), dim) != values.end() ? source_of(st.g, n, info.frames_concat->input) : nullptr;
}

void trace_latent(const ReaderState& st, const Node& sampler, SamplerJob& job) {
  double scale = 1.0;
  int frames = 0;  // set by a node nearer the sampler that makes a new latent of its own frames
  const Node* at = source_of(st.g, sampler, *latent_input(sampler));
  for (int hops = 0; at && hops < kMaxHops; ++hops) {
    if (auto it = st.latent_shapes.find(at->id); it != st.latent_shapes.end()) {
      const LatentShape& s = it->second;
      job.width = static_cast<int>(std::lround(s.width * scale));
      job.height = static_cast<int>(std::lround(s.height * scale));
      job.frames = frames > 0 ? frames : s.frames;
      job.batch = s.batch;
      job.seconds = s.seconds;
      job.tokens = s.tokens;
      job.size_known = true;
      return;
    }
    if (auto it = st.latent_unknown.find(at->id); it != st.latent_unknown.end()) {
      const Node* image = st.g.node(it->second.id);
      return stop_at(job, image ? *image : *at, "size",
                     "its latent follows " + it->second.type + " #" + it->second.id + ", " + it->second.why);
    }
    const ComfyNode* info = node_info(at->type);
    if (!info) return stop_at(job, *at, "size", "its latent comes from " + named(*at) + ", a node Headroom does not know");
    if (info->latent_scale > 1.0) scale *= info->latent_scale;
    // A pass sampled again continues it; one whose video a new clip only follows (latent_frames) does not.
    if (is_sampler(*at) && job.continues.empty() && frames <= 0) job.continues = at->id;
    if (!info->latent_frames.empty() && frames <= 0) {
      frames = frames_of(st, *at, info->latent_frames);
      if (frames <= 0)
        return stop_at(job, *at, "size", "its latent comes from " + named(*at) + ", whose " + info->latent_frames +
                                             " is not a literal Headroom reads");
    }
    // An earlier sampling pass keeps the size (a refiner, the second expert of a two-pass run).
    const Node* next = is_sampler(*at)                ? source_of(st.g, *at, *latent_input(*at))
                       : !info->switch_widget.empty() ? switched(st, *at, *info)
                       : info->frames_concat          ? joined_sides(st, *at, *info, frames)
                                                      : through(st, *at, comfy_nodes().latent_through_inputs);
    if (!next)
      return stop_at(job, *at, "size", "its latent comes from " + named(*at) + ", whose output size Headroom does not read");
    at = next;
  }
  // ComfyUI refuses a sampler whose latent input is not linked; a chain this long is a cycle let through.
  stop_at(job, sampler, "size", at ? "its latent input runs through over 64 nodes" : "no latent input is linked");
}

// The sampler's own cfg widget, else its guider's (a DualCFGGuider batches at least two conditionings).
double trace_cfg(const ReaderState& st, const Node& sampler) {
  const Node* guider = guider_of(st, sampler);
  for (const Node* n : {&sampler, guider}) {
    const ComfyNode* info = n ? node_info(n->type) : nullptr;
    if (!info) continue;
    if (!info->cfg_widget.empty())
      if (auto v = resolved_value(st.g, *n, info->cfg_widget); v && v->is_number()) return v->get<double>();
    if (info->cfg_at_least) return *info->cfg_at_least;
  }
  return -1;
}

// The SAMPLER a SamplerCustomAdvanced runs, where its node gives it a cost of its own (SamplerARVideo's
// ar_video: block by block with a key/value cache) and the latent frames of each block.
void trace_sampling(const ReaderState& st, const Node& sampler, SamplerJob& job) {
  const Node* made = source_of(st.g, sampler, "sampler");
  const ComfyNode* info = made ? node_info(made->type) : nullptr;
  if (!info || !info->sampling) return;
  job.sampling = *info->sampling;
  if (info->block_frames_widget.empty()) return;
  const auto value = resolved_value(st.g, *made, info->block_frames_widget);
  const auto frames = integer(value);
  // ComfyUI refuses the prompt outside the widget's range (1 to 64), so no figure may rest on it.
  if (!frames || *frames < 1 || *frames > 64)
    throw InputError(named(*made) + " " + info->block_frames_widget,
                     "expected a whole number of latent frames per block from 1 to 64, got " +
                         (value ? json_preview(*value) : std::string("no value")));
  job.block_frames = static_cast<int>(*frames);
}

// Every node `n` takes an input from, directly or through others: ComfyUI runs them before it.
std::set<std::string> upstream(const Graph& g, const Node& n) {
  std::set<std::string> seen;
  std::vector<const Node*> stack{&n};
  while (!stack.empty()) {
    const Node* at = stack.back();
    stack.pop_back();
    for (const auto& in : at->inputs)
      if (in.from_node && seen.insert(*in.from_node).second)
        if (const Node* from = g.node(*in.from_node)) stack.push_back(from);
  }
  return seen;
}

// The samplers in the order ComfyUI runs them: one that feeds another (a depth pass before the model it
// conditions, a first pass before its refiner) first, whatever their ids; unrelated ones in id order.
void order_by_execution(ReaderState& st) {
  std::vector<SamplerJob>& samplers = st.info.job.samplers;
  std::vector<std::set<std::string>> before;
  for (const auto& s : samplers) before.push_back(upstream(st.g, *st.g.node(s.node_id)));
  std::vector<SamplerJob> ordered;
  std::vector<bool> taken(samplers.size(), false);
  while (ordered.size() < samplers.size()) {
    std::size_t next = samplers.size();
    for (std::size_t i = 0; i < samplers.size() && next == samplers.size(); ++i) {
      if (taken[i]) continue;
      bool waits = false;
      for (std::size_t j = 0; j < samplers.size() && !waits; ++j)
        waits = j != i && !taken[j] && before[i].count(samplers[j].node_id) > 0;
      if (!waits) next = i;
    }
    if (next == samplers.size())  // samplers feeding each other (a cycle the graph let through): id order
      next = static_cast<std::size_t>(std::find(taken.begin(), taken.end(), false) - taken.begin());
    taken[next] = true;
    ordered.push_back(samplers[next]);
  }
  samplers = std::move(ordered);
}

}  // namespace

bool is_sampler(const Node& n) {
  const ComfyNode* info = node_info(n.type);
  return info && info->stage == "sample" && latent_input(n);
}

void trace_samplers(ReaderState& st) {
  for (const auto& id : st.run) {
    const Node* n = st.g.node(id);
    if (!n || !is_sampler(*n)) continue;
    SamplerJob job;
    job.node_id = n->id;
    job.type = n->type;
    job.title = n->title;
    trace_model(st, *n, job);
    const std::string model_unknown = std::move(job.unknown);
    const auto model_node = std::move(job.unknown_node);
    const std::string model_what = std::move(job.unknown_what);
    job.unknown.clear();
    job.unknown_node.reset();
    job.unknown_what.clear();
    trace_latent(st, *n, job);
    if (!model_unknown.empty()) {  // the model's stop is named first
      job.unknown = model_unknown + (job.unknown.empty() ? "" : "; " + job.unknown);
      job.unknown_node = model_node;
      job.unknown_what = model_what;
    }
    trace_encoders(st, *n, job);
    job.cfg = trace_cfg(st, *n);
    trace_sampling(st, *n, job);
    st.info.job.samplers.push_back(std::move(job));
  }
  order_by_execution(st);
}

}  // namespace headroom::workflow
