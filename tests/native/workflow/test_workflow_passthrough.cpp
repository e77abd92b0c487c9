// A Reroute anywhere changes nothing (issue 19, item 1). Its one input is named "": the walk over what
// runs skipped inputs named like an unset switch branch (""), so behind a Reroute on the VAE, the text
// encoder or the latent, nothing ran and the stages disappeared ("fits" on a 1024x1024 default).
#include "catch.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

json flux_api() {
  return json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1344, "height": 768, "batch_size": 2}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}
  })");
}

// `wf` with a Reroute (two in a row when `twice`) put on node `to`'s input `input`.
json rerouted(json wf, const std::string& to, const std::string& input, bool twice) {
  json link = wf[to]["inputs"][input];
  wf["90"] = {{"class_type", "Reroute"}, {"inputs", {{"", link}}}};
  wf["91"] = {{"class_type", "Reroute"}, {"inputs", {{"", json::array({"90", 0})}}}};
  wf[to]["inputs"][input] = json::array({twice ? "91" : "90", 0});
  return wf;
}

}  // namespace

TEST_CASE("a Reroute on the VAE, the text encoder or the latent changes nothing", "[workflow][passthrough]") {
  const WorkflowInfo plain = analyse_workflow(flux_api(), "plain");
  REQUIRE(plain.job.vae);
  REQUIRE(plain.job.text_encoders.size() == 2);
  for (const auto& [to, input] : {std::pair{"7", "vae"}, {"4", "clip"}, {"6", "latent_image"}, {"6", "model"}}) {
    for (bool twice : {false, true}) {
      DYNAMIC_SECTION(to << "." << input << (twice ? " through two Reroutes" : "")) {
        const WorkflowInfo info = analyse_workflow(rerouted(flux_api(), to, input, twice), "rerouted");
        REQUIRE(info.job.vae);
        CHECK(info.job.vae->model == plain.job.vae->model);
        CHECK(info.job.text_encoders.size() == plain.job.text_encoders.size());
        REQUIRE(info.job.diffusion);
        CHECK(info.job.diffusion->model == "flux1-dev");
        CHECK(info.size_known);
        CHECK(info.job.width == 1344);
        CHECK(info.job.height == 768);
        CHECK(info.job.batch == 2);
        CHECK(info.decoders.size() == 1);
        CHECK(info.unknown_nodes.empty());
      }
    }
  }
}
