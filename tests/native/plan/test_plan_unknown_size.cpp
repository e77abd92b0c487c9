// No verdict from a silent default (issue 19, item 2): a sampled latent that comes from a node Headroom
// does not know (a dance or character-replacement video node of a custom pack) has an unknown size.
// Before, the plan took 1024x1024, 1 frame and said "fits" on 16 GB with a note "1024x1024 assumed".
#include "catch.hpp"
#include "core/api/api.hpp"

using nlohmann::json;

namespace {

json wan_with_latent_from(const std::string& latent_type, bool through_reroute) {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan", "device": "default"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "dance", "clip": ["2", 0]}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 4, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveAnimatedWEBP", "inputs": {"images": ["7", 0], "filename_prefix": "x", "fps": 16, "lossless": false, "quality": 90, "method": "default"}}
  })");
  wf["5"] = {{"class_type", latent_type}, {"inputs", {{"positive", json::array({"4", 0})}, {"vae", json::array({"3", 0})}}}};
  if (through_reroute) {
    wf["9"] = {{"class_type", "Reroute"}, {"inputs", {{"", json::array({"5", 0})}}}};
    wf["6"]["inputs"]["latent_image"] = json::array({"9", 0});
  }
  return wf;
}

}  // namespace

TEST_CASE("a latent from a node Headroom does not know gives an unknown verdict naming it", "[plan][size]") {
  for (bool reroute : {false, true}) {
    DYNAMIC_SECTION((reroute ? "through a Reroute" : "directly")) {
      json out = headroom::api::plan({{"workflow", wan_with_latent_from("AcmeDancerToVideo", reroute)}, {"vram", "16GB"}});
      CHECK(out["verdict"] == "unknown");
      CHECK(out["not_covered"]["kind"] == "size");
      CHECK(out["not_covered"]["node_id"] == "5");
      CHECK(out["not_covered"]["node_type"] == "AcmeDancerToVideo");
      CHECK(out["reason"].get<std::string>().find("AcmeDancerToVideo #5, a node Headroom does not know") != std::string::npos);
      // What the assumed size would need is still shown, but nothing acts on it.
      CHECK(!out["stages"].empty());
      CHECK(out["changes"].empty());
      CHECK(out["smallest_gpu"].is_null());
    }
  }
}

TEST_CASE("a latent from a known node keeps its verdict", "[plan][size]") {
  json wf = wan_with_latent_from("WanImageToVideo", false);
  wf["5"]["inputs"] = {{"positive", json::array({"4", 0})}, {"negative", json::array({"4", 0})}, {"vae", json::array({"3", 0})},
                       {"width", 832}, {"height", 480}, {"length", 81}, {"batch_size", 1}};
  json out = headroom::api::plan({{"workflow", wf}, {"vram", "24GB"}});
  CHECK(out["verdict"] != "unknown");
  CHECK(!out.contains("not_covered"));
  CHECK(out["job"]["frames"] == 81);
}
