// ResolutionSelector (ComfyUI comfy_extras/nodes_resolution.py) computes a latent's width and height from an
// aspect choice and a megapixel target: the MOSS-Image, Boogu, Ideogram 4 and FLUX 3 templates size their
// latents with it. The size read is the node's computation, not the stale copy the latent node keeps.
#include "catch.hpp"
#include "core/workflow/resolution_rule.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

// A FLUX.1 text-to-image workflow whose EmptyLatentImage takes both sides from ResolutionSelector #20.
json selector_workflow(const json& selector_inputs) {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": ["20", 0], "height": ["20", 1], "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}
  })");
  wf["20"] = {{"class_type", "ResolutionSelector"}, {"inputs", selector_inputs}};
  return wf;
}

}  // namespace

TEST_CASE("ResolutionSelector's arithmetic is ComfyUI's", "[workflow][resolution]") {
  // sides = ratio x sqrt(megapixels x 1024^2 / (w x h)), each rounded to the multiple.
  // 1:1 at 1 MP: sqrt(1048576) = 1024 on each side.
  CHECK(resolution_sides({1, 1}, 1.0, 8, 0) == std::make_pair(1024LL, 1024LL));
  // 9:16 at 1 MP: scale sqrt(1048576 / 144) = 85.33; 9 x 85.33 / 8 = 96.0 -> 768, 16 x 85.33 / 8 = 170.7 -> 171 x 8.
  CHECK(resolution_sides({9, 16}, 1.0, 8, 0) == std::make_pair(768LL, 1368LL));
  // 16:9 at 1 MP in multiples of 16: 85.3 -> 85 x 16 = 1360, 48.0 -> 768.
  CHECK(resolution_sides({16, 9}, 1.0, 16, 0) == std::make_pair(1360LL, 768LL));
  // 21:9 at 0.1 MP: scale 23.55, 61.8 -> 496 and 26.5 -> 208 (26 x 8); under a 256 minimum both sides become the
  // smallest multiple k of the ratio with 9k >= 256 and each side a multiple of 8 (k a multiple of 8): k = 32.
  CHECK(resolution_sides({21, 9}, 0.1, 8, 0) == std::make_pair(496LL, 208LL));
  CHECK(resolution_sides({21, 9}, 0.1, 8, 256) == std::make_pair(672LL, 288LL));
  // Nothing from inputs ComfyUI refuses.
  CHECK(!resolution_sides({1, 1}, 0.0, 8, 0));
  CHECK(!resolution_sides({1, 1}, 1.0, 0, 0));
  CHECK(!resolution_sides({0, 1}, 1.0, 8, 0));
}

TEST_CASE("a latent sized by ResolutionSelector takes the node's width and height", "[workflow][resolution]") {
  const WorkflowInfo info = analyse_workflow(
      selector_workflow({{"aspect_ratio", "16:9 (Widescreen)"}, {"megapixels", 1.0}, {"multiple", 16}}), "selector");
  CHECK(info.size_known);
  CHECK(info.job.width == 1360);
  CHECK(info.job.height == 768);
  CHECK(info.unknown_nodes.empty());
}

TEST_CASE("a ResolutionSelector whose aspect choice the rule does not list leaves the size unknown",
          "[workflow][resolution]") {
  const WorkflowInfo info = analyse_workflow(
      selector_workflow({{"aspect_ratio", "5:4 (Custom)"}, {"megapixels", 1.0}, {"multiple", 8}}), "selector");
  CHECK(!info.size_known);
}
