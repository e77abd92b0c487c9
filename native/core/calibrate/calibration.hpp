#pragma once
// Corrections learned from the user's own runs: per (model file, stage, card) the ratio of the memory a
// run really reserved to what Headroom predicted, bounded by the rule of models.json "runtime"
// (calibration_*). The estimator applies them (core/estimate/apply_calibration.hpp); the learning itself
// is a core request (api::calibrate), so the nodes only store what it answers and pass it back.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::calibrate {

struct Correction {
  std::string model;  // the file name the run loaded (or a catalog name), as the history records it
  std::string stage;  // the estimator's stage name ("sample", "vae_decode", ...)
  std::string card;   // the device the runs were measured on ("" when the request does not say)
  double factor = 1;  // measured / predicted, within [factor_min, factor_max]
  int runs = 0;       // how many measured runs it was learned from
};

// The rule's constants, read once from models.json "runtime" (ranges in catalog.cpp kRuntimeConstants).
struct Rule {
  int min_runs;       // fewer measured runs give no correction
  int max_runs;       // only the newest this many runs of a key count, so an old driver or version fades out
  double factor_min;  // the clamp of the median ratio
  double factor_max;
};
const Rule& rule();
nlohmann::json rule_json(const Rule& r);

// The median of measured/predicted over each key's newest max_runs usable stages, clamped, for every key
// with at least min_runs of them. A usable stage: its run's outcome is "ok", the run names its device,
// the stage names its model, predicted_uncalibrated_bytes (else predicted_bytes) and measured_bytes are
// both positive. `runs` is the history answer's list, newest first; `card`, when not empty, keeps only
// runs on that device; `since` (unix seconds, 0 = all) keeps only runs started at or after it, so a
// reset forgets every earlier run without touching the history. Null figures are skipped; a figure of the wrong type is an InputError naming
// its path ("runs[2].stages[0].measured_bytes").
struct Learned {
  std::vector<Correction> corrections;  // sorted by card, model, stage
  int runs_seen = 0;                    // runs in the list
  int stages_used = 0;                  // measured stages that went into a correction's median
  int stages_skipped = 0;               // stages without a usable pair (not ok, CPU, no model...)
};
Learned learn(const nlohmann::json& runs, const std::string& card, double since);

// The "calibration" list of an estimate or plan request, checked: every entry an object with model and
// stage (non-empty text), factor within the rule's clamp, runs a whole number >= min_runs, card text or
// absent, and no (model, stage) twice. Throws InputError naming "<field>[i].<key>".
std::vector<Correction> read_corrections(const nlohmann::json& list, const std::string& field);

nlohmann::json to_json(const Correction& c);

}  // namespace headroom::calibrate
