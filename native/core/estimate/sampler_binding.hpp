#pragma once
// Issue 19: each sampler of a workflow is its own job. The job a workflow assembles combines its samplers
// (the largest model, the largest latent, the cfg read first), which no sampler runs; the run's peak is its
// worst sampler's under the runtime's caching rules, so the verdict, the stages and the plan are made on
// that sampler's job (bind_worst_sampler), and every surface renders that one answer.
#include "core/estimate/estimator.hpp"

namespace headroom {

// The job one sampler runs: the workflow's companions and decode with its own model, shape, cfg, LoRAs.
Job sampler_job(const Job& job, const SamplerJob& s);

// Whether two jobs sample the same model on the same shape (one sizing serves both).
bool same_sampled(const Job& a, const Job& b);

// The job of the binding sampler of `est` (the estimate of `job` on the card the answer is for): its model,
// shape, cfg and LoRAs; the other samplers' models (cached while they fit, held in host RAM); the decode at
// the size of the last pass that continues its latent. `job` itself when no sampler is sized or it is
// already bound. The samplers listing and the notes stay.
Job bind_worst_sampler(const Job& job, const Estimate& est);

// The same from the runtime: estimates `job` first when it has samplers to choose from.
Job bind_worst_sampler(const Job& job, const Runtime& runtime);

}  // namespace headroom
