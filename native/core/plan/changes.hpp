#pragma once
// The planner's change kinds as a registry: one function per presets.json "changes" kind, each
// applying its change with the least reduction that fits. presets.json is checked against it when
// the planner first reads it, so a kind in the data that no function prices fails loudly.
#include <map>
#include <optional>
#include <string>

#include "core/catalog/presets.hpp"
#include "core/plan/change_search.hpp"

namespace headroom {

struct ChangeContext {
  const Job& job;
  const Runtime& runtime;
  const ChangeSpec& spec;
  const SearchSpec& search;
};

// The changed job as priced, and what to tell the user; nullopt when the kind does not apply.
struct ChangeOutcome {
  plan_search::Priced priced;
  std::string what;
};

using ChangeFn = std::optional<ChangeOutcome> (*)(const ChangeContext&);

struct ChangeKind {
  ChangeFn apply = nullptr;
  bool needs_precision = false;  // its presets.json entry must name the target "precision"
  // Kinds of one group are alternatives (one file or weight_dtype of the diffusion model): the plan
  // may list each, but combines at most one. "" = combines with anything.
  const char* exclusive_group = "";
};

const std::map<std::string, ChangeKind, std::less<>>& change_kinds();

// preset_data(), checked once against change_kinds(): throws Error naming presets.json, the kind
// and the known kinds when the data has a kind without a function (or lacks a needed precision).
const PresetData& planner_preset_data();

}  // namespace headroom
