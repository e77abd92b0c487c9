// A latent side a PrimitiveInt passes on, whose own value is linked from GetImageSize (the Ming-Image edit template:
// LoadImage -> GetImageSize -> PrimitiveInt -> EmptyLatentImage), runs with the image's size: the image is traced,
// and where its size is not known (a loaded image without ComfyUI's input folder) the size is unknown, naming
// LoadImage, never the stale copy the PrimitiveInt or the latent node stores.
#include <string>

#include "catch.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

// A FLUX.1 UI-format workflow whose EmptyLatentImage #9 takes its sides from PrimitiveInts #7 and #8; with
// `from_image`, their values are linked from GetImageSize #6 of LoadImage #5.
json primitive_sized(bool from_image) {
  json wf = json::parse(R"({"nodes": [
    {"id": 1, "type": "UNETLoader", "widgets_values": ["flux1-dev.safetensors", "default"], "outputs": [{"name": "MODEL", "links": [10]}]},
    {"id": 2, "type": "DualCLIPLoader", "widgets_values": ["t5xxl_fp16.safetensors", "clip_l.safetensors", "flux", "default"], "outputs": [{"name": "CLIP", "links": [11]}]},
    {"id": 3, "type": "VAELoader", "widgets_values": ["ae.safetensors"], "outputs": [{"name": "VAE", "links": [12]}]},
    {"id": 4, "type": "CLIPTextEncode", "inputs": [{"name": "clip", "link": 11}], "widgets_values": ["a"], "outputs": [{"name": "CONDITIONING", "links": [13, 14]}]},
    {"id": 5, "type": "LoadImage", "widgets_values": ["photo.png", "image"], "outputs": [{"name": "IMAGE", "links": [15]}, {"name": "MASK", "links": null}]},
    {"id": 6, "type": "GetImageSize", "inputs": [{"name": "image", "link": 15}], "outputs": [{"name": "width", "links": [16]}, {"name": "height", "links": [17]}, {"name": "batch_size", "links": null}]},
    {"id": 7, "type": "PrimitiveInt", "inputs": [{"name": "value", "widget": {"name": "value"}, "link": 16}], "widgets_values": [1024, "fixed"], "outputs": [{"name": "INT", "links": [18]}]},
    {"id": 8, "type": "PrimitiveInt", "inputs": [{"name": "value", "widget": {"name": "value"}, "link": 17}], "widgets_values": [768, "fixed"], "outputs": [{"name": "INT", "links": [19]}]},
    {"id": 9, "type": "EmptyLatentImage", "inputs": [{"name": "width", "widget": {"name": "width"}, "link": 18}, {"name": "height", "widget": {"name": "height"}, "link": 19}], "widgets_values": [512, 512, 1], "outputs": [{"name": "LATENT", "links": [20]}]},
    {"id": 10, "type": "KSampler", "inputs": [{"name": "model", "link": 10}, {"name": "positive", "link": 13}, {"name": "negative", "link": 14}, {"name": "latent_image", "link": 20}], "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1], "outputs": [{"name": "LATENT", "links": [21]}]},
    {"id": 11, "type": "VAEDecode", "inputs": [{"name": "samples", "link": 21}, {"name": "vae", "link": 12}], "outputs": [{"name": "IMAGE", "links": [22]}]},
    {"id": 12, "type": "SaveImage", "inputs": [{"name": "images", "link": 22}], "widgets_values": ["x"]}
  ], "links": [
    [10, 1, 0, 10, 0, "MODEL"], [11, 2, 0, 4, 0, "CLIP"], [12, 3, 0, 11, 1, "VAE"], [13, 4, 0, 10, 1, "CONDITIONING"],
    [14, 4, 0, 10, 2, "CONDITIONING"], [15, 5, 0, 6, 0, "IMAGE"], [16, 6, 0, 7, 0, "INT"], [17, 6, 1, 8, 0, "INT"],
    [18, 7, 0, 9, 0, "INT"], [19, 8, 0, 9, 1, "INT"], [20, 9, 0, 10, 3, "LATENT"], [21, 10, 0, 11, 0, "LATENT"],
    [22, 11, 0, 12, 0, "IMAGE"]
  ]})");
  if (!from_image) {
    for (auto& n : wf["nodes"])
      if (n["type"] == "PrimitiveInt") n["inputs"][0]["link"] = nullptr;
    wf["links"] = json::array();
    for (const auto& l : json::parse(R"([[10, 1, 0, 10, 0, "MODEL"], [11, 2, 0, 4, 0, "CLIP"], [12, 3, 0, 11, 1, "VAE"],
        [13, 4, 0, 10, 1, "CONDITIONING"], [14, 4, 0, 10, 2, "CONDITIONING"], [18, 7, 0, 9, 0, "INT"],
        [19, 8, 0, 9, 1, "INT"], [20, 9, 0, 10, 3, "LATENT"], [21, 10, 0, 11, 0, "LATENT"], [22, 11, 0, 12, 0, "IMAGE"]])"))
      wf["links"].push_back(l);
  }
  return wf;
}

int notes_about_the_input_image(const WorkflowInfo& info) {
  int n = 0;
  for (const auto& note : info.job.notes)
    if (note.find("comes from an input image (GetImageSize #6)") != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("a latent side passed on by a PrimitiveInt whose value GetImageSize sets follows the image",
          "[workflow][image_size]") {
  const WorkflowInfo info = analyse_workflow(primitive_sized(true), "primitive");
  CHECK_FALSE(info.size_known);  // not the PrimitiveInts' stored 1024x768, nor the latent node's 512
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "LoadImage");
  CHECK(info.size_from_unknown->id == "5");
  CHECK(notes_about_the_input_image(info) == 1);  // the first side stops the reading
}

TEST_CASE("a latent side GetImageSize computes takes the size of the image it measures", "[workflow][image_size]") {
  json wf = primitive_sized(true);
  // An ImageScale to 832x1216 between the loaded image and GetImageSize sets the size whatever the file.
  for (auto& n : wf["nodes"])
    if (n["type"] == "GetImageSize") n["inputs"][0]["link"] = 30;
  wf["nodes"].push_back(json::parse(R"({"id": 13, "type": "ImageScale", "inputs": [{"name": "image", "link": 15}],
      "widgets_values": ["lanczos", 832, 1216, "disabled"], "outputs": [{"name": "IMAGE", "links": [30]}]})"));
  for (auto& l : wf["links"])
    if (l[0] == 15) l = json::parse(R"([15, 5, 0, 13, 0, "IMAGE"])");
  wf["links"].push_back(json::parse(R"([30, 13, 0, 6, 0, "IMAGE"])"));
  const WorkflowInfo info = analyse_workflow(wf, "scaled");
  CHECK(info.size_known);
  CHECK(info.job.width == 832);
  CHECK(info.job.height == 1216);
  CHECK(info.width.empty());  // the stored copies are not what runs: a preset could not change the size there
}

TEST_CASE("a PrimitiveInt the user sets is its own value, with no note about an image", "[workflow][image_size]") {
  const WorkflowInfo info = analyse_workflow(primitive_sized(false), "primitive");
  CHECK(info.size_known);
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 768);
  CHECK(notes_about_the_input_image(info) == 0);
}
