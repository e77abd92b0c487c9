// Pricing candidates with the estimator itself (see change_search.hpp).
#include "core/plan/change_search.hpp"
#include "core/catalog/verdict.hpp"

#include <unordered_map>

#include "core/base/error.hpp"

namespace headroom::plan_search {

std::optional<Estimate> try_estimate(const Job& job, const Runtime& rt) {
  try {
    return estimate(job, rt);
  } catch (const Error&) {
    return std::nullopt;  // the change is not valid for this model (e.g. a precision its role refuses)
  }
}

bool fits(const Estimate& e) { return e.verdict == Verdict::Fits; }
bool runs(const Estimate& e) { return e.verdict != Verdict::DoesNotFit; }

const PrecisionInfo* precision_named(const std::string& name) {
  static const std::unordered_map<std::string, const PrecisionInfo*> index = [] {
    std::unordered_map<std::string, const PrecisionInfo*> i;
    for (const auto& p : catalog_data().precisions) i[p.name] = &p;
    return i;
  }();
  auto it = index.find(name);
  return it != index.end() ? it->second : find_precision(name);
}

double bits_of(const Component& c) {
  std::string p = c.precision;
  if (p.empty())
    if (const ModelInfo* m = find_model_of(c)) p = m->default_precision;
  const PrecisionInfo* info = precision_named(p);
  return info ? info->bits_per_weight() : 16.0;
}

std::optional<Priced> first_fitting(const std::vector<Job>& candidates, const Runtime& rt) {
  std::optional<Priced> best;
  // The strongest reduction first: when even it does not fit, the milder ones cannot (the peak grows
  // with tile size and resolution), and one estimate settles it.
  if (candidates.size() > 1) {
    auto strongest = try_estimate(candidates.back(), rt);
    if (strongest && !fits(*strongest)) {
      // None fits; if the strongest at least runs (partial loading), the mildest one that runs, as
      // largest_fitting does: reducing more would cost quality without making it fit.
      if (!runs(*strongest)) return Priced{candidates.back(), std::move(*strongest)};
      for (std::size_t i = 0; i + 1 < candidates.size(); ++i)
        if (auto e = try_estimate(candidates[i], rt); e && runs(*e)) return Priced{candidates[i], std::move(*e)};
      return Priced{candidates.back(), std::move(*strongest)};
    }
  }
  for (const auto& j : candidates) {
    auto e = try_estimate(j, rt);
    if (!e) continue;
    if (fits(*e)) return Priced{j, std::move(*e)};
    if (!best || e->peak_bytes < best->est.peak_bytes) best = Priced{j, std::move(*e)};
  }
  return best;
}

// Binary search over the index.
std::optional<Priced> largest_fitting(int lo, int hi, int step, const Runtime& rt, const std::function<Job(int)>& make) {
  if (hi < lo) return std::nullopt;
  int n = (hi - lo) / step;  // values lo + k*step, k = 0..n
  auto at = [&](int k) { return lo + k * step; };
  auto low = try_estimate(make(at(0)), rt);
  if (!low) return std::nullopt;
  // When even the strongest reduction does not fit but lets the job run (partial loading), the
  // least reduction that still runs: cutting further would cost content without making it fit.
  const bool want_fit = fits(*low);
  if (!want_fit && !runs(*low)) return Priced{make(at(0)), *low};
  auto ok = [&](const Estimate& e) { return want_fit ? fits(e) : runs(e); };
  int good = 0, bad = n + 1;
  std::optional<Estimate> good_est = low;
  while (bad - good > 1) {
    int mid = (good + bad) / 2;
    auto e = try_estimate(make(at(mid)), rt);
    if (e && ok(*e)) {
      good = mid;
      good_est = std::move(e);
    } else {
      bad = mid;
    }
  }
  return Priced{make(at(good)), std::move(*good_est)};
}

std::optional<Priced> fewest_blocks(const Job& job, int blocks, const Runtime& rt) {
  auto make = [&](int n) {
    Job j = job;
    j.blocks_swapped = n;
    return j;
  };
  auto most = try_estimate(make(blocks), rt);
  if (!most) return std::nullopt;
  if (!fits(*most)) return Priced{make(blocks), *most};
  int bad = job.blocks_swapped, good = blocks;
  Estimate good_est = *most;
  while (good - bad > 1) {
    int mid = (good + bad) / 2;
    auto e = try_estimate(make(mid), rt);
    if (e && fits(*e)) {
      good = mid;
      good_est = *e;
    } else {
      bad = mid;
    }
  }
  return Priced{make(good), good_est};
}

}  // namespace headroom::plan_search
