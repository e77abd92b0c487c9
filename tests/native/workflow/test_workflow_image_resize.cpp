// The image-size nodes of current ComfyUI (issue 26): ResizeImageMaskNode in each of its nine modes, the
// max-dimension, pad and upscale-model nodes. Each size below is what ComfyUI's own arithmetic gives for the
// input (worked by hand in the comments, Python's round: half to even), and where the input's size is not
// known the size is a bound (at_most), a pixel count (pixel_count) or unknown naming the node, said in a note.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/image_rules.hpp"
#include "core/workflow/workflow.hpp"
#include "workflow/flux_fill_workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

// A Flux fill workflow (API format) whose InpaintModelConditioning encodes the image of node 10; node 11 is
// an EmptyImage of `w` x `h` (or a LoadImage when w is 0) feeding it.
json fill(const json& image_node, int w, int h) {
  json wf = flux_fill_workflow(image_node, "InpaintModelConditioning");
  if (w > 0)
    wf["11"] = {{"class_type", "EmptyImage"}, {"inputs", {{"width", w}, {"height", h}, {"batch_size", 1}, {"color", 0}}}};
  else
    wf["11"] = {{"class_type", "LoadImage"}, {"inputs", {{"image", "photo.png"}}}};
  return wf;
}

// ResizeImageMaskNode in `mode`, its sub-widgets named resize_type.<widget> as an API prompt names them.
json resize(const std::string& mode, const json& widgets) {
  json inputs = {{"input", json::array({"11", 0})}, {"resize_type", mode}, {"scale_method", "area"}};
  for (const auto& [k, v] : widgets.items()) inputs["resize_type." + k] = v;
  return {{"class_type", "ResizeImageMaskNode"}, {"inputs", inputs}};
}

std::pair<int, int> size_of(const json& wf) {
  const WorkflowInfo info = analyse_workflow(wf, "resize");
  if (!info.size_known) return {0, 0};
  return {info.job.width, info.job.height};
}

