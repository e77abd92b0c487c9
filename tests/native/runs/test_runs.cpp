// The history reader: runs from recorder events, and the lines a killed or foreign writer leaves.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/runs/runs.hpp"

using nlohmann::json;
namespace runs = headroom::runs;

namespace {

constexpr std::uint64_t kGiB = 1024ull * 1024 * 1024;

std::string line(json e) {
  e["v"] = 1;
  return e.dump() + "\n";
}

// One decode run as the recorder writes it: start, prediction, a loader and a decoder node, a sample, end.
std::string decode_run(const std::string& id, double t0, bool with_end) {
  json prediction = {{"stages", {{{"name", "vae_decode"}, {"peak_bytes", 3 * kGiB}, {"min_bytes", kGiB},
                                  {"streamed_bytes", {{"vae", 7}, {"other", 5}}}}}},
                     {"host_ram_bytes", 5 * kGiB},
                     {"node_stages", {{"8", "vae_decode"}}},
                     {"job", {{"vae", {{"file", "sub/dir/vae.safetensors"}}}}}};
  std::string s = line({{"ev", "start"}, {"prompt_id", id}, {"t", t0},
                        {"runtime", {{"loader", "cpu"}, {"device", "cpu"}, {"vram_total_bytes", nullptr}}},
                        {"ram_total_bytes", 64 * kGiB}});
  s += line({{"ev", "predict"}, {"prompt_id", id}, {"t", t0}, {"prediction", prediction}});
  s += line({{"ev", "node_start"}, {"prompt_id", id}, {"t", t0 + 0.1}, {"id", "4"}, {"type", "VAELoader"}});
  s += line({{"ev", "node"}, {"prompt_id", id}, {"t", t0 + 0.5}, {"id", "4"}, {"type", "VAELoader"}, {"wall_s", 0.4},
             {"rss_bytes", 2 * kGiB}, {"ram_available_bytes", 40 * kGiB}, {"swap_used_bytes", 0}});
  s += line({{"ev", "node_start"}, {"prompt_id", id}, {"t", t0 + 0.5}, {"id", "8"}, {"type", "VAEDecode"}});
  s += line({{"ev", "sample"}, {"prompt_id", id}, {"t", t0 + 1.0}, {"rss_bytes", 3 * kGiB}, {"vram_bytes", nullptr},
             {"ram_available_bytes", 2 * kGiB}});
  if (!with_end) return s;
  s += line({{"ev", "node"}, {"prompt_id", id}, {"t", t0 + 2.0}, {"id", "8"}, {"type", "VAEDecode"}, {"wall_s", 1.5},
             {"peak_reserved_bytes", 2 * kGiB + 5}, {"peak_allocated_bytes", kGiB}, {"rss_bytes", 4 * kGiB},
             {"ram_available_bytes", 30 * kGiB}});
  s += line({{"ev", "end"}, {"prompt_id", id}, {"t", t0 + 2.1}, {"outcome", "ok"}});
  return s;
}

const json& stage(const json& run, const std::string& name) {
  for (const auto& s : run["stages"])
    if (s["name"] == name) return s;
  FAIL("no stage " << name << " in " << run["stages"].dump());
  static json none;
  return none;
}

}  // namespace

