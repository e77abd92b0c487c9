// Issue 19 items 2 and 3 across samplers: a sampler Headroom cannot size leaves the workflow's verdict
// unknown however the samplers beside it fare (naming the node its trace stopped at and the sampler it
// feeds), a sampler ComfyUI does not run withholds nothing, and each sampler's text-encode stage holds the
// encoders its own conditioning reads.
#include <algorithm>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// A Flux image sampler (#8) beside a Wan 2.1 14B video sampler (#9), each decoded on its own.
json flux_and_wan() {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/workflows/two_samplers_flux_wan.json");
  REQUIRE(in);
  return json::parse(in);
}

json plan_on(const json& wf, int gib) { return api::plan({{"workflow", wf}, {"vram", std::to_string(gib) + "GB"}}); }

const json& sampler_entry(const json& plan, const std::string& id) {
  for (const auto& s : plan["samplers"])
    if (s["node_id"] == id) return s;
  FAIL("no sampler " << id);
  static const json none;
  return none;
}

// On a card that holds both models the workflow as it is fits: what changes the verdict is the change made.
void check_fits_as_is() {
  const json out = plan_on(flux_and_wan(), 141);
  REQUIRE(out["verdict"] == "fits");
}

// A Flux sampler (#3) at 1024x768 beside a second one (#9) on a latent an unknown node (#7, "Mystery") makes,
// in UI format, the second one's mode `mode` (0 runs, 2 muted, 4 bypassed); with `read` false nothing reads
// the second sampler's result.
json ui_two_samplers(int mode, bool read) {
  json wf = json::parse(R"({
    "nodes": [
      {"id": 1, "type": "UNETLoader", "mode": 0, "inputs": [], "widgets_values": ["flux1-dev.safetensors", "fp8_e4m3fn"]},
      {"id": 2, "type": "EmptySD3LatentImage", "mode": 0, "inputs": [], "widgets_values": [1024, 768, 1]},
      {"id": 3, "type": "KSampler", "mode": 0, "inputs": [{"name": "model", "link": 1}, {"name": "latent_image", "link": 2}],
       "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1]},
      {"id": 4, "type": "VAEDecode", "mode": 0, "inputs": [{"name": "samples", "link": 3}, {"name": "vae", "link": 8}]},
      {"id": 5, "type": "SaveImage", "mode": 0, "inputs": [{"name": "images", "link": 4}], "widgets_values": ["x"]},
      {"id": 6, "type": "VAELoader", "mode": 0, "inputs": [], "widgets_values": ["ae.safetensors"]},
      {"id": 7, "type": "MysteryLatentMaker", "title": "Mystery", "mode": 0, "inputs": [], "widgets_values": [2048]},
      {"id": 9, "type": "KSampler", "mode": 0, "inputs": [{"name": "model", "link": 6}, {"name": "latent_image", "link": 5}],
       "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1]},
      {"id": 10, "type": "SaveLatent", "mode": 0, "inputs": [{"name": "samples", "link": 7}], "widgets_values": ["x"]}
    ],
    "links": [[1, 1, 0, 3, 0, "MODEL"], [2, 2, 0, 3, 1, "LATENT"], [3, 3, 0, 4, 0, "LATENT"], [4, 4, 0, 5, 0, "IMAGE"],
              [5, 7, 0, 9, 1, "LATENT"], [6, 1, 0, 9, 0, "MODEL"], [7, 9, 0, 10, 0, "LATENT"], [8, 6, 0, 4, 1, "VAE"]]
  })");
  wf["nodes"][7]["mode"] = mode;
  if (!read) wf["nodes"].erase(8);  // SaveLatent #10: no output reads sampler #9
  return wf;
}

}  // namespace