bool has_note(const WorkflowInfo& info, const std::string& part) {
  for (const auto& n : info.job.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

using Size = std::pair<int, int>;

}  // namespace

TEST_CASE("ResizeImageMaskNode sizes each mode as ComfyUI computes it", "[workflow][image_size][resize]") {
  // A 1000 x 600 image.
  CHECK(size_of(fill(resize("scale dimensions", {{"width", 1280}, {"height", 704}, {"crop", "center"}}), 1000, 600)) == Size{1280, 704});
  // height 0: max(1, round(600 x 512 / 1000)) = round(307.2) = 307; both 0 hand the image on.
  CHECK(size_of(fill(resize("scale dimensions", {{"width", 512}, {"height", 0}, {"crop", "center"}}), 1000, 600)) == Size{512, 307});
  CHECK(size_of(fill(resize("scale dimensions", {{"width", 0}, {"height", 0}, {"crop", "disabled"}}), 1000, 600)) == Size{1000, 600});
  // round(1000 x 0.333) = 333, round(600 x 0.333) = round(199.8) = 200.
  CHECK(size_of(fill(resize("scale by multiplier", {{"multiplier", 0.333}}), 1000, 600)) == Size{333, 200});
  // w > h: h = round((600 / 1000) x 1280) = 768.
  CHECK(size_of(fill(resize("scale longer dimension", {{"longer_size", 1280}}), 1000, 600)) == Size{1280, 768});
  CHECK(size_of(fill(resize("scale longer dimension", {{"longer_size", 1280}}), 600, 1000)) == Size{768, 1280});
  // h < w: w = round((1000 / 600) x 512) = round(853.33) = 853.
  CHECK(size_of(fill(resize("scale shorter dimension", {{"shorter_size", 512}}), 1000, 600)) == Size{853, 512});
  CHECK(size_of(fill(resize("scale shorter dimension", {{"shorter_size", 512}}), 700, 700)) == Size{512, 512});
  // h = round(600 x 640 / 1000) = 384; of a 1000 x 601 image round(300.5) is 300 (half to even), not 301.
  CHECK(size_of(fill(resize("scale width", {{"width", 640}}), 1000, 600)) == Size{640, 384});
  CHECK(size_of(fill(resize("scale width", {{"width", 500}}), 1000, 601)) == Size{500, 300});
  // w = round(1000 x 300 / 600) = 500.
  CHECK(size_of(fill(resize("scale height", {{"height", 300}}), 1000, 600)) == Size{500, 300});
  // total = int(1.0 x 1024^2) = 1048576, scale = sqrt(1048576 / 600000): round(1321.997) = 1322, round(793.198) = 793.
  CHECK(size_of(fill(resize("scale total pixels", {{"megapixels", 1.0}}), 1000, 600)) == Size{1322, 793});
  // floor(1000 / 64) x 64 = 960, floor(600 / 64) x 64 = 576; a multiple of 1 hands the image on.
  CHECK(size_of(fill(resize("scale to multiple", {{"multiple", 64}}), 1000, 600)) == Size{960, 576});
  CHECK(size_of(fill(resize("scale to multiple", {{"multiple", 1}}), 1000, 600)) == Size{1000, 600});
  // "match size" takes the other image's size.
  json wf = fill(resize("match size", {{"crop", "center"}}), 1000, 600);
  wf["10"]["inputs"]["resize_type.match"] = json::array({"12", 0});
  wf["12"] = {{"class_type", "EmptyImage"}, {"inputs", {{"width", 768}, {"height", 512}, {"batch_size", 1}, {"color", 0}}}};
  CHECK(size_of(wf) == Size{768, 512});
}

TEST_CASE("a mode the data does not list leaves the size unknown naming the mode", "[workflow][image_size][resize]") {
  const WorkflowInfo info = analyse_workflow(fill(resize("scale sideways", {{"width", 512}}), 1000, 600), "mode");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "ResizeImageMaskNode");
  CHECK(info.size_from_unknown->why.find("'scale sideways'") != std::string::npos);
}

TEST_CASE("of a loaded image of unknown size a longer side is a bound and a pixel count a square", "[workflow][image_size][resize]") {
  // The longer side becomes 2048: a 2048 x 2048 square holds any such image (at_most).
  WorkflowInfo info = analyse_workflow(fill(resize("scale longer dimension", {{"longer_size", 2048}}), 0, 0), "longer");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 2048);
  CHECK(info.job.height == 2048);
  CHECK(has_note(info, "size_origin at_most"));
  info = analyse_workflow(fill({{"class_type", "ImageScaleToMaxDimension"},
                                {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "area"}, {"largest_size", 1536}}}},
                               0, 0),
                          "max dimension");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1536);
  CHECK(has_note(info, "size_origin at_most"));
  // 1 MP of an unknown aspect: the 1024 x 1024 square of that count (pixel_count).
  info = analyse_workflow(fill(resize("scale total pixels", {{"megapixels", 1.0}}), 0, 0), "total");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 1024);
  CHECK(has_note(info, "size_origin pixel_count"));
  // The shorter side, a width or a factor bound nothing: unknown, naming the loaded image.
  for (const json& node : {resize("scale shorter dimension", {{"shorter_size", 512}}), resize("scale width", {{"width", 512}}),
                           resize("scale by multiplier", {{"multiplier", 2.0}})}) {
    info = analyse_workflow(fill(node, 0, 0), "unbounded");
    CHECK(!info.size_known);
    REQUIRE(info.size_from_unknown);
    CHECK(info.size_from_unknown->type == "LoadImage");
  }
}

