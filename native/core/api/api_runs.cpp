// api::runs: the run recorder's history files -> the recorded runs (core/runs/runs.hpp).
#include <filesystem>

#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/request_fields.hpp"
#include "core/runs/runs.hpp"

namespace headroom::api {
namespace {

// The recorder rotates at 4 MiB, so a history file many times that size was not written by it; reading
// it would cost the memory of a file nobody meant as history.
constexpr std::uint64_t kMaxHistoryFileBytes = 64ull * 1024 * 1024;

}  // namespace

const request::Fields& runs_fields() {
  static const request::Fields f = {
      {"history", request::Kind::String, "the history file (<ComfyUI user directory>/headroom/runs.jsonl)", 0, 0, {}, true},
      {"limit", request::Kind::Int, "how many runs, newest first", 1, static_cast<double>(runs::kMaxRuns)},
      {"active_prompt_id", request::Kind::String, "the prompt this process is running now (not a killed run)"}};
  return f;
}

json runs(const json& body) {
  const request::Request request(body, "runs", runs_fields());
  const std::string path = request.text("history");
  runs::Options options;
  options.limit = static_cast<std::size_t>(request.integer_or("limit", static_cast<std::int64_t>(runs::kDefaultRuns)));
  options.active_prompt_id = request.text_or("active_prompt_id", "");
  std::string text;
  json skipped_files = json::array();
  bool found = false;
  // Older half first, so the events of a run that spans the rotation come in the order they were written.
  for (const std::string& file : {runs::rotated_path(path), path}) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::u8path(file), ec)) continue;
    found = true;
    try {
      std::string part = read_text_file(file, kMaxHistoryFileBytes);
      if (!part.empty() && part.back() != '\n') part += '\n';  // a line cut by a kill stays one line
      text += part;
    } catch (const Error& e) {
      skipped_files.push_back({{"file", path_file_name(file)}, {"reason", e.what()}});
    }
  }
  json out = runs::parse_history(text, options);
  out["history_found"] = found;
  out["skipped_files"] = std::move(skipped_files);
  return out;
}

}  // namespace headroom::api
