// What runs, once (issue 19, items 3 and 4): of several diffusion models the largest sets the peak, not
// the one whose loader comes first; the same file loaded by several nodes with the same settings is one
// model, as ComfyUI's cache (keyed by class and inputs, not node id) makes it.
#include "catch.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

json loader(const std::string& type, const std::string& widget, const std::string& file) {
  json n = {{"class_type", type}, {"inputs", {{widget, file}}}};
  if (type == "UNETLoader") n["inputs"]["weight_dtype"] = "default";
  if (type == "CLIPLoader") n["inputs"]["type"] = "wan";
  return n;
}

// Sampler `id` on model node `model`, with its own text encoding by `clip` and a save at the end.
void sampler(json& wf, const std::string& id, const std::string& model, const std::string& clip) {
  wf[id + "1"] = {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", "a"}, {"clip", json::array({clip, 0})}}}};
  wf[id + "2"] = {{"class_type", "EmptySD3LatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}};
  wf[id + "3"] = {{"class_type", "KSampler"},
                  {"inputs", {{"model", json::array({model, 0})}, {"positive", json::array({id + "1", 0})},
                              {"negative", json::array({id + "1", 0})}, {"latent_image", json::array({id + "2", 0})},
                              {"seed", 1}, {"steps", 4}, {"cfg", 1}, {"sampler_name", "euler"},
                              {"scheduler", "simple"}, {"denoise", 1}}}};
  wf[id + "4"] = {{"class_type", "SaveLatent"}, {"inputs", {{"samples", json::array({id + "3", 0})}, {"filename_prefix", "x"}}}};
}

}  // namespace

TEST_CASE("of several diffusion models the largest is estimated, whatever the node order", "[workflow][loaders]") {
  json wf;
  wf["1"] = loader("UNETLoader", "unet_name", "flux-2-klein-4b.safetensors");
  wf["2"] = loader("UNETLoader", "unet_name", "flux2_dev_fp8mixed.safetensors");
  wf["3"] = loader("UNETLoader", "unet_name", "flux-2-klein-9b.safetensors");
  wf["4"] = loader("CLIPLoader", "clip_name", "qwen_3_4b.safetensors");
  sampler(wf, "5", "1", "4");
  sampler(wf, "6", "2", "4");
  sampler(wf, "7", "3", "4");
  const WorkflowInfo info = analyse_workflow(wf, "three models");
  REQUIRE(info.job.diffusion);
  CHECK(info.job.diffusion->model == "flux2-dev");
  bool said = false;
  for (const auto& note : info.job.notes) said = said || note.find("estimate uses the largest, 'flux2_dev") != std::string::npos;
  CHECK(said);
}

TEST_CASE("one file loaded by several nodes with the same settings is counted once", "[workflow][loaders]") {
  json wf;
  wf["1"] = loader("UNETLoader", "unet_name", "wan2.1_t2v_1.3B_fp16.safetensors");
  for (const char* id : {"2", "3", "4", "5", "6"}) wf[id] = loader("CLIPLoader", "clip_name", "umt5_xxl_fp16.safetensors");
  for (const char* id : {"2", "3", "4", "5", "6"}) sampler(wf, std::string("9") + id, "1", id);
  SECTION("five text encoder loaders of one file: one umt5") {
    const WorkflowInfo info = analyse_workflow(wf, "five loaders");
    CHECK(info.job.text_encoders.size() == 1);
    CHECK(info.loaders.size() == 6);  // every loader node is still listed
  }
  SECTION("two files, or one file at two precisions, stay two") {
    wf["3"] = loader("CLIPLoader", "clip_name", "umt5_xxl_fp8_e4m3fn_scaled.safetensors");
    const WorkflowInfo info = analyse_workflow(wf, "two files");
    CHECK(info.job.text_encoders.size() == 2);
  }
}