TEST_CASE("a sampler of unknown size beside a sized one leaves the verdict unknown, naming both", "[workflow][samplers][verdict]") {
  check_fits_as_is();
  json wf = flux_and_wan();
  wf["6"] = {{"class_type", "MysteryLatentMaker"}, {"inputs", {{"frames", 81}}}, {"_meta", {{"title", "Mystery"}}}};
  const json out = plan_on(wf, 141);
  CHECK(out["verdict"] == "unknown");
  const json& nc = out["not_covered"];
  CHECK(nc["kind"] == "sampler_size");
  CHECK(nc["node_id"] == "6");
  CHECK(nc["node_type"] == "MysteryLatentMaker");
  CHECK(nc["title"] == "Mystery");
  CHECK(nc["sampler"]["node_id"] == "9");
  CHECK(nc["sampler"]["node_type"] == "KSampler");
  const std::string why = out["verdict_reason"];
  CHECK(why.find("KSampler #9") != std::string::npos);
  CHECK(why.find("MysteryLatentMaker #6") != std::string::npos);
  CHECK(why.find("\"Mystery\"") != std::string::npos);
  // The known sampler's figures are still shown; nothing judges them.
  CHECK(sampler_entry(out, "8")["peak_bytes"].is_number());
  CHECK(sampler_entry(out, "9")["peak_bytes"].is_null());
  CHECK_FALSE(out["stages"].empty());
  CHECK(out["changes"].empty());
  CHECK(out["smallest_gpu"].is_null());
}

TEST_CASE("a sampler whose model is unknown beside a known one leaves the verdict unknown", "[workflow][samplers][verdict]") {
  check_fits_as_is();
  SECTION("a diffusion model the catalog lacks stops at its loader") {
    json wf = flux_and_wan();
    wf["2"]["inputs"]["unet_name"] = "mystery_video_model.safetensors";
    wf["2"]["_meta"] = {{"title", "Load the mystery"}};
    const json out = plan_on(wf, 141);
    CHECK(out["verdict"] == "unknown");
    CHECK(out["not_covered"]["kind"] == "sampler_model");
    CHECK(out["not_covered"]["node_id"] == "2");
    CHECK(out["not_covered"]["title"] == "Load the mystery");
    CHECK(out["not_covered"]["sampler"]["node_id"] == "9");
    CHECK(std::string(out["verdict_reason"]).find("mystery_video_model.safetensors") != std::string::npos);
    CHECK(sampler_entry(out, "8")["peak_bytes"].is_number());
  }
  SECTION("a node Headroom does not know without a model input may load any model: the trace stops there") {
    json wf = flux_and_wan();
    wf["7"] = {{"class_type", "MysteryModelLoader"}, {"inputs", {{"name", "x"}}}};
    const json out = plan_on(wf, 141);
    CHECK(out["verdict"] == "unknown");
    CHECK(out["not_covered"]["kind"] == "sampler_model");
    CHECK(out["not_covered"]["node_id"] == "7");
    CHECK(out["not_covered"]["node_type"] == "MysteryModelLoader");
    CHECK(out["not_covered"]["sampler"]["node_id"] == "9");
  }
  SECTION("a model patch Headroom does not know hands on the model it patches") {
    json wf = flux_and_wan();
    wf["7"]["class_type"] = "MysteryModelPatch";
    const json out = plan_on(wf, 141);
    CHECK(out["verdict"] == "fits");
    CHECK(sampler_entry(out, "9")["model"] == "wan2.1-t2v-14b");
  }
}

TEST_CASE("a sampler ComfyUI does not run withholds nothing", "[workflow][samplers][verdict]") {
  // Running, sampler #9 on the mystery latent withholds the verdict (the case above, in UI format).
  const json runs = plan_on(ui_two_samplers(0, true), 80);
  REQUIRE(runs["verdict"] == "unknown");
  CHECK(runs["not_covered"]["node_id"] == "7");
  CHECK(runs["not_covered"]["title"] == "Mystery");
  CHECK(runs["not_covered"]["sampler"]["node_id"] == "9");
  for (const auto& [name, wf] : {std::pair<std::string, json>{"muted", ui_two_samplers(2, true)},
                                 std::pair<std::string, json>{"bypassed", ui_two_samplers(4, true)},
                                 std::pair<std::string, json>{"read by no output", ui_two_samplers(0, false)}}) {
    DYNAMIC_SECTION(name) {
      const json out = plan_on(wf, 80);
      CHECK(out["verdict"] == "fits");
      CHECK_FALSE(out.contains("not_covered"));
      CHECK(out["samplers"].size() == 1);
    }
  }
}