TEST_CASE("a bound is kept only where the next node keeps it", "[workflow][image_size][resize]") {
  // LoadImage -> max dimension 1024 (at most 1024 x 1024) -> #13.
  const auto chained = [](const json& next) {
    json wf = fill(next, 0, 0);
    wf["13"] = {{"class_type", "ImageScaleToMaxDimension"},
                {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "area"}, {"largest_size", 1024}}}};
    wf["10"]["inputs"][wf["10"]["inputs"].contains("input") ? "input" : "image"] = json::array({"13", 0});
    return analyse_workflow(wf, "chain");
  };
  // Padding and a multiple keep the bound: (1024 + 64 + 64) x (1024 + 0 + 128) and floor to 100.
  WorkflowInfo info = chained({{"class_type", "ImagePadForOutpaint"},
                               {"inputs", {{"image", json::array({"13", 0})}, {"left", 64}, {"top", 0}, {"right", 64},
                                           {"bottom", 128}, {"feathering", 40}}}});
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1152);
  CHECK(info.job.height == 1152);
  CHECK(has_note(info, "at_most"));
  info = chained(resize("scale to multiple", {{"multiple", 100}}));
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1000);
  // A width of the bound's square is no bound of the image's height: unknown, naming the node.
  info = chained(resize("scale width", {{"width", 512}}));
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "ResizeImageMaskNode");
  CHECK(info.size_from_unknown->why.find("at_most") != std::string::npos);
}

TEST_CASE("max dimension, resize-and-pad, outpaint padding and alpha join size as ComfyUI does", "[workflow][image_size][resize]") {
  // 600 x 1000, h > w: w = round((600 / 1000) x 1024) = round(614.4) = 614.
  CHECK(size_of(fill({{"class_type", "ImageScaleToMaxDimension"},
                      {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "area"}, {"largest_size", 1024}}}},
                     600, 1000)) == Size{614, 1024});
  // ResizeAndPadImage pads onto its target canvas whatever the image (even one of unknown size).
  const json pad = {{"class_type", "ResizeAndPadImage"},
                    {"inputs", {{"image", json::array({"11", 0})}, {"target_width", 1024}, {"target_height", 768},
                                {"padding_color", "white"}, {"interpolation", "area"}}}};
  CHECK(size_of(fill(pad, 300, 900)) == Size{1024, 768});
  CHECK(size_of(fill(pad, 0, 0)) == Size{1024, 768});
  // 512 x 512 padded left 64, right 128, top 0, bottom 32: 704 x 544.
  CHECK(size_of(fill({{"class_type", "ImagePadForOutpaint"},
                      {"inputs", {{"image", json::array({"11", 0})}, {"left", 64}, {"top", 0}, {"right", 128},
                                  {"bottom", 32}, {"feathering", 40}}}},
                     512, 512)) == Size{704, 544});
  // JoinImageWithAlpha resizes the mask to the image: the image's size, whatever the mask's.
  json wf = fill({{"class_type", "JoinImageWithAlpha"},
                  {"inputs", {{"image", json::array({"11", 0})}, {"alpha", json::array({"12", 1})}}}},
                 640, 480);
  wf["12"] = {{"class_type", "LoadImage"}, {"inputs", {{"image", "mask.png"}}}};
  CHECK(size_of(wf) == Size{640, 480});
}

TEST_CASE("an upscale model multiplies the sides by the factor its file name states", "[workflow][image_size][resize]") {
  const auto upscaled = [](const std::string& file) {
    json wf = fill({{"class_type", "ImageUpscaleWithModel"},
                    {"inputs", {{"upscale_model", json::array({"14", 0})}, {"image", json::array({"11", 0})}}}},
                   320, 240);
    wf["14"] = {{"class_type", "UpscaleModelLoader"}, {"inputs", {{"model_name", file}}}};
    return analyse_workflow(wf, "upscale");
  };
  WorkflowInfo info = upscaled("RealESRGAN_x4plus.safetensors");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1280);
  CHECK(info.job.height == 960);
  info = upscaled("2x-AnimeSharpV4_RCAN.safetensors");
  CHECK(info.job.width == 640);
  info = upscaled("ultrasharp.pth");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "UpscaleModelLoader");
  CHECK(info.size_from_unknown->why.find("scale factor") != std::string::npos);
}

