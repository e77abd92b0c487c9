// A Job's models resolved once (estimate/job_models): the planner's copies of a job answer from the
// resolved entry, and a component renamed since is looked up by its new name, never by the stale entry.
#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/job_models.hpp"

using namespace headroom;

namespace {

const ModelInfo& first_of(Role role) {
  for (const auto& m : catalog_data().models)
    if (m.role == role) return m;
  FAIL("the catalog has no model of this role");
  return catalog_data().models.front();
}

}  // namespace

TEST_CASE("resolve_models sets every known component's entry and leaves unknown ones unset", "[estimate][job_models]") {
  const ModelInfo& diffusion = first_of(Role::DiffusionModel);
  Job job = default_job(diffusion.name);
  job.text_encoders.push_back(Component{"no-such-model-anywhere", "", std::nullopt, ""});
  resolve_models(job);
  REQUIRE(job.diffusion);
  CHECK(job.diffusion->info == &diffusion);
  CHECK(job.text_encoders.back().info == nullptr);
  if (job.vae) CHECK(job.vae->info == find_model(job.vae->model));
  CHECK(&model_of(*job.diffusion) == &diffusion);
  CHECK(find_model_of(job.text_encoders.back()) == nullptr);
  CHECK(support::input_error_field([&] { model_of(job.text_encoders.back(), "text_encoder"); }) == "text_encoder");
}

TEST_CASE("model_of does not trust an entry its component no longer names", "[estimate][job_models]") {
  const ModelInfo& vae = first_of(Role::Vae);
  const ModelInfo& diffusion = first_of(Role::DiffusionModel);
  Component c{diffusion.name, "", std::nullopt, ""};
  c.info = &diffusion;
  c.model = vae.name;  // a change renamed the model after it was resolved
  CHECK(&model_of(c) == &vae);
  CHECK(find_model_of(c) == &vae);
}

TEST_CASE("an estimate of a resolved job equals the estimate of the same job by name", "[estimate][job_models]") {
  const ModelInfo& diffusion = first_of(Role::DiffusionModel);
  Job by_name = default_job(diffusion.name);
  Job resolved = by_name;
  resolve_models(resolved);
  Runtime rt;
  rt.vram_bytes = 12ull << 30;
  CHECK(estimate(resolved, rt).to_json() == estimate(by_name, rt).to_json());
}
