#include "core/workflow/sampler_encoders.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/workflow/read_loaders.hpp"
#include "core/workflow/sampler_jobs.hpp"

namespace headroom::workflow {
namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The inputs conditioning may come through: not a MODEL (a LoRA loader's model input leads to the
// diffusion loader, whose checkpoint may bundle encoders nobody reads), nor the sampler's own latent.
bool followed(const Input& in, bool at_sampler) {
  if (!in.from_node || listed(comfy_nodes().model_through_inputs, in.name)) return false;
  return !(at_sampler && listed(comfy_nodes().sampled_latent_inputs, in.name));
}

// The traced encoders in the order the workflow's loaders read them (node ids), a checkpoint's last.
void in_workflow_order(const std::vector<Component>& workflow, SamplerJob& job) {
  auto rank = [&](const Component& c) {
    auto at = std::find_if(workflow.begin(), workflow.end(), [&](const Component& w) { return same_load(w, c); });
    return static_cast<std::size_t>(at - workflow.begin());
  };
  std::vector<std::size_t> order(job.text_encoders.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rank(job.text_encoders[a]) < rank(job.text_encoders[b]);
  });
  std::vector<Component> encoders;
  std::vector<std::string> loads;
  for (std::size_t i : order) {
    encoders.push_back(job.text_encoders[i]);
    loads.push_back(job.text_encoder_loads[i]);
  }
  job.text_encoders = std::move(encoders);
  job.text_encoder_loads = std::move(loads);
}

// Whether a link from `from`'s output `slot` carries a CLIP object whose encoders Headroom read: a CLIP
// loader's only output, a checkpoint's CLIP output (not its MODEL or VAE).
bool reads_clip(const ReaderState& st, const Node& from, int slot) {
  if (!st.encoder_loads.count(from.id)) return false;
  const ComfyNode* info = node_info(from.type);
  return !info || !info->clip_output || *info->clip_output == slot;
}

void add_load(const std::vector<Component>& load, const std::string& loader, SamplerJob& job) {
  job.encoders_traced = true;
  for (const Component& c : load) {
    const bool again = std::any_of(job.text_encoders.begin(), job.text_encoders.end(),
                                   [&](const Component& t) { return same_load(t, c); });
    if (again) continue;  // one file loaded by two loaders alike is one copy (read_loaders.cpp already_loaded)
    job.text_encoders.push_back(c);
    job.text_encoder_loads.push_back(loader);
  }
}

}  // namespace

void trace_encoders(const ReaderState& st, const Node& sampler, SamplerJob& job) {
  std::set<std::string> seen{sampler.id};
  std::vector<const Node*> stack{&sampler};
  while (!stack.empty()) {
    const Node* at = stack.back();
    stack.pop_back();
    const bool own = at == &sampler;
    if (!own && is_sampler(*at)) continue;
    for (const auto& in : at->inputs) {
      if (!followed(in, own)) continue;
      const Node* from = st.g.node(*in.from_node);
      if (!from) continue;
      if (reads_clip(st, *from, in.from_slot)) add_load(st.encoder_loads.at(from->id), from->id, job);
      if (seen.insert(from->id).second) stack.push_back(from);
    }
  }
  in_workflow_order(st.info.job.text_encoders, job);
}

}  // namespace headroom::workflow
