#pragma once
// The run recorder's history (JSON lines written by nodes/recorder, one event per line) -> the recorded
// runs, newest first. The history is written by a process that may be killed at any byte, edited by hand
// or written by a newer Headroom: a line that cannot be read is counted and skipped, never a reason to
// refuse the rest. The event and run formats are docs/runs.md's.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace headroom::runs {

using nlohmann::json;

// The history format this reader understands; a line with a higher "v" is skipped as newer.
constexpr int kHistoryVersion = 1;
// A recorder line is well under 8 kB (a prediction of a large workflow's stages and node stages); a
// longer one is not ours, and skipping it keeps a damaged file from costing memory.
constexpr std::size_t kMaxLineBytes = 1024 * 1024;
constexpr std::size_t kMaxRuns = 200;
constexpr std::size_t kDefaultRuns = 20;
// A run's timeline is thinned to at most this many points (the sampler writes about one a second).
constexpr std::size_t kMaxTimelinePoints = 1000;

struct Options {
  std::size_t limit = kDefaultRuns;
  // The run this process is executing now, if any: without an end event it is "active", not killed.
  std::string active_prompt_id;
};

// {"v": 1, "runs": [...], "skipped_lines": N, "skipped": {"damaged": n, "too_long": n, "newer_version": n}}
json parse_history(const std::string& text, const Options& options);

// The history file's older half after rotation: "runs.jsonl" -> "runs.1.jsonl".
std::string rotated_path(const std::string& path);

}  // namespace headroom::runs
