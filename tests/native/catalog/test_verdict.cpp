// The verdicts are spelled once (core/catalog/verdict.cpp): the catalog lists them, and what the
// estimator, the planner and the LLM model emit is one of those spellings.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/catalog/verdict.hpp"

using namespace headroom;
using nlohmann::json;

TEST_CASE("the catalog lists every verdict once, in enum order, with its flags", "[verdict]") {
  const json v = api::catalog()["verdicts"];
  REQUIRE(v.size() == 5);
  const Verdict order[] = {Verdict::Fits, Verdict::Tight, Verdict::Streams, Verdict::DoesNotFit, Verdict::Unknown};
  std::set<std::string> ids, texts;
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(v[i]["text"] == spelling(order[i]));
    ids.insert(v[i]["id"].get<std::string>());
    texts.insert(v[i]["text"].get<std::string>());
  }
  CHECK(ids.size() == 5);
  CHECK(texts.size() == 5);
  // Only the first completes with room; the first three complete; the last was not sized.
  CHECK(v[0]["fits"] == true);
  CHECK(v[1]["fits"] == false);
  CHECK(v[1]["runs"] == true);
  CHECK(v[2]["fits"] == false);
  CHECK(v[2]["runs"] == true);
  CHECK(v[3]["runs"] == false);
  CHECK(v[3]["sized"] == true);
  CHECK(v[4]["sized"] == false);
}

TEST_CASE("the estimator's verdicts and stage modes are the catalog's spellings", "[verdict]") {
  const json catalog = api::catalog();
  std::set<std::string> texts;
  for (const auto& row : catalog["verdicts"]) texts.insert(row["text"].get<std::string>());
  const std::string model = catalog["models"][0]["name"];
  std::set<std::string> seen;
  // From a card far too small to one far too large: every sized verdict shows up on the way.
  for (const char* runtime : {"legacy", "dynamic"})
    for (double gib : {0.5, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 80.0, 141.0}) {
      json r = api::estimate({{"model", model}, {"vram", gib}, {"allow_lowvram", gib > 1}, {"runtime", runtime}});
      INFO(runtime << ", " << gib << " GiB: " << r["verdict"]);
      CHECK(texts.count(r["verdict"].get<std::string>()) == 1);
      seen.insert(r["verdict"].get<std::string>());
      for (const auto& s : r["stages"])
        if (s["mode"] != "full" && s["mode"] != "partial" && s["mode"] != "tiled_fallback" &&
            s["mode"] != spelling(Verdict::Streams))
          CHECK(s["mode"] == spelling(Verdict::DoesNotFit));
    }
  CHECK(seen.count(spelling(Verdict::Fits)) == 1);
  CHECK(seen.count(spelling(Verdict::Streams)) == 1);
  CHECK(seen.count(spelling(Verdict::Tight)) == 1);
  CHECK(seen.count(spelling(Verdict::DoesNotFit)) == 1);
  json unknown = api::plan({{"workflow", {{"nodes", json::array()}, {"links", json::array()}}}});
  CHECK(unknown["verdict"] == spelling(Verdict::Unknown));
  json llm = api::llm({{"params", 8}, {"layers", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"context", 1000},
                       {"vram", 1}});
  CHECK(llm["verdict"] == spelling(Verdict::DoesNotFit));
}
