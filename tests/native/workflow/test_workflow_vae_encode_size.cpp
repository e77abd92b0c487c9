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

namespace {

// TextEncodeQwenImage21 (#5) makes the sampled latent from its first reference image (node 10).
json qwen21_edit(int resolution, bool with_image) {
  json wf = encode_image(load_image());
  wf["1"]["inputs"]["unet_name"] = "qwen_image_2.1_int8_convrot.safetensors";
  wf["5"] = node("TextEncodeQwenImage21", {{"clip", json::array({"2", 0})}, {"vae", json::array({"3", 0})},
                                           {"prompt", "a"}, {"negative_prompt", ""}, {"resolution", resolution}});
  if (with_image) wf["5"]["inputs"]["images.image_1"] = json::array({"10", 0});
  wf["6"]["inputs"]["latent_image"] = json::array({"5", 2});
  return wf;
}

}  // namespace

TEST_CASE("TextEncodeQwenImage21's latent follows its resolution and its first image", "[workflow][image_size][vae_encode]") {
  // A resolution keeps the pixel count of a resolution square; the loaded image's aspect is unknown.
  WorkflowInfo info = analyse_workflow(qwen21_edit(1536, true), "resolution");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1536);
  CHECK(info.job.height == 1536);
  // Without an image the latent is the resolution square.
  info = analyse_workflow(qwen21_edit(768, false), "no image");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 768);
  // 0 keeps the image's own size: a loaded image's is unknown, and the image is named.
  info = analyse_workflow(qwen21_edit(0, true), "own size");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "LoadImage");
  // 0 with a scaled image keeps that size, rounded to multiples of 32.
  json wf = qwen21_edit(0, true);
  wf["10"] = node("ImageScale", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"}, {"width", 1000},
                                 {"height", 700}, {"crop", "center"}});
  wf["11"] = load_image();
  info = analyse_workflow(wf, "own size, scaled");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 992);
  CHECK(info.job.height == 704);
}

TEST_CASE("a subgraph instance without proxyWidgets gives its widget values in the order of its widget inputs",
          "[workflow][image_size][vae_encode]") {
  // The Qwen-Image 2.1 edit templates: the instance holds resolution 0, the inner node still shows 1024.
  const json wf = json::parse(R"({
    "nodes": [
      {"id": 1, "type": "sg", "mode": 0, "inputs": [], "outputs": [], "widgets_values": [0, "a prompt"], "properties": {}},
      {"id": 2, "type": "LoadImage", "mode": 0, "widgets_values": ["photo.png", "image"], "outputs": [{"name": "IMAGE", "links": [9]}]}
    ],
    "links": [],
    "definitions": {"subgraphs": [{
      "id": "sg", "name": "edit",
      "inputs": [{"name": "resolution", "type": "INT", "linkIds": [1]}, {"name": "prompt", "type": "STRING", "linkIds": [2]}],
      "outputs": [],
      "nodes": [
        {"id": 10, "type": "UNETLoader", "mode": 0, "widgets_values": ["qwen_image_2.1_int8_convrot.safetensors", "default"]},
        {"id": 11, "type": "CLIPLoader", "mode": 0, "widgets_values": ["qwen3vl_8b_int8_convrot.safetensors", "qwen_image", "default"]},
        {"id": 12, "type": "VAELoader", "mode": 0, "widgets_values": ["qwen_image_2.1_vae_bf16.safetensors"]},
        {"id": 13, "type": "EmptyImage", "mode": 0, "widgets_values": [1000, 700, 1, 0]},
        {"id": 14, "type": "TextEncodeQwenImage21", "mode": 0, "widgets_values": ["", "", 1024],
         "inputs": [{"name": "clip", "link": 3}, {"name": "vae", "link": 4}, {"name": "images.image_1", "link": 5},
                    {"name": "resolution", "widget": {"name": "resolution"}, "link": 1},
                    {"name": "prompt", "widget": {"name": "prompt"}, "link": 2}]},
        {"id": 15, "type": "KSampler", "mode": 0, "widgets_values": [1, "fixed", 20, 4, "euler", "simple", 1],
         "inputs": [{"name": "model", "link": 6}, {"name": "positive", "link": 7}, {"name": "negative", "link": 8}, {"name": "latent_image", "link": 10}]},
        {"id": 16, "type": "VAEDecode", "mode": 0, "inputs": [{"name": "samples", "link": 11}, {"name": "vae", "link": 12}]},
        {"id": 17, "type": "SaveImage", "mode": 0, "widgets_values": ["x"], "inputs": [{"name": "images", "link": 13}]}
      ],
      "links": [
        {"id": 1, "origin_id": -10, "origin_slot": 0, "target_id": 14, "target_slot": 3},
        {"id": 2, "origin_id": -10, "origin_slot": 1, "target_id": 14, "target_slot": 4},
        {"id": 3, "origin_id": 11, "origin_slot": 0, "target_id": 14, "target_slot": 0},
        {"id": 4, "origin_id": 12, "origin_slot": 0, "target_id": 14, "target_slot": 1},
        {"id": 5, "origin_id": 13, "origin_slot": 0, "target_id": 14, "target_slot": 2},
        {"id": 6, "origin_id": 10, "origin_slot": 0, "target_id": 15, "target_slot": 0},
        {"id": 7, "origin_id": 14, "origin_slot": 0, "target_id": 15, "target_slot": 1},
        {"id": 8, "origin_id": 14, "origin_slot": 1, "target_id": 15, "target_slot": 2},
        {"id": 10, "origin_id": 14, "origin_slot": 2, "target_id": 15, "target_slot": 3},
        {"id": 11, "origin_id": 15, "origin_slot": 0, "target_id": 16, "target_slot": 0},
        {"id": 12, "origin_id": 12, "origin_slot": 0, "target_id": 16, "target_slot": 1},
        {"id": 13, "origin_id": 16, "origin_slot": 0, "target_id": 17, "target_slot": 0}
      ]
    }]}
  })");
  const WorkflowInfo info = analyse_workflow(wf, "instance values");
  REQUIRE(info.size_known);
  // resolution 0 from the instance keeps the 1000x700 image, rounded to 32: the inner 1024 would give ~1024^2.
  CHECK(info.job.width == 992);
  CHECK(info.job.height == 704);
}
