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

TEST_CASE("every fix says what it costs", "[oom][texts]") {
  // Issue 22: a lever without its price is not advice. Fragments the code splices into a fix (they begin
  // with a space or ';') are parts of a sentence that has its own cost.
  for (const auto& [key, value] : headroom::data_file("oom_fixes.json")["fixes"].items()) {
    const std::string text = value.get<std::string>();
    if (!text.empty() && (text.front() == ' ' || text.front() == ';')) continue;
    INFO(key << ": " << text);
    CHECK((text.find("Costs:") != std::string::npos || text.find("costs:") != std::string::npos));
  }
}

TEST_CASE("oom_fixes.json cites sources only for texts it has", "[oom][texts]") {
  const json& doc = headroom::data_file("oom_fixes.json");
  // The families added for ComfyUI's 2026 failures carry their sources.
  for (const char* key : {"dynamic_vram_fault", "dynamic_vram_address_space", "pinned_memory", "system_ram.silent_exit",
                          "system_ram.by_kernel", "vae_tiled_retry", "out_of_memory.comfy_hint",
                          "out_of_memory.cudnn_no_algorithm", "comfy_disable_pinned_memory", "comfy_disable_dynamic_vram",
                          "comfy_vram_headroom", "comfy_cache_ram", "comfy_fast_disk"}) {
    INFO(key);
    CHECK(doc["sources"].contains(key));
  }
  json stale = doc;
  stale["sources"]["dynamic_vram_faults"] = "Comfy-Org/ComfyUI#15269";
  CHECK_THROWS_WITH(headroom::oom::check_texts(stale),
                    Catch::Contains("oom_fixes.json") && Catch::Contains("'dynamic_vram_faults' is not a diagnosis or fix text"));
  json empty = doc;
  empty["sources"]["pinned_memory"] = "";
  CHECK_THROWS_WITH(headroom::oom::check_texts(empty), Catch::Contains("sources.pinned_memory: expected a citation text"));
}
