#include "core/estimate/job_models.hpp"

#include "core/catalog/catalog.hpp"

namespace headroom {
namespace {

// A resolved entry holds only while the component still names it (a change may rename the model).
const ModelInfo* resolved(const Component& c) { return c.info && c.info->name == c.model ? c.info : nullptr; }

void resolve(Component& c) { c.info = c.model.empty() ? nullptr : find_model(c.model); }

}  // namespace

void resolve_models(Job& job) {
  if (job.diffusion) resolve(*job.diffusion);
  for (auto& t : job.text_encoders) resolve(t);
  for (auto& g : job.text_generations) resolve(g.model);
  if (job.clip_vision) resolve(*job.clip_vision);
  if (job.vae) resolve(*job.vae);
}

const ModelInfo& model_of(const Component& c, const std::string& field) {
  if (const ModelInfo* m = resolved(c)) return *m;
  return resolve_model(c.model, field);
}

const ModelInfo* find_model_of(const Component& c) {
  if (const ModelInfo* m = resolved(c)) return m;
  return find_model(c.model);
}

}  // namespace headroom
