// A latent with the size of an image (inpaint, InstructPix2Pix, the Kontext rescale) takes the image's
// size where the workflow sets it, and is unknown where it does not (issue 19, item 2): before, every such
// latent was taken as 1024x1024 with a note, and the verdict rested on it.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/workflow/workflow.hpp"
#include "workflow/flux_fill_workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

json fill_with_image(const json& image_node, const std::string& conditioning = "InpaintModelConditioning") {
  return flux_fill_workflow(image_node, conditioning);
}

json load_image() { return {{"class_type", "LoadImage"}, {"inputs", {{"image", "photo.png"}}}}; }

json scaled(int w, int h) {
  return {{"class_type", "ImageScale"},
          {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"}, {"width", w}, {"height", h}, {"crop", "center"}}}};
}

}  // namespace

TEST_CASE("an inpaint latent from a loaded image has an unknown size naming the image", "[workflow][image_size]") {
  for (const char* conditioning : {"InpaintModelConditioning", "InstructPixToPixConditioning"}) {
    DYNAMIC_SECTION(conditioning) {
      const WorkflowInfo info = analyse_workflow(fill_with_image(load_image(), conditioning), "fill");
      CHECK(!info.size_known);
      REQUIRE(info.size_from_unknown);
      CHECK(info.size_from_unknown->id == "10");
      CHECK(info.size_from_unknown->type == "LoadImage");
      CHECK(info.size_from_unknown->why.find("loaded image") != std::string::npos);
      CHECK(info.unknown_nodes.empty());
    }
  }
}

TEST_CASE("an inpaint latent takes the size an ImageScale sets, through nodes that keep it", "[workflow][image_size]") {
  json wf = fill_with_image(scaled(832, 1216));
  wf["11"] = load_image();
  WorkflowInfo info = analyse_workflow(wf, "scaled");
  CHECK(info.size_known);
  CHECK(!info.size_from_unknown);
  CHECK(info.job.width == 832);
  CHECK(info.job.height == 1216);
  // A Canny edge map keeps its input's size.
  wf["10"] = {{"class_type", "Canny"}, {"inputs", {{"image", json::array({"12", 0})}, {"low_threshold", 0.4}, {"high_threshold", 0.8}}}};
  wf["12"] = scaled(640, 480);
  info = analyse_workflow(wf, "canny");
  CHECK(info.job.width == 640);
  CHECK(info.job.height == 480);
  // An ImageScale with 0 for a side keeps the image's aspect: of a loaded image of unknown size the size is
  // unknown, naming the image; of a 1000 x 600 image the height is max(1, round(600 x 1024 / 1000)) = 614.
  wf = fill_with_image(scaled(1024, 0));
  wf["11"] = load_image();
  info = analyse_workflow(wf, "aspect");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "LoadImage");
  wf["11"] = {{"class_type", "EmptyImage"}, {"inputs", {{"width", 1000}, {"height", 600}, {"batch_size", 1}, {"color", 0}}}};
  info = analyse_workflow(wf, "aspect of a known image");
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 614);
}

