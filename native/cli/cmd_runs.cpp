// `headroom runs`: the run recorder's history, read by the core (api::runs), as a table or --json.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {
namespace {

using nlohmann::json;

// ComfyUI's user directory is <ComfyUI>/user unless --user-directory moves it: from the ComfyUI folder
// the default finds the history.
const char* kDefaultHistory = "user/headroom/runs.jsonl";

const char* kRunsHelp =
    "usage: headroom runs [--history FILE] [--limit N] [--json]\n"
    "The runs ComfyUI recorded with Headroom's run recorder, newest first: per stage the predicted and the\n"
    "measured peak (device memory reserved; on the CPU the RAM the stage added), wall time and outcome.\n"
    "A run that has no end (the process was killed) is 'unfinished', with the stage it was in, its RAM\n"
    "figures and the likely cause. Damaged, overlong or newer-version lines are skipped and counted.\n"
    "  --history  the history file (default user/headroom/runs.jsonl, from the ComfyUI folder); its rotated\n"
    "             half runs.1.jsonl beside it is read too\n"
    "  --limit    how many runs (1 to 200, default 20)\n"
    "Exit status: 0 done, 2 bad input (no history file there).\n";

std::string size_or_dash(const json& v) { return v.is_number() ? format_bytes(v.get<std::uint64_t>()) : "-"; }

// The device's peak where there is a device; on the CPU, the RAM the stage added over where it started.
std::string measured_text(const json& stage) {
  if (stage["measured_bytes"].is_number()) return size_or_dash(stage["measured_bytes"]);
  const json& added = stage["measured_host_added_bytes"];
  return added.is_number() ? "RAM +" + format_bytes(added.get<std::uint64_t>()) : "-";
}

void print_run(const json& r) {
  std::printf("%s  %s  %s%s\n", r["prompt_id"].get<std::string>().c_str(), r["outcome"].get<std::string>().c_str(),
              r["runtime"]["device"].is_string() ? r["runtime"]["device"].get<std::string>().c_str() : "device unknown",
              r["active"].get<bool>() ? "  (running now)" : "");
  if (r["message"].is_string()) std::cout << "  " << r["message"].get<std::string>() << "\n";
  if (r["stages"].empty()) return;
  std::printf("  %-20s %9s %12s %15s %12s %12s\n", "stage", "wall", "predicted", "measured", "process RAM", "RAM free");
  for (const auto& s : r["stages"])
    std::printf("  %-20s %8.2fs %12s %15s %12s %12s\n", s["name"].get<std::string>().c_str(), s["wall_s"].get<double>(),
                size_or_dash(s["predicted_bytes"]).c_str(), measured_text(s).c_str(),
                size_or_dash(s["rss_bytes"]).c_str(), size_or_dash(s["ram_available_bytes"]).c_str());
}

}  // namespace

int cmd_runs(const Argv& argv) {
  for (const auto& a : argv)
    if (a == "--help" || a == "-h") {
      std::cout << kRunsHelp;
      return kExitOk;
    }
  Args a(argv, {"history", "limit"}, {"json"});
  if (!a.positionals().empty()) throw InputError(a.positionals()[0], "unexpected argument; see headroom runs --help");
  json request = {{"history", a.get_or("history", kDefaultHistory)},
                  {"limit", a.get_int("limit", 20, 1, 200)}};
  json r = api::runs(request);
  if (!r["history_found"].get<bool>())
    throw InputError("--history", "no history file at '" + request["history"].get<std::string>() +
                                      "' (ComfyUI writes <its user directory>/headroom/runs.jsonl; give that path)");
  if (a.has("json")) {
    std::cout << r.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (r["runs"].empty()) std::cout << "No recorded runs.\n";
  for (const auto& run : r["runs"]) print_run(run);
  if (r["skipped_lines"].get<std::size_t>() > 0)
    std::cout << "(" << r["skipped_lines"].get<std::size_t>() << " history lines skipped: damaged, too long or "
              << "from a newer Headroom)\n";
  for (const auto& f : r["skipped_files"])
    std::cout << "(skipped " << f["file"].get<std::string>() << ": " << f["reason"].get<std::string>() << ")\n";
  return kExitOk;
}

}  // namespace headroom::cli
