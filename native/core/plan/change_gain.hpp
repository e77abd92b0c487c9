#pragma once
// Judging a change against the run before it: what it needs, whether it helps, and what it saves on
// the stage it changes.
#include <cstdint>
#include <string>

#include "core/estimate/estimator.hpp"

namespace headroom {

// What a change is measured against. A run that does not fit must lower what it really needs (its own
// peak, at least the required bytes); one that runs but streams or loads partially must lower what it
// needs with every model resident. Both measures leave out models cached from earlier stages.
enum class NeedBasis { Runs, FullyResident };
NeedBasis need_basis(const Estimate& unchanged);
std::uint64_t need_bytes(const Estimate& e, NeedBasis basis);
std::uint64_t need_bytes(const Estimate& e);  // with need_basis(e)
std::uint64_t stage_need_bytes(const Stage& s, NeedBasis basis);

// fits 0, streams and tight 1 (it runs, slower), does not fit 2.
int verdict_rank(std::optional<Verdict> verdict);

// What a change saves where it acts: the largest drop of one stage's need, and that stage. The run's
// need can fall by less (another stage then sets it), which is what new_peak_bytes shows.
struct StageSaving {
  std::uint64_t bytes = 0;
  std::string stage;
};
StageSaving stage_saving(const Estimate& before, const Estimate& after, NeedBasis basis);

// A change is worth listing when it makes the verdict better, or keeps it and neither raises the
// run's need nor leaves every stage that limits the run (one that does not fit, streams, loads
// partially, or sets the need) as it was: such a stage then needs less or, in a run that runs, runs
// faster.
bool improves(const Estimate& before, const Estimate& after, NeedBasis basis);

}  // namespace headroom