TEST_CASE("the Kontext rescale sizes at its largest resolution, unless a latent node sets the size", "[workflow][image_size]") {
  json wf = fill_with_image({{"class_type", "FluxKontextImageScale"}, {"inputs", {{"image", json::array({"11", 0})}}}});
  wf["11"] = load_image();
  wf["5"] = {{"class_type", "VAEEncode"}, {"inputs", {{"pixels", json::array({"10", 0})}, {"vae", json::array({"3", 0})}}}};
  wf["6"]["inputs"]["positive"] = json::array({"4", 0});
  wf["6"]["inputs"]["negative"] = json::array({"4", 0});
  wf["6"]["inputs"]["latent_image"] = json::array({"5", 0});
  WorkflowInfo info = analyse_workflow(wf, "kontext");
  CHECK(info.size_known);
  CHECK(info.job.width * info.job.height == 1328 * 800);
  wf["13"] = {{"class_type", "EmptySD3LatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}};
  wf["6"]["inputs"]["latent_image"] = json::array({"13", 0});
  info = analyse_workflow(wf, "kontext with a latent");
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 1024);
  CHECK(info.width.size() == 1);  // the latent node's widgets stay there for a preset to rewrite
}

TEST_CASE("a plan of an inpaint on a loaded image says unknown and names the image", "[plan][image_size]") {
  const json out = headroom::api::plan({{"workflow", fill_with_image(load_image())}, {"vram", "24GB"}});
  CHECK(out["verdict"] == "unknown");
  CHECK(out["not_covered"]["kind"] == "size");
  CHECK(out["not_covered"]["node_type"] == "LoadImage");
  CHECK(out["reason"].get<std::string>().find("LoadImage #10, a loaded image") != std::string::npos);
  CHECK(out["changes"].empty());
}

TEST_CASE("the 2026 Wan dancer and SCAIL nodes set the latent from their widgets", "[workflow][image_size]") {
  json wf = fill_with_image(load_image());
  wf["5"] = {{"class_type", "WanDancerVideo"},
             {"inputs", {{"positive", json::array({"4", 0})}, {"negative", json::array({"4", 0})}, {"vae", json::array({"3", 0})},
                         {"width", 480}, {"height", 832}, {"length", 149}}}};
  WorkflowInfo info = analyse_workflow(wf, "dancer");
  CHECK(info.size_known);
  CHECK(info.job.width == 480);
  CHECK(info.job.height == 832);
  CHECK(info.job.frames == 149);
  CHECK(info.job.batch == 1);
  wf["5"] = {{"class_type", "WanSCAILToVideo"},
             {"inputs", {{"positive", json::array({"4", 0})}, {"negative", json::array({"4", 0})}, {"vae", json::array({"3", 0})},
                         {"width", 512}, {"height", 896}, {"length", 81}, {"batch_size", 2}, {"pose_strength", 1.0},
                         {"pose_start", 0.0}, {"pose_end", 1.0}, {"video_frame_offset", 0}, {"previous_frame_count", 5}}}};
  info = analyse_workflow(wf, "scail");
  CHECK(info.job.width == 512);
  CHECK(info.job.height == 896);
  CHECK(info.job.frames == 81);
  CHECK(info.job.batch == 2);
}

namespace {

json total_pixels(double megapixels, int steps) {
  return {{"class_type", "ImageScaleToTotalPixels"},
          {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"}, {"megapixels", megapixels},
                      {"resolution_steps", steps}}}};
}

bool has_note(const WorkflowInfo& info, const std::string& part) {
  for (const auto& n : info.job.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("ImageScaleToTotalPixels keeps a known image's aspect at its pixel count", "[workflow][image_size]") {
  json wf = fill_with_image(total_pixels(1.0, 1));
  wf["11"] = scaled(2000, 1000);
  wf["12"] = load_image();
  wf["11"]["inputs"]["image"] = json::array({"12", 0});
  WorkflowInfo info = analyse_workflow(wf, "total pixels");
  REQUIRE(info.size_known);
  // ComfyUI: scale = sqrt(1 x 1024^2 / (2000 x 1000)); round(2000 x scale) = 1448, round(1000 x scale) = 724.
  CHECK(info.job.width == 1448);
  CHECK(info.job.height == 724);
  CHECK(!has_note(info, "aspect is unknown"));
  // resolution_steps rounds each side to its multiple.
  wf["10"] = total_pixels(1.0, 16);
  info = analyse_workflow(wf, "total pixels, steps");
  CHECK(info.job.width == 1456);
  CHECK(info.job.height == 720);
}

TEST_CASE("ImageScaleToTotalPixels of a loaded image is sized at its pixel count and says the aspect is unknown",
          "[workflow][image_size]") {
  json wf = fill_with_image(total_pixels(1.5, 1));
  wf["11"] = load_image();
  WorkflowInfo info = analyse_workflow(wf, "loaded");
  REQUIRE(info.size_known);
  CHECK(!info.size_from_unknown);
  CHECK(info.job.width == 1254);  // round(sqrt(1.5 x 1024^2)): the pixel count, as a square
  CHECK(info.job.height == 1254);
  CHECK(has_note(info, "ImageScaleToTotalPixels #10: the input image's aspect is unknown (LoadImage #11"));
  // A megapixel count outside ComfyUI's range is not guessed at: the size stays unknown, naming the node.
  wf["10"] = total_pixels(0.0, 1);
  info = analyse_workflow(wf, "zero");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "ImageScaleToTotalPixels");
  CHECK(info.size_from_unknown->why.find("megapixels") != std::string::npos);
}

TEST_CASE("ImageScaleBy scales a known image by its factor, and a loaded one stays unknown", "[workflow][image_size]") {
  json wf = fill_with_image({{"class_type", "ImageScaleBy"},
                             {"inputs", {{"image", json::array({"11", 0})}, {"upscale_method", "lanczos"}, {"scale_by", 0.5}}}});
  wf["11"] = scaled(1281, 720);
  wf["12"] = load_image();
  wf["11"]["inputs"]["image"] = json::array({"12", 0});
  WorkflowInfo info = analyse_workflow(wf, "scale_by");
  CHECK(info.size_known);
  CHECK(info.job.width == 640);  // round(640.5): half to even, as Python's round in ComfyUI
  CHECK(info.job.height == 360);
  wf["10"]["inputs"]["image"] = json::array({"12", 0});
  info = analyse_workflow(wf, "scale_by_loaded");
  CHECK(!info.size_known);
  REQUIRE(info.size_from_unknown);
  CHECK(info.size_from_unknown->type == "LoadImage");
}

TEST_CASE("ResizeImageMaskNode sets the size in 'scale dimensions' and bounds a longer side", "[workflow][image_size]") {
  const auto resize = [](const std::string& mode) {
    return json{{"class_type", "ResizeImageMaskNode"},
                {"inputs", {{"input", json::array({"11", 0})}, {"resize_type", mode}, {"resize_type.width", 1280},
                            {"resize_type.height", 704}, {"resize_type.crop", "center"}, {"resize_type.longer_size", 1536},
                            {"scale_method", "area"}}}};
  };
  json wf = fill_with_image(resize("scale dimensions"));
  wf["11"] = load_image();
  WorkflowInfo info = analyse_workflow(wf, "dimensions");
  CHECK(info.size_known);
  CHECK(info.job.width == 1280);
  CHECK(info.job.height == 704);
  // Of a loaded image of unknown size, a longer side of 1536 is at most a 1536 square (the other modes:
  // test_workflow_image_resize.cpp).
  wf["10"] = resize("scale longer dimension");
  info = analyse_workflow(wf, "longer");
  REQUIRE(info.size_known);
  CHECK(info.job.width == 1536);
  CHECK(info.job.height == 1536);
  CHECK(has_note(info, "at_most"));
}
