// The OOM toast's preset is one core request (api::suggest_preset): every catalog preset applied as
// apply_preset applies it, ranked by plan/preset_rank. And a workflow whose model file is broken gets
// no "fits" from a preset either.
#include <filesystem>
#include <fstream>
#include <set>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/catalog/presets.hpp"
#include "core/plan/changes.hpp"
#include "core/plan/preset_rank.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

PresetOutcome outcome(const std::string& name, bool changes, Verdict after, std::uint64_t peak, bool own = false) {
  return {name, own, changes, after, peak};
}

std::vector<std::string> names(const std::vector<PresetOutcome>& o, const PresetRanking& r) {
  std::vector<std::string> out;
  for (std::size_t i : r.order) out.push_back(o[i].name);
  return out;
}

json load_workflow(const std::string& rel) {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/" + rel);
  return json::parse(in);
}

bool runs(const json& side) { return verdict_runs(verdict_from_id(side["verdict_id"].get<std::string>(), "verdict_id")); }

}  // namespace

TEST_CASE("rank_presets: the own card's fit first when it runs, then catalog order, then the lowest peak",
          "[presets][plan]") {
  SECTION("the own fit that runs beats an earlier preset that runs") {
    const std::vector<PresetOutcome> o = {outcome("a", true, Verdict::Fits, 5), outcome("b", true, Verdict::DoesNotFit, 3),
                                          outcome("own", true, Verdict::Tight, 9, true)};
    const PresetRanking r = rank_presets(o);
    CHECK(names(o, r) == std::vector<std::string>{"own", "a", "b"});
    CHECK(r.pick == PresetPick::OwnFit);
  }
  SECTION("an own fit that does not run is ranked by its peak like the rest") {
    const std::vector<PresetOutcome> o = {outcome("a", true, Verdict::DoesNotFit, 7), outcome("b", true, Verdict::Streams, 9),
                                          outcome("own", true, Verdict::DoesNotFit, 6, true), outcome("c", true, Verdict::Fits, 2)};
    const PresetRanking r = rank_presets(o);
    CHECK(names(o, r) == std::vector<std::string>{"b", "c", "own", "a"});
    CHECK(r.pick == PresetPick::FirstThatRuns);
  }
  SECTION("nothing runs: the lowest peak, catalog order breaking a tie") {
    const std::vector<PresetOutcome> o = {outcome("a", true, Verdict::DoesNotFit, 8), outcome("b", true, Verdict::DoesNotFit, 4),
                                          outcome("c", true, Verdict::DoesNotFit, 4)};
    const PresetRanking r = rank_presets(o);
    CHECK(names(o, r) == std::vector<std::string>{"b", "c", "a"});
    CHECK(r.pick == PresetPick::LowestPeak);
  }
  SECTION("a preset that changes nothing or leaves no verdict is not ranked, however low its peak") {
    const std::vector<PresetOutcome> o = {outcome("same", false, Verdict::Fits, 1), outcome("unsized", true, Verdict::Unknown, 1),
                                          outcome("own", false, Verdict::Fits, 1, true), outcome("big", true, Verdict::DoesNotFit, 9)};
    const PresetRanking r = rank_presets(o);
    CHECK(names(o, r) == std::vector<std::string>{"big"});
    CHECK(r.pick == PresetPick::LowestPeak);
    CHECK_FALSE(rank_presets({o[0], o[1]}).pick.has_value());
    CHECK(rank_presets({}).order.empty());
  }
}