TEST_CASE("the scale token of an upscale model's file name", "[workflow][image_size][resize]") {
  CHECK(upscale_factor_of_name("RealESRGAN_x4plus.safetensors") == 4);
  CHECK(upscale_factor_of_name("4x-UltraSharp.pth") == 4);
  CHECK(upscale_factor_of_name("4xNMKD-Siax_200k.pth") == 4);
  CHECK(upscale_factor_of_name("upscale/1x-ITF-SkinDiffDetail.pth") == 1);
  CHECK(upscale_factor_of_name("sdxl_upscaler.pth") == std::nullopt);  // `xl` is no factor
  CHECK(upscale_factor_of_name("flux4x.pth") == std::nullopt);         // mid-word
  CHECK(upscale_factor_of_name("2x_to_4x.pth") == std::nullopt);       // two that disagree
  CHECK(upscale_factor_of_name("tile_2x2.pth") == std::nullopt);       // a grid
}

TEST_CASE("a UI-format ResizeImageMaskNode reads its mode's widgets, and passes its input on when bypassed",
          "[workflow][image_size][resize]") {
  // LoadImage-free: EmptyImage #11 (1000 x 600) -> ResizeImageMaskNode #10 -> InpaintModelConditioning #5.
  const auto ui = [](const json& widgets, int mode) {
    json wf = json::parse(R"({"nodes": [
      {"id": 1, "type": "UNETLoader", "widgets_values": ["flux1-fill-dev.safetensors", "default"], "outputs": [{"name": "MODEL", "links": [1]}]},
      {"id": 2, "type": "DualCLIPLoader", "widgets_values": ["t5xxl_fp16.safetensors", "clip_l.safetensors", "flux", "default"], "outputs": [{"name": "CLIP", "links": [2]}]},
      {"id": 3, "type": "VAELoader", "widgets_values": ["ae.safetensors"], "outputs": [{"name": "VAE", "links": [3, 9]}]},
      {"id": 4, "type": "CLIPTextEncode", "inputs": [{"name": "clip", "link": 2}], "widgets_values": ["a"], "outputs": [{"name": "CONDITIONING", "links": [4, 5]}]},
      {"id": 11, "type": "EmptyImage", "widgets_values": [1000, 600, 1, 0], "outputs": [{"name": "IMAGE", "links": [6]}]},
      {"id": 10, "type": "ResizeImageMaskNode", "inputs": [{"name": "input", "link": 6}], "outputs": [{"name": "resized", "links": [7]}]},
      {"id": 5, "type": "InpaintModelConditioning", "inputs": [{"name": "positive", "link": 4}, {"name": "negative", "link": 5}, {"name": "vae", "link": 3}, {"name": "pixels", "link": 7}], "widgets_values": [true], "outputs": [{"name": "positive", "links": [10]}, {"name": "negative", "links": [11]}, {"name": "latent", "links": [12]}]},
      {"id": 6, "type": "KSampler", "inputs": [{"name": "model", "link": 1}, {"name": "positive", "link": 10}, {"name": "negative", "link": 11}, {"name": "latent_image", "link": 12}], "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1], "outputs": [{"name": "LATENT", "links": [13]}]},
      {"id": 7, "type": "VAEDecode", "inputs": [{"name": "samples", "link": 13}, {"name": "vae", "link": 9}], "outputs": [{"name": "IMAGE", "links": [14]}]},
      {"id": 8, "type": "SaveImage", "inputs": [{"name": "images", "link": 14}], "widgets_values": ["x"]}
    ], "links": [[1, 1, 0, 6, 0, "MODEL"], [2, 2, 0, 4, 0, "CLIP"], [3, 3, 0, 5, 2, "VAE"], [4, 4, 0, 5, 0, "CONDITIONING"],
                 [5, 4, 0, 5, 1, "CONDITIONING"], [6, 11, 0, 10, 0, "IMAGE"], [7, 10, 0, 5, 3, "IMAGE"], [9, 3, 0, 7, 1, "VAE"],
                 [10, 5, 0, 6, 1, "CONDITIONING"], [11, 5, 1, 6, 2, "CONDITIONING"], [12, 5, 2, 6, 3, "LATENT"],
                 [13, 6, 0, 7, 0, "LATENT"], [14, 7, 0, 8, 0, "IMAGE"]]})");
    wf["nodes"][5]["widgets_values"] = widgets;
    wf["nodes"][5]["mode"] = mode;
    return analyse_workflow(wf, "ui");
  };
  // [resize_type, longer_size, scale_method]: the mode's own order, not that of "scale dimensions".
  WorkflowInfo info = ui({"scale longer dimension", 2048, "lanczos"}, 0);
  REQUIRE(info.size_known);
  CHECK(info.job.width == 2048);
  CHECK(info.job.height == 1229);  // round((600 / 1000) x 2048) = round(1228.8)
  info = ui({"scale dimensions", 832, 0, "center", "area"}, 0);
  CHECK(info.job.width == 832);
  CHECK(info.job.height == 499);  // round(600 x 832 / 1000) = round(499.2)
  // Bypassed (mode 4), it hands its input on as ComfyUI does: the image's own 1000 x 600.
  info = ui({"scale by multiplier", 4, "lanczos"}, 4);
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1000);
  CHECK(info.job.height == 600);
}

