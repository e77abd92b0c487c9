// A latent made by VAEEncode has its image's size (img2img, edit and ControlNet templates of Qwen-Image,
// Z-Image, Marigold): the size is read where the workflow sets the image and is unknown, naming the node,
// where it does not (issue 19). Before, such a latent was "output size unknown, assumed 1024x1024" with
// no node named, and the verdict rested on the assumption.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

// A Qwen-Image workflow that samples the VAEEncode (#5) of the image of node 10.
json encode_image(const json& image_node) {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "qwen_image_fp8_e4m3fn.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_2.5_vl_7b_fp8_scaled.safetensors", "type": "qwen_image"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "qwen_image_vae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
    "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["10", 0], "vae": ["3", 0]}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 2.5, "sampler_name": "euler", "scheduler": "simple", "denoise": 0.8}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}
  })");
  wf["10"] = image_node;
  return wf;
}

json load_image() {
  return {{"class_type", "LoadImage"}, {"inputs", {{"image", "photo.png"}}}};
}

json node(const std::string& type, const json& inputs) { return {{"class_type", type}, {"inputs", inputs}}; }

}  // namespace

TEST_CASE("a VAEEncode of a loaded image leaves the size unknown and names the image", "[workflow][image_size][vae_encode]") {
  const WorkflowInfo info = analyse_workflow(encode_image(load_image()), "img2img");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->id == "10");
  CHECK(info.size_from_unknown->type == "LoadImage");
  CHECK(info.unknown_nodes.empty());
  const json out = headroom::api::plan({{"workflow", encode_image(load_image())}, {"vram", "24GB"}});
  CHECK(out["verdict"] == "unknown");
  CHECK(out["not_covered"]["node_type"] == "LoadImage");
  CHECK(out["not_covered"]["node_id"] == "10");
}

TEST_CASE("a VAEEncode takes the size of the image a scale node sets", "[workflow][image_size][vae_encode]") {
  json wf = encode_image(node("ImageScale", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"},
                                             {"width", 1328}, {"height", 800}, {"crop", "center"}}));
  wf["11"] = load_image();
  WorkflowInfo info = analyse_workflow(wf, "scaled");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1328);
  CHECK(info.job.height == 800);
  CHECK(info.latent_node == "VAEEncode");

  // ImageScaleToMaxDimension keeps the aspect of an image whose size is not recorded: the square of
  // largest_size holds at least its pixels, so that bound is the size.
  wf["10"] = node("ImageScaleToMaxDimension", {{"image", json::array({"11", 0})}, {"upscale_method", "area"}, {"largest_size", 1536}});
  info = analyse_workflow(wf, "max dimension");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1536);
  CHECK(info.job.height == 1536);
  wf["10"]["inputs"]["largest_size"] = 0;  // ComfyUI allows 0; it is no size
  info = analyse_workflow(wf, "max dimension 0");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "ImageScaleToMaxDimension");
}

TEST_CASE("an image made by decoding a sampled latent has the size of the image encoded into it",
          "[workflow][image_size][vae_encode]") {
  // A depth pass (Lotus in flux_depth_lora_example): LoadImage -> ImageScale -> VAEEncode -> sampler ->
  // VAEDecode -> ImageInvert, whose image an InstructPix2Pix conditioning then encodes for the main sampler.
  json wf = encode_image(node("ImageScale", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"},
                                             {"width", 768}, {"height", 1152}, {"crop", "center"}}));
  wf["11"] = load_image();
  wf["20"] = node("SamplerCustomAdvanced", {{"noise", json::array({"21", 0})}, {"latent_image", json::array({"5", 0})}});
  wf["21"] = node("DisableNoise", json::object());
  wf["22"] = node("VAEDecode", {{"samples", json::array({"20", 0})}, {"vae", json::array({"3", 0})}});
  wf["23"] = node("ImageInvert", {{"image", json::array({"22", 0})}});
  wf["24"] = node("InstructPixToPixConditioning", {{"positive", json::array({"4", 0})}, {"negative", json::array({"4", 0})},
                                                   {"vae", json::array({"3", 0})}, {"pixels", json::array({"23", 0})}});
  wf["6"]["inputs"]["latent_image"] = json::array({"24", 2});
  WorkflowInfo info = analyse_workflow(wf, "depth pass");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 768);
  CHECK(info.job.height == 1152);

  // The same chain from a loaded image is unknown, and the loaded image is the node named.
  wf["5"]["inputs"]["pixels"] = json::array({"11", 0});
  info = analyse_workflow(wf, "depth pass, loaded");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "LoadImage");
  CHECK(info.size_from_unknown->id == "11");
}

TEST_CASE("an empty latent node still sets the size beside a VAEEncode of a loaded reference",
          "[workflow][image_size][vae_encode]") {
  // Edit workflows encode a reference image whose size is not recorded and sample an EmptySD3LatentImage.
  json wf = encode_image(load_image());
  wf["12"] = node("EmptySD3LatentImage", {{"width", 1024}, {"height", 1536}, {"batch_size", 1}});
  wf["13"] = node("ReferenceLatent", {{"conditioning", json::array({"4", 0})}, {"latent", json::array({"5", 0})}});
  wf["6"]["inputs"]["positive"] = json::array({"13", 0});
  wf["6"]["inputs"]["latent_image"] = json::array({"12", 0});
  const WorkflowInfo info = analyse_workflow(wf, "edit");
  REQUIRE(info.size_known);
  CHECK(!info.size_from_unknown);
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 1536);
  CHECK(info.latent_node == "EmptySD3LatentImage");
}
