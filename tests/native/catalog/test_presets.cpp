// Presets: presets.json is valid, and apply_preset rewrites widget values only, in the input's format.
#include <filesystem>
#include <fstream>
#include <set>

#include "catch.hpp"
#include "support/shared_data.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/catalog/presets.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using support::templates_dir;

json load(const std::string& rel) {
  std::ifstream in(templates_dir() + "/" + rel);
  return json::parse(in);
}

// Every path where two documents differ (json::diff), as strings.
std::set<std::string> diff_paths(const json& a, const json& b) {
  std::set<std::string> out;
  for (const auto& op : json::diff(a, b)) out.insert(op["path"].get<std::string>());
  return out;
}

bool widget_path(const std::string& p) {
  // UI: .../nodes/<i>/widgets_values/<k> or a decoder's /type and whole widgets_values;
  // API: /<id>/inputs/<name> or /<id>/class_type.
  return p.find("/widgets_values") != std::string::npos || p.find("/inputs/") != std::string::npos ||
         (p.size() > 5 && p.compare(p.size() - 5, 5, "/type") == 0) || p.find("/class_type") != std::string::npos ||
         p.find("Node name for S&R") != std::string::npos;
}

}  // namespace

TEST_CASE("presets.json: the five named presets of issue #2 exist and only use widget changes", "[presets]") {
  const PresetData& d = preset_data();
  for (const char* name : {"fit 24 GB", "fit 16 GB", "fit 12 GB", "fit 8 GB", "max quality"})
    CHECK(d.preset(name) != nullptr);
  CHECK(d.preset("FIT 12 gb") != nullptr);  // names are matched case-insensitively
  for (std::size_t i = 1; i < d.changes.size(); ++i) CHECK(d.changes[i - 1].cost <= d.changes[i].cost);
}

TEST_CASE("apply_preset: fit 12 GB on Flux.1 dev full (16-bit) rewrites widgets only", "[presets][templates]") {
  if (!fs::is_directory(templates_dir())) {
    WARN("skipped: " << templates_dir() << " is absent");
    return;
  }
  json wf = load("flux_dev_full_text_to_image.json");
  json r = api::apply_preset({{"workflow", wf}, {"preset", "fit 12 GB"}});
  INFO(r["changes"].dump(1));
  // The need with every model resident falls (the reserved peak may not, under partial loading).
  CHECK(r["after"]["full_load_bytes"].get<std::uint64_t>() < r["before"]["full_load_bytes"].get<std::uint64_t>());
  REQUIRE_FALSE(r["changes"].empty());
  // Nothing but widget values (and a decoder's type) changed.
  for (const auto& p : diff_paths(wf, r["workflow"])) {
    INFO(p);
    CHECK(widget_path(p));
  }
  // The UNETLoader #38 (INDEX.md: weight_dtype "default") now loads fp8.
  bool fp8 = false;
  for (const auto& c : r["changes"]) fp8 = fp8 || (c["node_id"] == "38" && c["widget"] == "weight_dtype" && c["to"] == "fp8_e4m3fn");
  CHECK(fp8);
  // Parsing the rewritten workflow gives the changed job.
  workflow::WorkflowInfo after = workflow::analyse_workflow(r["workflow"], "after");
  CHECK(after.job.diffusion->precision == "fp8_e4m3fn");
  CHECK(after.job.decode_mode == DecodeMode::Tiled);  // "fit 12 GB" always tiles the decode

  SECTION("max quality undoes it") {
    json back = api::apply_preset({{"workflow", r["workflow"]}, {"preset", "max quality"}, {"gpu", "4090"}});
    workflow::WorkflowInfo q = workflow::analyse_workflow(back["workflow"], "back");
    CHECK(q.job.diffusion->precision.empty());  // the file's own 16 bits
    CHECK(q.job.decode_mode == DecodeMode::Full);
  }
}

