#include "core/estimate/sampler_binding.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/job_models.hpp"

namespace headroom {
namespace {

const SamplerJob* sampler_by_id(const Job& job, const std::string& id) {
  for (const auto& s : job.samplers)
    if (s.node_id == id) return &s;
  return nullptr;
}

// The widest pass that continues `bound`'s latent, directly or through further passes (the 2x pass
// after a first pass): its latent is what the VAE decodes. `bound` itself when none continues it.
const SamplerJob& last_pass(const Job& job, const SamplerJob& bound) {
  const SamplerJob* widest = &bound;
  for (const auto& s : job.samplers) {
    if (!s.size_known || s.seconds > 0 || s.tokens > 0) continue;
    const SamplerJob* at = &s;
    for (int hops = 0; at && !at->continues.empty() && hops < 64; ++hops) {
      at = sampler_by_id(job, at->continues);
      if (at == &bound) {
        if (s.width > widest->width) widest = &s;
        break;
      }
    }
  }
  return *widest;
}

bool known(const std::optional<Component>& c) { return c && find_model_of(*c); }

// The other samplers' models, each once, with whether its sampler runs before the bound one; a
// workflow's model no sampler traced to (its trace stopped at a node Headroom does not know) is loaded too.
std::vector<OtherModel> other_models(const Job& job, const SamplerJob& bound) {
  std::vector<OtherModel> out;
  std::vector<std::string> seen{bound.diffusion->model};
  bool before = true;
  auto add = [&](const Component& c, bool runs_before) {
    if (std::find(seen.begin(), seen.end(), c.model) != seen.end()) return;
    seen.push_back(c.model);
    out.push_back({c, runs_before});
  };
  for (const auto& s : job.samplers) {
    if (&s == &bound) {
      before = false;
      continue;
    }
    if (known(s.diffusion)) add(*s.diffusion, before);
  }
  if (known(job.diffusion)) add(*job.diffusion, false);
  return out;
}

bool same_file(const Component& a, const Component& b) {
  return a.model == b.model && a.precision == b.precision && a.file == b.file;
}

// The workflow's text encoders the bound job's conditioning does not read, each once, with whether a
// sampler reading it runs before the bound one (its prompt was encoded first): ComfyUI's cache keeps every
// CLIP object a run loaded, so each still counts in host RAM.
std::vector<OtherModel> other_encoders(const Job& job, const SamplerJob& bound, const Job& bound_job) {
  std::vector<OtherModel> out;
  auto add = [&](const Component& c, bool runs_before) {
    auto same = [&](const Component& t) { return same_file(t, c); };
    if (std::none_of(bound_job.text_encoders.begin(), bound_job.text_encoders.end(), same) &&
        std::none_of(out.begin(), out.end(), [&](const OtherModel& o) { return same(o.model); }))
      out.push_back({c, runs_before});
  };
  bool before = true;
  for (const auto& s : job.samplers) {
    if (&s == &bound) before = false;
    else
      for (const auto& c : s.text_encoders) add(c, before);
  }
  for (const auto& c : job.text_encoders) add(c, false);
  return out;
}

std::string shape_text(const Job& j) {
  return std::to_string(j.width) + "x" + std::to_string(j.height) + (j.frames > 1 ? "x" + std::to_string(j.frames) : "");
}

}  // namespace

Job sampler_job(const Job& job, const SamplerJob& s) {
  Job j = job;
  j.diffusion = s.diffusion;
  if (s.size_known) {
    // A 1-D latent (an audio clip, shape tokens) has no pixels: the job keeps its own width and height.
    const bool one_dim = s.seconds > 0 || s.tokens > 0;
    j.width = one_dim ? job.width : s.width;
    j.height = one_dim ? job.height : s.height;
    j.frames = s.frames;
    j.batch = s.batch;
    if (s.seconds > 0) j.seconds = s.seconds;
    if (s.tokens > 0) j.tokens = s.tokens;
  }
  if (s.cfg >= 0) j.cfg = s.cfg;
  j.sampling = s.sampling;
  j.block_frames = s.block_frames;
  j.lora_bytes = s.lora_bytes;
  j.model_patches = s.model_patches;
  if (s.encoders_traced) {  // its own conditioning's encoders, not every CLIP loader of the workflow
    j.text_encoders = s.text_encoders;
    j.text_encoder_loads = s.text_encoder_loads;
  }
  j.other_text_encoders.clear();
  j.samplers.clear();
  j.notes.clear();
  j.bound_sampler.clear();
  j.other_diffusion.clear();
  j.decode_scale = 1.0;
  return j;
}

bool same_sampled(const Job& a, const Job& b) {
  return a.diffusion && b.diffusion && a.diffusion->model == b.diffusion->model &&
         a.diffusion->precision == b.diffusion->precision && a.diffusion->weight_bytes == b.diffusion->weight_bytes &&
         a.width == b.width && a.height == b.height && a.frames == b.frames && a.batch == b.batch &&
         a.seconds == b.seconds && a.tokens == b.tokens && a.cfg == b.cfg && a.lora_bytes == b.lora_bytes &&
         a.sampling == b.sampling && a.block_frames == b.block_frames &&
         a.model_patches.size() == b.model_patches.size();
}

Job bind_worst_sampler(const Job& job, const Estimate& est) {
  if (!job.bound_sampler.empty()) return job;
  auto binding = std::find_if(est.samplers.begin(), est.samplers.end(), [](const SamplerPeak& s) { return s.binding; });
  if (binding == est.samplers.end()) return job;
  const SamplerJob* bound = sampler_by_id(job, binding->job.node_id);
  if (!bound || !known(bound->diffusion)) return job;
  Job j = sampler_job(job, *bound);
  j.samplers = job.samplers;
  j.notes = job.notes;
  j.bound_sampler = bound->node_id;
  j.other_diffusion = other_models(job, *bound);
  j.other_text_encoders = other_encoders(job, *bound, j);
  const SamplerJob& last = last_pass(job, *bound);
  if (&last != bound && bound->size_known && bound->width > 0) j.decode_scale = static_cast<double>(last.width) / bound->width;
  if (!same_sampled(job, j) || j.decode_scale != 1.0)
    j.notes.push_back("the figures are those of " + bound->type + " #" + bound->node_id +
                      (bound->title.empty() ? "" : " \"" + bound->title + "\"") + " (" + shape_text(j) +
                      (j.cfg != 1.0 ? ", cfg " + json_preview(j.cfg, 8) : "") + "), the worst of " +
                      std::to_string(job.samplers.size()) + " samplers" +
                      (j.decode_scale != 1.0 ? "; the VAE decodes the " + std::to_string(last.width) + "x" +
                                                   std::to_string(last.height) + " latent of " + last.type + " #" +
                                                   last.node_id + ", which continues it"
                                             : ""));
  return j;
}

Job bind_worst_sampler(const Job& job, const Runtime& runtime) {
  if (!job.bound_sampler.empty() || job.samplers.empty() || !job.diffusion || !known(job.diffusion)) return job;
  return bind_worst_sampler(job, estimate(job, runtime));
}

}  // namespace headroom