namespace {

// A comfy_nodes.json of one loader and one resize node `rule`.
std::string load_error(const json& rule) {
  const json data = {{"weight_dtypes", {{"precisions", {{"fp8_e5m2", "fp8_e5m2"}}}}},
                     {"loader_roles", {{"vae", {{"folders", {"vae"}}, {"file_widgets", {{"vae_name"}}}}}}},
                     {"nodes", {{"VAELoader", {{"widgets", {"vae_name"}}, {"loads", "vae"}}}, {"Resize", rule}}}};
  try {
    load_comfy_nodes(data, "nodes-test.json");
  } catch (const headroom::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a size rule that is mistyped or doubled fails at load naming the node and the key", "[workflow][image_size][resize]") {
  const json modes = {{"widget", "resize_type"}, {"input", "input"},
                      {"modes", {{"scale width", {{"widgets", {"resize_type", "resize_type.width"}},
                                                  {"image_side", {{"side", "width"}, {"widget", "resize_type.width"}, {"input", "input"}}}}}}}};
  CHECK(load_error({{"widgets", {"resize_type"}}, {"image_modes", modes}}).empty());
  json bad = modes;
  bad["modes"]["scale width"]["widgets"] = {"resize_type.width"};
  CHECK_THAT(load_error({{"widgets", {"resize_type"}}, {"image_modes", bad}}),
             Catch::Contains("nodes.Resize.image_modes.modes.scale width") && Catch::Contains("'widgets'"));
  bad = modes;
  bad["modes"]["scale width"]["image_side"]["side"] = "diagonal";
  CHECK_THAT(load_error({{"widgets", {"resize_type"}}, {"image_modes", bad}}), Catch::Contains("'side'") && Catch::Contains("diagonal"));
  CHECK_THAT(load_error({{"widgets", {"mode"}}, {"image_modes", modes}}), Catch::Contains("'widgets'"));
  CHECK_THAT(load_error({{"image_pad", {{"left", "l"}, {"top", "t"}, {"right", "r"}, {"bottom", "b"}, {"input", "image"}}},
                         {"image_multiple", {{"multiple", "m"}, {"input", "image"}}}}),
             Catch::Contains("nodes.Resize") && Catch::Contains("'image_multiple'") && Catch::Contains("keep one"));
}
