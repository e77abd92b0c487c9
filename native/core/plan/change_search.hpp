#pragma once
// Internal to plan/: pricing candidate jobs with the estimator and searching the mildest that fits.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/job_models.hpp"

namespace headroom::plan_search {

struct Priced {
  Job job;
  Estimate est;
};

// nullopt when the change is not valid for this model (e.g. a precision its role refuses).
std::optional<Estimate> try_estimate(const Job& job, const Runtime& rt);
bool fits(const Estimate& e);
bool runs(const Estimate& e);

// Tries candidate jobs in order (least reduction first) and keeps the first that fits, or the one
// with the lowest peak when none does.
std::optional<Priced> first_fitting(const std::vector<Job>& candidates, const Runtime& rt);
// Largest value in [lo, hi] (stepping by `step` from lo) whose job `make(value)` fits; the peak
// grows with the value.
std::optional<Priced> largest_fitting(int lo, int hi, int step, const Runtime& rt, const std::function<Job(int)>& make);
// Smallest number of swapped blocks (up to `blocks`) that fits.
std::optional<Priced> fewest_blocks(const Job& job, int blocks, const Runtime& rt);

// Exact canonical-name lookup (the planner only sees canonical names; find_precision's alias search
// would normalise strings on every call); falls back to find_precision. Models: find_model_of
// (estimate/job_models.hpp), resolved once per job.
const PrecisionInfo* precision_named(const std::string& name);
// Bits per weight of a component as it will load ("" = the catalog's default precision).
double bits_of(const Component& c);

}  // namespace headroom::plan_search
