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

namespace {

// `wf` with a Reroute between node `to`'s linked input `input` and its source.
json one_reroute(json wf, const std::string& to, const std::string& input, const std::string& id) {
  wf[id] = {{"class_type", "Reroute"}, {"inputs", {{"", wf[to]["inputs"][input]}}}};
  wf[to]["inputs"][input] = json::array({id, 0});
  return wf;
}

}  // namespace

// Found by the templates corpus (a Reroute on every link): the rules that look at the node behind an
// input saw the Reroute instead. A width from a value node fell back to the stale stored copy, one
// reference image fed through two Reroutes counted twice.
TEST_CASE("a Reroute between a value node and the size it sets changes nothing", "[workflow][passthrough]") {
  json wf = flux_api();
  wf["20"] = {{"class_type", "PrimitiveInt"}, {"inputs", {{"value", 1600}}}};
  wf["5"]["inputs"]["width"] = json::array({"20", 0});
  const WorkflowInfo plain = analyse_workflow(wf, "plain");
  REQUIRE(plain.job.width == 1600);
  const WorkflowInfo info = analyse_workflow(one_reroute(wf, "5", "width", "90"), "rerouted");
  CHECK(info.job.width == 1600);
  CHECK(info.size_known);
}

TEST_CASE("one reference image fed through Reroutes to two conditionings counts once", "[workflow][passthrough]") {
  json wf = flux_api();
  wf["30"] = {{"class_type", "VAEEncode"}, {"inputs", {{"pixels", json::array({"31", 0})}, {"vae", json::array({"3", 0})}}}};
  wf["31"] = {{"class_type", "EmptyImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}, {"color", 0}}}};
  wf["32"] = {{"class_type", "ReferenceLatent"}, {"inputs", {{"conditioning", json::array({"4", 0})}, {"latent", json::array({"30", 0})}}}};
  wf["33"] = {{"class_type", "ReferenceLatent"}, {"inputs", {{"conditioning", json::array({"4", 0})}, {"latent", json::array({"30", 0})}}}};
  wf["6"]["inputs"]["positive"] = json::array({"32", 0});
  wf["6"]["inputs"]["negative"] = json::array({"33", 0});
  REQUIRE(analyse_workflow(wf, "plain").job.reference_images == 1);
  const json rerouted = one_reroute(one_reroute(wf, "32", "latent", "90"), "33", "latent", "91");
  CHECK(analyse_workflow(rerouted, "rerouted").job.reference_images == 1);
}