TEST_CASE("suggest_preset answers with apply_preset's own figures, ranked by the rule", "[presets][api]") {
  const json wf = load_workflow("workflows/wan2.2_ti2v_5b.json");
  for (const double gib : {8.0, 12.0, 24.0}) {
    const json card = {{"vram_bytes", static_cast<std::uint64_t>(gib * (1ull << 30))}};
    INFO(gib << " GiB");
    const json s = api::suggest_preset({{"workflow", wf}, {"vram_bytes", card["vram_bytes"]}});
    std::set<std::string> seen;
    for (const auto& e : s["ranked"]) {
      const json a = api::apply_preset({{"workflow", wf}, {"preset", e["preset"]}, {"vram_bytes", card["vram_bytes"]}});
      INFO(e["preset"]);
      CHECK(e["after"]["verdict_id"] == a["after"]["verdict_id"]);
      CHECK(e["after"]["peak_bytes"] == a["after"]["peak_bytes"]);
      CHECK(e["before"]["peak_bytes"] == a["before"]["peak_bytes"]);
      CHECK(e["changes"] == a["changes"]);
      CHECK_FALSE(e["changes"].empty());
      seen.insert(e["preset"].get<std::string>());
    }
    for (const auto& n : s["not_ranked"]) {
      CHECK_FALSE(n["reason"].get<std::string>().empty());
      seen.insert(n["preset"].get<std::string>());
    }
    CHECK(seen.size() == planner_preset_data().presets.size());
    if (s["ranked"].empty()) {
      CHECK(s["chosen"].is_null());
      continue;
    }
    const json& chosen = s["chosen"];
    CHECK(chosen["preset"] == s["ranked"][0]["preset"]);
    // The pick agrees with the ranked list: a preset that runs is first whenever one runs at all.
    bool any_runs = false;
    for (const auto& e : s["ranked"]) any_runs = any_runs || runs(e["after"]);
    CHECK(runs(chosen["after"]) == any_runs);
    CHECK(chosen["why"] == (!any_runs ? "lowest_peak" : chosen["preset"] == "fit this card" ? "own_fit" : "first_that_runs"));
  }
}

TEST_CASE("suggest_preset without a card leaves out the preset that needs one, saying why", "[presets][api]") {
  const json s = api::suggest_preset({{"workflow", load_workflow("workflows/wan2.2_ti2v_5b.json")}});
  bool named = false;
  for (const auto& n : s["not_ranked"])
    if (n["preset"] == "fit this card") named = n["reason"].get<std::string>().find("needs the card") != std::string::npos;
  CHECK(named);
  for (const auto& e : s["ranked"]) CHECK(e["preset"] != "fit this card");
}

TEST_CASE("a broken model file: no preset's after says fits, and none is suggested", "[presets][api][trust]") {
  testfiles::TempDir tmp;
  const std::string root = tmp.file("models");
  fs::create_directories(root + "/diffusion_models");
  // Wan 2.2 TI2V 5B in 16 bits (UNETLoader #37), on a card where it streams as it is.
  const json wf = load_workflow("workflows/wan2.2_ti2v_5b.json");
  const std::string file = "wan2.2_ti2v_5B_fp16.safetensors";
  const json card = {{"workflow", wf}, {"vram_bytes", 8ull << 30}, {"models_dir", root}};
  // By its name alone the file makes verdicts, and some preset changes something.
  json named = card;
  named.erase("models_dir");
  REQUIRE_FALSE(api::suggest_preset(named)["ranked"].empty());

  testfiles::write_file(root + "/diffusion_models/" + file, "");
  for (const auto& p : planner_preset_data().presets) {
    json req = card;
    req["preset"] = p.name;
    const json a = api::apply_preset(req);
    INFO(p.name);
    for (const char* side : {"before", "after", "target"}) {
      CHECK(a[side]["verdict_id"] == "unknown");
      CHECK_THAT(a[side]["verdict_reason"].get<std::string>(),
                 Catch::Contains("UNETLoader #37") && Catch::Contains(file));
    }
    CHECK(a["after"]["not_covered"]["kind"] == "file");
    CHECK(a["after"]["not_covered"]["file_problem"] == "empty");
    CHECK(a["plan"]["verdict_id"] == "unknown");
  }
  const json s = api::suggest_preset(card);
  CHECK(s["chosen"].is_null());
  CHECK(s["ranked"].empty());
  for (const auto& n : s["not_ranked"]) {
    INFO(n["preset"]);
    const std::string reason = n["reason"].get<std::string>();
    CHECK((reason.find(file) != std::string::npos || reason == "changes nothing in this workflow"));
  }
}
