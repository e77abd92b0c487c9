// native/data/comfy_nodes.json: the built-in file loads, and a missing or mistyped field fails at load
// with the file, the node type (or section) and the key.
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow_graph.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

json minimal() {
  return {{"weight_dtypes", {{"precisions", {{"fp8_e5m2", "fp8_e5m2"}}}}},
          {"loader_roles", {{"vae", {{"folders", {"vae"}}, {"file_widgets", {{"vae_name"}}}}}}},
          {"nodes", {{"VAELoader", {{"widgets", {"vae_name"}}, {"loads", "vae"}}},
                     {"EmptyLatentImage", {{"widgets", {"width", "height", "batch_size"}},
                                           {"latent", {{"width", "width"}, {"height", "height"}, {"batch", "batch_size"}}}}}}}};
}

std::string error_of(const json& data) {
  try {
    load_comfy_nodes(data, "nodes-test.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("comfy_nodes: the built-in file loads into typed nodes", "[workflow][comfy_nodes]") {
  const ComfyNodes& c = comfy_nodes();
  const ComfyNode* k = c.find("KSampler");
  REQUIRE(k);
  REQUIRE(k->widgets);
  CHECK((*k->widgets)[1].empty());  // the frontend's control_after_generate entry after the seed
  CHECK(k->cfg_widget == "cfg");
  const ComfyNode* wan = c.find("WanImageToVideo");
  REQUIRE(wan);
  REQUIRE(wan->latent);
  CHECK(wan->latent->length == "length");
  CHECK(c.find("VAEDecodeTiled")->decode == DecodeKind::Tiled);
  // Every loader names a role with folders to look in.
  for (const auto& [type, n] : c.nodes)
    if (!n.loads.empty()) CHECK(!c.loader_roles.at(n.loads).folders.empty());
  CHECK(widget_names("CLIPTextEncode") == nullptr);  // known, but its widgets are never read
  CHECK(widget_names("NoSuchNode") == nullptr);
}

TEST_CASE("comfy_nodes: a broken entry fails at load naming file, node type and key", "[workflow][comfy_nodes]") {
  CHECK(error_of(minimal()).empty());

  json no_height = minimal();
  no_height["nodes"]["EmptyLatentImage"]["latent"].erase("height");
  std::string e = error_of(no_height);
  CHECK_THAT(e, Catch::Contains("nodes-test.json") && Catch::Contains("nodes.EmptyLatentImage") &&
                    Catch::Contains("'height' is missing"));

  json typo = minimal();
  typo["nodes"]["VAELoader"]["load"] = "vae";
  CHECK_THAT(error_of(typo), Catch::Contains("nodes.VAELoader") && Catch::Contains("'load' is not a known key"));

  json unknown_role = minimal();
  unknown_role["nodes"]["VAELoader"]["loads"] = "vae_model";
  CHECK_THAT(error_of(unknown_role), Catch::Contains("'loads'") && Catch::Contains("vae_model"));

  json bad_decode = minimal();
  bad_decode["nodes"]["VAELoader"]["decode"] = "tiles";
  CHECK_THAT(error_of(bad_decode), Catch::Contains("'decode'") && Catch::Contains("tiles"));

  json bad_widgets = minimal();
  bad_widgets["nodes"]["VAELoader"]["widgets"] = "vae_name";
  CHECK_THAT(error_of(bad_widgets), Catch::Contains("nodes.VAELoader") && Catch::Contains("'widgets'"));

  json no_folders = minimal();
  no_folders["loader_roles"]["vae"].erase("folders");
  CHECK_THAT(error_of(no_folders), Catch::Contains("loader_roles.vae") && Catch::Contains("'folders' is missing"));

  json no_nodes = minimal();
  no_nodes.erase("nodes");
  CHECK_THAT(error_of(no_nodes), Catch::Contains("'nodes'"));
}

TEST_CASE("comfy_nodes: a node's stage is one the estimator reports; a decoder is vae_decode", "[workflow][comfy_nodes][runs]") {
  json typo = minimal();
  typo["nodes"]["VAELoader"]["stage"] = "decode";
  CHECK_THAT(error_of(typo), Catch::Contains("nodes.VAELoader") && Catch::Contains("'stage'") &&
                                 Catch::Contains("vae_decode") && Catch::Contains("'decode'"));
  json decoder = minimal();
  decoder["nodes"]["VAEDecode"] = {{"decode", "full"}};
  CHECK(load_comfy_nodes(decoder, "nodes-test.json").find("VAEDecode")->stage == "vae_decode");
  CHECK(comfy_nodes().find("KSampler")->stage == "sample");
  CHECK(comfy_nodes().find("CLIPTextEncode")->stage == "text_encode");
  CHECK(comfy_nodes().find("VAELoader")->stage.empty());
}

TEST_CASE("comfy_nodes: a broken resolution rule fails naming the node and the key", "[workflow][comfy_nodes][resolution]") {
  json good = minimal();
  good["nodes"]["ResolutionSelector"] = {{"widgets", {"aspect_ratio", "megapixels", "multiple"}},
                                         {"neutral", true},
                                         {"resolution", {{"aspect_ratio", "aspect_ratio"}, {"megapixels", "megapixels"},
                                                         {"multiple", "multiple"}, {"ratios", {{"1:1 (Square)", {1, 1}}}}}}};
  CHECK(error_of(good).empty());
  CHECK(load_comfy_nodes(good, "nodes-test.json").find("ResolutionSelector")->resolution->ratios.at("1:1 (Square)") ==
        std::make_pair(1, 1));
  json no_ratios = good;
  no_ratios["nodes"]["ResolutionSelector"]["resolution"].erase("ratios");
  CHECK_THAT(error_of(no_ratios), Catch::Contains("nodes.ResolutionSelector.resolution") && Catch::Contains("'ratios'"));
  json bad_ratio = good;
  bad_ratio["nodes"]["ResolutionSelector"]["resolution"]["ratios"]["16:9"] = {16};
  CHECK_THAT(error_of(bad_ratio), Catch::Contains("ratios.16:9") && Catch::Contains("two whole numbers"));
  json no_megapixels = good;
  no_megapixels["nodes"]["ResolutionSelector"]["resolution"].erase("megapixels");
  CHECK_THAT(error_of(no_megapixels), Catch::Contains("'megapixels'"));
}

TEST_CASE("comfy_nodes: a sampler node names a sampler_kinds entry whose cost is a known kind", "[workflow][comfy_nodes][kv_cache]") {
  const ComfyNode* ar = comfy_nodes().find("SamplerARVideo");
  REQUIRE(ar);
  REQUIRE(ar->sampling);
  CHECK(*ar->sampling == SamplingKind::KvCacheBlocks);
  CHECK(ar->block_frames_widget == "num_frame_per_block");
  CHECK_FALSE(comfy_nodes().find("KSamplerSelect")->sampling);

  json good = minimal();
  good["sampler_kinds"] = {{"source", "test"}, {"kinds", {{"ar_video", "kv_cache_blocks"}}}};
  good["nodes"]["SamplerARVideo"] = {{"widgets", {"num_frame_per_block"}}, {"sampler", "ar_video"},
                                     {"block_frames", "num_frame_per_block"}};
  CHECK(error_of(good).empty());
  json unknown_sampler = good;
  unknown_sampler["nodes"]["SamplerARVideo"]["sampler"] = "ar_vidoe";
  CHECK_THAT(error_of(unknown_sampler), Catch::Contains("nodes.SamplerARVideo") && Catch::Contains("'sampler'") &&
                                            Catch::Contains("ar_vidoe"));
  json unknown_cost = good;
  unknown_cost["sampler_kinds"]["kinds"]["ar_video"] = "kv_cache";
  CHECK_THAT(error_of(unknown_cost), Catch::Contains("sampler_kinds.kinds") && Catch::Contains("'ar_video'") &&
                                         Catch::Contains("kv_cache_blocks"));
  json frames_alone = good;
  frames_alone["nodes"]["SamplerARVideo"].erase("sampler");
  CHECK_THAT(error_of(frames_alone), Catch::Contains("'block_frames'") && Catch::Contains("only read with 'sampler'"));
}
