// The OOM diagnosis words live in native/data/oom_fixes.json (issue 9, item 5): every text the rules use
// must be there, every text there must be used, and a missing one fails naming the file and the key.
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/oom/oom_diagnose.hpp"

using nlohmann::json;

TEST_CASE("oom_fixes.json holds exactly the texts the rules use", "[oom][texts]") {
  const json& doc = headroom::data_file("oom_fixes.json");
  CHECK_NOTHROW(headroom::oom::check_texts(doc));
  json missing = doc;
  missing["fixes"].erase("expandable_segments");
  CHECK_THROWS_WITH(headroom::oom::check_texts(missing),
                    Catch::Contains("oom_fixes.json") && Catch::Contains("missing the text 'expandable_segments'"));
  json extra = doc;
  extra["diagnoses"]["fragmentaton"] = "typo";
  CHECK_THROWS_WITH(headroom::oom::check_texts(extra), Catch::Contains("'fragmentaton'"));
  json wrong = doc;
  wrong["fixes"]["smaller_batch"] = 3;
  CHECK_THROWS_WITH(headroom::oom::check_texts(wrong), Catch::Contains("fixes.smaller_batch: expected a text"));
}

TEST_CASE("a fix's id is its text key up to the variant", "[oom][texts]") {
  // Two wordings of one fix keep one id: ComfyUI's reserve flag with and without partial loading.
  const json& fixes = headroom::data_file("oom_fixes.json")["fixes"];
  CHECK(fixes.contains("comfy_reserve_vram"));
  CHECK(fixes.contains("comfy_reserve_vram.partial"));
}