TEST_CASE("a recorded run has its stages with predicted and measured figures", "[runs]") {
  json r = runs::parse_history(decode_run("p1", 1000, true), {});
  REQUIRE(r["v"] == 1);
  REQUIRE(r["runs"].size() == 1);
  const json& run = r["runs"][0];
  CHECK(run["prompt_id"] == "p1");
  CHECK(run["outcome"] == "ok");
  CHECK(run["ended"].get<double>() == Approx(1002.1));
  CHECK(run["runtime"]["loader"] == "cpu");
  CHECK(run["ram_total_bytes"] == 64 * kGiB);  // what the next start's explanation sets RAM free against
  const json& decode = stage(run, "vae_decode");
  CHECK(decode["predicted_bytes"] == 3 * kGiB);
  CHECK(decode["predicted_min_bytes"] == kGiB);
  CHECK(decode["predicted_host_bytes"] == 5 * kGiB);
  CHECK(decode["predicted_streamed_bytes"] == 12);  // per model in the estimate, their sum per stage
  CHECK(decode["measured_bytes"] == 2 * kGiB + 5);
  CHECK(decode["measured_allocated_bytes"] == kGiB);
  CHECK(decode["rss_bytes"] == 4 * kGiB);
  CHECK(decode["model"] == "vae.safetensors");  // file names only, whatever the line held
  CHECK(decode["nodes"][0]["type"] == "VAEDecode");
  // The loader runs no estimator stage: filed under "other", with no prediction beside it.
  const json& other = stage(run, "other");
  CHECK(other["predicted_bytes"].is_null());
  CHECK(other["measured_bytes"].is_null());
  CHECK(other["rss_bytes"] == 2 * kGiB);
  CHECK(run["timeline"].size() == 3);
  CHECK(run["timeline"][1]["stage"] == "vae_decode");
  CHECK(r["skipped_lines"] == 0);
}

TEST_CASE("runs come newest first and the limit keeps the newest", "[runs]") {
  json r = runs::parse_history(decode_run("old", 1000, true) + decode_run("new", 2000, true) +
                                   decode_run("mid", 1500, true), {2, ""});
  REQUIRE(r["runs"].size() == 2);
  CHECK(r["runs"][0]["prompt_id"] == "new");
  CHECK(r["runs"][1]["prompt_id"] == "mid");
}

TEST_CASE("a killed run is unfinished with its last stage, its RAM figures and the likely cause", "[runs]") {
  json r = runs::parse_history(decode_run("killed", 1000, false), {});
  const json& run = r["runs"][0];
  CHECK(run["outcome"] == "unfinished");
  CHECK(run["ended"].is_null());
  CHECK_FALSE(run["active"].get<bool>());
  const json& u = run["unfinished"];
  CHECK(u["stage"] == "vae_decode");
  CHECK(u["node"]["type"] == "VAEDecode");
  CHECK(u["rss_bytes"] == 3 * kGiB);
  CHECK(u["ram_available_bytes"] == 2 * kGiB);
  // 2 GiB of 64 GiB available is under the 5% line of models.json: the OS ended it for RAM.
  CHECK(u["likely_cause"] == "host_ram_exhausted");
  CHECK(run["message"].get<std::string>().find("OOM killer") != std::string::npos);
  CHECK(run["message"].get<std::string>().find("VAEDecode #8") != std::string::npos);
}

TEST_CASE("a run that ends with plenty of RAM free has no cause made up for it", "[runs]") {
  std::string h = decode_run("closed", 1000, false);
  h += line({{"ev", "sample"}, {"prompt_id", "closed"}, {"t", 1001.5}, {"rss_bytes", 3 * kGiB},
             {"ram_available_bytes", 50 * kGiB}});
  const json u = runs::parse_history(h, {})["runs"][0]["unfinished"];
  CHECK(u["likely_cause"] == "unknown");
  CHECK(u["ram_available_bytes"] == 50 * kGiB);
}

TEST_CASE("the run this process executes now is active, not killed", "[runs]") {
  json run = runs::parse_history(decode_run("now", 1000, false), {20, "now"})["runs"][0];
  CHECK(run["outcome"] == "unfinished");
  CHECK(run["active"].get<bool>());
  CHECK(run["unfinished"]["likely_cause"].is_null());
}

