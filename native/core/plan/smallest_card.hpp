#pragma once
// The smallest card a job runs on unchanged, and the smallest it runs on fully resident: whole,
// empty catalog cards (gpus.json), and the request's own card when it is whole, so that neither can
// name a bigger card than one the same plan says runs it.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/estimate/estimator.hpp"

namespace headroom {

struct SmallestGpu {
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::optional<double> price_eur_per_hour;
  std::uint64_t peak_bytes = 0;
  std::optional<Verdict> verdict;  // the job's verdict on that card
  nlohmann::json to_json() const;
};

struct SmallestCards {
  std::optional<SmallestGpu> runs;      // runs unchanged (it may stream or load partially: slower)
  std::optional<SmallestGpu> resident;  // runs with every model fully resident ("fits")
};

// `here` is the job's estimate on `rt`, the request's card.
SmallestCards smallest_cards(const Job& job, const Runtime& rt, const Estimate& here);

}  // namespace headroom
