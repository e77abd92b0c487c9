// The one file-pattern format, reader and matcher (catalog/file_names): models.json file_patterns, the
// comfy_nodes.json file_names rules and the inspector's tie-break all go through it.
#include "catch.hpp"
#include "core/base/text.hpp"
#include "core/catalog/catalog.hpp"
#include "core/catalog/file_names.hpp"

using namespace headroom;
using nlohmann::json;

TEST_CASE("file_patterns_score: every part must occur, the best pattern's matched length wins", "[catalog][file_names]") {
  const std::vector<FilePattern> patterns = {{"flux", "dev"}, {"flux", "dev", "fp8"}, {"flux", "!fill"}};
  CHECK(file_patterns_score(patterns, "flux1-dev-fp8") == 4 + 3 + 3);
  CHECK(file_patterns_score(patterns, "flux1-dev") == 4 + 3);
  CHECK(file_patterns_score(patterns, "flux1-schnell") == 4);
  CHECK(file_patterns_score(patterns, "flux1-fill") == 0);  // '!fill' refuses it and no other pattern matches
  CHECK(file_patterns_score(patterns, "sdxl") == 0);
}

TEST_CASE("file_patterns_score: '=x' is the whole stem; an empty part or pattern matches nothing", "[catalog][file_names]") {
  CHECK(file_patterns_score({{"=ae"}}, "ae") == 2);
  CHECK(file_patterns_score({{"=ae"}}, "ae2") == 0);
  CHECK(file_patterns_score({{"wan", ""}}, "wan21") == 0);
  CHECK(file_patterns_score({{}}, "wan21") == 0);
  CHECK(file_patterns_score({}, "wan21") == 0);
}

TEST_CASE("file_patterns_score: '~x' reads the squashed stem, '!~x' refuses there", "[catalog][file_names]") {
  const std::vector<FilePattern> wan22_i2v = {{"~wan22", "~i2v", "!~lora"}};
  for (const char* name : {"wan2.2_i2v_high_noise_14B_fp8", "Wan2_2-I2V-A14B", "wan22i2v"})
    CHECK(file_patterns_score(wan22_i2v, model_file_stem(name)) == 5 + 3);
  CHECK(file_patterns_score(wan22_i2v, model_file_stem("wan2.2_i2v_lo_ra_rank64")) == 0);  // "lora" once squashed
  CHECK(file_patterns_score(wan22_i2v, model_file_stem("wan2.1_i2v_14B")) == 0);
  // A plain part still reads the stem as it is: "wan22" is not in "wan2.2_i2v".
  CHECK(file_patterns_score({{"wan22", "i2v"}}, model_file_stem("wan2.2_i2v")) == 0);
}

TEST_CASE("read_file_patterns: the one reader names the faulty pattern", "[catalog][file_names]") {
  std::string key, what;
  const PatternFailure fail = [&](const std::string& k, const std::string& w) { key = k, what = w; };
  CHECK(read_file_patterns(json::parse(R"([["~flux", "!~lora"], ["=ae"]])"), "file_patterns", fail).size() == 2);
  CHECK(key.empty());
  for (const char* bad : {R"([["flux"], []])", R"([["flux"], ["!lora"]])", R"([["flux"], ["~"]])", R"([["flux"], [3]])"}) {
    key.clear();
    CHECK(read_file_patterns(json::parse(bad), "file_patterns", fail).empty());
    CHECK(key == "file_patterns[1]");
  }
  key.clear();
  read_file_patterns(json::parse(R"("flux")"), "file_patterns", fail);
  CHECK(key == "file_patterns");
}

TEST_CASE("model_from_file_name takes the catalog model whose pattern scores best", "[catalog][file_names]") {
  // Every catalog model with patterns is found from a stem made of its own best pattern's parts.
  int checked = 0;
  for (const auto& m : catalog_data().models) {
    for (const auto& pattern : m.file_patterns) {
      std::string stem;
      bool plain = true;
      for (const auto& part : pattern) {
        plain = plain && part[0] != '!' && part[0] != '=' && part[0] != '~';
        stem += part + "_";
      }
      if (!plain) continue;
      const ModelInfo* other = model_from_file_name(stem + ".safetensors");
      REQUIRE(other);
      // The winner scores at least as well as the model the stem was made from.
      CHECK(file_patterns_score(other->file_patterns, model_file_stem(stem)) >=
            file_patterns_score(m.file_patterns, model_file_stem(stem)));
      ++checked;
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("text helpers: lower_ascii and squash", "[base][text]") {
  CHECK(lower_ascii("Wan2.1_T2V-1.3B") == "wan2.1_t2v-1.3b");
  CHECK(squash("Wan2_1-T2V-1_3B") == squash("wan2.1_t2v_1.3B"));
  CHECK(squash("RTX 4090 24GB") == "rtx409024gb");
}