TEST_CASE("damaged, huge and newer-version lines are skipped and counted, the rest still read", "[runs]") {
  std::string h = decode_run("a", 1000, true);
  h += "{\"v\":1,\"ev\":\"node\",\"prompt_id\":\"a\",\"t\":10";  // cut by a kill mid-line
  h += "\n";
  h += "not json at all\n";
  h += "[1,2,3]\n";
  h += line({{"ev", "start"}, {"t", 5}});                                 // no prompt_id
  h += line({{"ev", "end"}, {"prompt_id", "a"}, {"t", 5}, {"outcome", "exploded"}});
  h += "{\"v\":2,\"ev\":\"start\",\"prompt_id\":\"future\",\"t\":3000}\n";
  h += "{\"v\":1,\"pad\":\"" + std::string(runs::kMaxLineBytes + 10, 'x') + "\"}\n";
  h += std::string(64, '[') + "\n";
  h += decode_run("b", 1100, true);
  json r = runs::parse_history(h, {});
  REQUIRE(r["runs"].size() == 2);
  CHECK(r["runs"][0]["prompt_id"] == "b");
  CHECK(r["runs"][1]["outcome"] == "ok");  // the bad end with an unknown outcome did not override it
  CHECK(r["skipped"]["newer_version"] == 1);
  CHECK(r["skipped"]["too_long"] == 1);
  CHECK(r["skipped"]["damaged"] == 6);
  CHECK(r["skipped_lines"] == 8);
}

TEST_CASE("on the CPU a stage's measurement is the RAM its nodes added over where they started", "[runs]") {
  std::string h = line({{"ev", "start"}, {"prompt_id", "c"}, {"t", 1}, {"runtime", {{"loader", "cpu"}, {"device", "cpu"}}}});
  h += line({{"ev", "predict"}, {"prompt_id", "c"}, {"t", 1},
             {"prediction", {{"node_stages", {{"2", "vae_decode"}, {"3", "vae_decode"}}}}}});
  // Two decoder nodes of one stage: the one that added the most is the stage's figure, not their sum; a node
  // whose peak is below its start (a reset that failed between) adds nothing rather than wrapping around.
  h += line({{"ev", "node"}, {"prompt_id", "c"}, {"t", 2}, {"id", "2"}, {"type", "VAEDecode"},
             {"rss_start_bytes", 3 * kGiB}, {"peak_rss_bytes", 4 * kGiB + 7}});
  h += line({{"ev", "node"}, {"prompt_id", "c"}, {"t", 3}, {"id", "3"}, {"type", "VAEDecode"},
             {"rss_start_bytes", 5 * kGiB}, {"peak_rss_bytes", 5 * kGiB + 3}});
  h += line({{"ev", "node"}, {"prompt_id", "c"}, {"t", 4}, {"id", "9"}, {"type", "SaveImage"},
             {"rss_start_bytes", 6 * kGiB}, {"peak_rss_bytes", kGiB}});
  const json run = runs::parse_history(h, {})["runs"][0];
  const json& decode = stage(run, "vae_decode");
  CHECK(decode["measured_host_added_bytes"] == kGiB + 7);
  CHECK(decode["measured_host_peak_bytes"] == 5 * kGiB + 3);
  CHECK(decode["measured_bytes"].is_null());  // no device figure: calibration learns from devices only
  CHECK(stage(run, "other")["measured_host_added_bytes"] == 0);
  // Without both figures nothing is made up.
  CHECK(runs::parse_history(decode_run("g", 1, true), {})["runs"][0]["stages"][0]["measured_host_added_bytes"].is_null());
  // The table says which figure it shows: a CPU run's column is the RAM the stage added.
  const std::string path = (std::filesystem::temp_directory_path() / ("hr_cpu_runs_" + std::to_string(getpid()) + ".jsonl")).string();
  std::ofstream(path) << h;
  CliRun table = run_cli("runs --history '" + path + "'", true);
  std::filesystem::remove(path);
  CHECK(table.code == 0);
  CHECK(table.out.find("RAM +1.00 GiB") != std::string::npos);
}