TEST_CASE("apply_preset: subgraph and API formats keep their format", "[presets][templates]") {
  if (!fs::is_directory(templates_dir())) {
    WARN("skipped: " << templates_dir() << " is absent");
    return;
  }
  SECTION("the subgraphed Wan 2.2 template: edits land inside definitions.subgraphs") {
    json wf = load("latest/03_video_wan2_2_14B_i2v_subgraphed.json");
    json r = api::apply_preset({{"workflow", wf}, {"preset", "fit 8 GB"}});
    for (const auto& p : diff_paths(wf, r["workflow"])) {
      INFO(p);
      CHECK(widget_path(p));
      CHECK(p.rfind("/definitions/subgraphs/0/nodes/", 0) == 0);
    }
    // With partial loading the reserved peak can rise when activations shrink (more weights stay
    // loaded); what must not rise is the need with every model resident.
    CHECK(r["after"]["full_load_bytes"].get<std::uint64_t>() <= r["before"]["full_load_bytes"].get<std::uint64_t>());
    // 8 GB cannot hold a 14B fp8 expert (~14 GB, INDEX.md file names fp8_scaled): the preset says so
    // and leaves length and size alone rather than shrinking the video for nothing.
    if (r["after"]["verdict"] != "fits") {
      CHECK_FALSE(r["notes"].empty());
      for (const auto& c : r["changes"]) CHECK(c["widget"] != "length");
    }
  }
  SECTION("API format: VAEDecode becomes VAEDecodeTiled with a tile_size input") {
    json api_wf = json::parse(R"({
      "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
      "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}},
      "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
      "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 2048, "height": 2048, "batch_size": 1}},
      "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "latent_image": ["4", 0], "cfg": 1, "seed": 1, "steps": 20,
            "sampler_name": "euler", "scheduler": "simple", "denoise": 1, "positive": ["6", 0], "negative": ["6", 0]}},
      "6": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "x"}},
      "7": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["3", 0]}},
      "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}
    })");
    json r = api::apply_preset({{"workflow", api_wf}, {"preset", "fit 12 GB"}});
    const json& out = r["workflow"];
    CHECK(out["7"]["class_type"] == "VAEDecodeTiled");
    CHECK(out["7"]["inputs"]["tile_size"].is_number_integer());
    CHECK(out["7"]["inputs"]["samples"] == json::array({"5", 0}));  // links untouched
    CHECK(out["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn");
    CHECK(out.size() == api_wf.size());
  }
}

TEST_CASE("apply_preset: bad requests", "[presets]") {
  json wf = json::parse(R"({"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
                            "2": {"class_type": "SaveImage", "inputs": {"images": ["1", 0]}}})");
  CHECK_THROWS_WITH(api::apply_preset({{"workflow", wf}, {"preset", "fit 3 GB"}}), Catch::Contains("fit 12 GB"));
  CHECK_THROWS_AS(api::apply_preset({{"workflow", wf}, {"preset", "fit this card"}}), InputError);
  CHECK_THROWS_AS(api::apply_preset({{"workflow", wf}}), InputError);
}

// Issue 23 #1 and #2: what a preset previews is what the rewritten workflow estimates on the user's card,
// every row is judged on that card, and a replaced decode node says so in one change with its widgets.
TEST_CASE("apply_preset: the preview is the plan of the rewritten workflow on the user's card", "[presets][templates]") {
  const std::vector<std::string> files = {"video_wan2_2_5B_ti2v.json", "2026/image_flux2.json",
                                          "2026/flux1_krea_dev.json"};
  for (const auto& file : files) {
    if (!fs::exists(templates_dir() + "/" + file)) continue;
    json wf = load(file);
    for (const char* gpu : {"3060", "4090"}) {
      DYNAMIC_SECTION(file << " on " << gpu) {
        json user = api::plan({{"workflow", wf}, {"gpu", gpu}});
        for (const auto& preset : preset_data().presets) {
          json r = api::apply_preset({{"workflow", wf}, {"preset", preset.name}, {"gpu", gpu}});
          INFO(preset.name);
          CHECK(r["judged_on"] == "request");
          // The same "before" on every row: the user's own estimate.
          CHECK(r["before"]["peak_bytes"] == user["peak_bytes"]);
          CHECK(r["before"]["verdict"] == user["verdict"]);
          json again = api::plan({{"workflow", r["workflow"]}, {"gpu", gpu}});
          CHECK(r["after"]["peak_bytes"] == again["peak_bytes"]);
          CHECK(r["after"]["verdict"] == again["verdict"]);
          CHECK(r["plan"]["peak_bytes"] == again["peak_bytes"]);
          CHECK(r["after"]["slowdown"] == again["slowdown"]);
          for (const auto& c : r["changes"]) {
            CHECK(!c["from"].is_null());  // no "tile_size ? -> 768": every change says what it replaces
            if (c["widget"] == "type") {
              CHECK(c["replace"] == true);
              if (c["to"] == "VAEDecodeTiled") CHECK(c["widgets"]["tile_size"].get<int>() > 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("apply_preset: weight_dtype fp8 is not set on a file that already holds fp8", "[presets][templates]") {
  const std::string file = "2026/image_flux2.json";  // flux2_dev_fp8mixed.safetensors
  if (!fs::exists(templates_dir() + "/" + file)) return;  // ../shared absent
  json wf = load(file);
  json r = api::apply_preset({{"workflow", wf}, {"preset", "fit 8 GB"}, {"gpu", "3060"}});
  for (const auto& c : r["changes"]) CHECK(c["widget"] != "weight_dtype");
}
