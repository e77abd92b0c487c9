// A workflow with two pipelines (the PiD latent-upscale template: Z-Image Turbo at 1024, then a pixel decoder Headroom
// does not know at 4096) sizes the model it estimates at the latent that model samples, not at another model's
// larger one; a second pass of the same model at a larger size still sets the size.
#include <string>

#include "catch.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom::workflow;
using nlohmann::json;

namespace {

// FLUX.1 samples EmptyLatentImage #5 (1024 x 1024); KSampler #16 then samples EmptyLatentImage #15 (2048 x 2048)
// with the model of UNETLoader `second_unet`.
json two_pipelines(const std::string& second_unet) {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
    "15": {"class_type": "EmptyLatentImage", "inputs": {"width": 2048, "height": 2048, "batch_size": 1}},
    "16": {"class_type": "KSampler", "inputs": {"model": ["14", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["15", 0], "seed": 1, "steps": 4, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "17": {"class_type": "VAEDecode", "inputs": {"samples": ["16", 0], "vae": ["3", 0]}},
    "18": {"class_type": "SaveImage", "inputs": {"images": ["17", 0], "filename_prefix": "y"}}
  })");
  wf["14"] = {{"class_type", "UNETLoader"}, {"inputs", {{"unet_name", second_unet}, {"weight_dtype", "default"}}}};
  return wf;
}

bool says_another_model_samples_the_largest(const WorkflowInfo& info) {
  for (const auto& note : info.job.notes)
    if (note.find("the largest latent (2048x2048) is KSampler #16's") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the estimated model is sized at its own latent, not at an unknown model's larger one", "[workflow][samplers]") {
  const WorkflowInfo info = analyse_workflow(two_pipelines("mystery_pixel_decoder.safetensors"), "two");
  REQUIRE(info.job.diffusion);
  CHECK(info.job.diffusion->model == "flux1-dev");
  CHECK(info.size_known);
  CHECK(info.job.width == 1024);
  CHECK(info.job.height == 1024);
  CHECK(says_another_model_samples_the_largest(info));
}

TEST_CASE("a second pass of the same model at a larger latent sets the size", "[workflow][samplers]") {
  const WorkflowInfo info = analyse_workflow(two_pipelines("flux1-dev.safetensors"), "two");
  REQUIRE(info.job.diffusion);
  CHECK(info.job.width == 2048);
  CHECK(info.job.height == 2048);
  CHECK(!says_another_model_samples_the_largest(info));
}