TEST_CASE("figures that are not byte counts are null, never a wrong number", "[runs]") {
  std::string h = line({{"ev", "start"}, {"prompt_id", "x"}, {"t", 1}});
  h += line({{"ev", "node"}, {"prompt_id", "x"}, {"t", 2}, {"id", "1"}, {"type", "T"}, {"wall_s", "slow"},
             {"peak_reserved_bytes", -5}, {"rss_bytes", 1.5}, {"ram_available_bytes", "lots"}});
  const json s = runs::parse_history(h, {})["runs"][0]["stages"][0];
  CHECK(s["wall_s"] == 0.0);
  CHECK(s["measured_bytes"].is_null());
  CHECK(s["rss_bytes"].is_null());
  CHECK(s["ram_available_bytes"].is_null());
}

TEST_CASE("the api reads the rotated half first and calls a missing history no runs", "[runs]") {
  auto dir = std::filesystem::temp_directory_path() / ("hr_runs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "runs.jsonl").string();
  CHECK(runs::rotated_path(path) == (dir / "runs.1.jsonl").string());
  json none = headroom::api::runs({{"history", path}});
  CHECK_FALSE(none["history_found"].get<bool>());
  CHECK(none["runs"].empty());
  {
    std::string whole = decode_run("spans", 1000, true);
    std::size_t cut = whole.find("\"ev\":\"node_start\"");
    cut = whole.rfind('\n', cut) + 1;
    std::ofstream(runs::rotated_path(path)) << whole.substr(0, cut);
    std::ofstream(path) << whole.substr(cut);
  }
  json r = headroom::api::runs({{"history", path}, {"limit", 5}});
  CHECK(r["history_found"].get<bool>());
  REQUIRE(r["runs"].size() == 1);
  CHECK(r["runs"][0]["outcome"] == "ok");
  CHECK(r["runs"][0]["stages"].size() == 2);
  CHECK_THROWS_AS(headroom::api::runs({{"history", path}, {"limit", 201}}), headroom::InputError);
  CHECK_THROWS_AS(headroom::api::runs(json::object()), headroom::InputError);

  CliRun table = run_cli("runs --history '" + path + "'", true);
  CHECK(table.code == 0);
  CHECK(table.out.find("vae_decode") != std::string::npos);
  CHECK(table.out.find("3.00 GiB") != std::string::npos);
  CliRun as_json = run_cli("runs --json --history '" + path + "'", false);
  CHECK(as_json.code == 0);
  CHECK(json::parse(as_json.out)["runs"][0]["prompt_id"] == "spans");
  CliRun missing = run_cli("runs --history '" + (dir / "nothing.jsonl").string() + "'", true);
  CHECK(missing.code == 2);
  CHECK(missing.out.find("--history") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the plan says which node runs which stage, and sizes a VAE decode without a diffusion model", "[runs]") {
  const json workflow = {
      {"1", {{"class_type", "EmptySD3LatentImage"}, {"inputs", {{"width", 512}, {"height", 512}, {"batch_size", 1}}}}},
      {"2", {{"class_type", "VAELoader"}, {"inputs", {{"vae_name", "ae.safetensors"}}}}},
      {"3", {{"class_type", "VAEDecode"}, {"inputs", {{"samples", {"1", 0}}, {"vae", {"2", 0}}}}}},
      {"4", {{"class_type", "PreviewImage"}, {"inputs", {{"images", {"3", 0}}}}}}};
  json plan = headroom::api::plan({{"workflow", workflow}});
  CHECK(plan["verdict"] == "unknown");  // still no verdict without the diffusion model
  CHECK(plan["workflow"]["node_stages"] == json{{"3", "vae_decode"}});
  REQUIRE(plan["sized_stages"].size() == 1);
  CHECK(plan["sized_stages"][0]["name"] == "vae_decode");
  CHECK(plan["sized_stages"][0]["peak_bytes"].get<std::uint64_t>() > 0);
  // A larger image needs more for its decode: the figure follows the workflow's size.
  json larger = workflow;
  larger["1"]["inputs"]["width"] = 1024;
  larger["1"]["inputs"]["height"] = 1024;
  CHECK(headroom::api::plan({{"workflow", larger}})["sized_stages"][0]["peak_bytes"].get<std::uint64_t>() >
        plan["sized_stages"][0]["peak_bytes"].get<std::uint64_t>());
}
