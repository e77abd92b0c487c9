#pragma once
// The estimator's hook for corrections learned from measured runs (core/calibrate/calibration.hpp).
#include <vector>

#include "core/calibrate/calibration.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/job.hpp"

namespace headroom {

// Scales the peak of every stage a correction names (its stage, and a model of that stage by file name or
// catalog name) by the correction's factor, before the run's peak and verdict are taken from the stages.
// The change is a "calibration" part of the breakdown when it adds, and comes out of the stage's
// activations and transients when it takes away (weights, the CUDA context, ComfyUI's reserve and cached
// models are what they are). A calibrated peak never goes past est.vram_bytes: a measured run that fit is
// no evidence of one that does not. Each applied correction is noted on the stage and the estimate.
// A correction for a stage the estimator never reports is an InputError("calibration[i].stage").
void apply_calibration(Estimate& est, const Job& job, const std::vector<calibrate::Correction>& corrections);

}  // namespace headroom
