// Each sampler's text-encode stage holds the encoders its own conditioning reads (issue 19: each sampler
// is its own job): ComfyUI loads a CLIP object when the CLIPTextEncode reading it runs, so a workflow with a
// Wan sampler (umt5) and a Qwen-Image sampler (Qwen 2.5 VL) encodes each prompt with its own encoder, the
// other one cached or evicted, never both loaded as one; every file is still counted once in host RAM.
#include <algorithm>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

json ksampler(const std::string& model, const std::string& positive, const std::string& negative,
              const std::string& latent, double cfg) {
  return {{"class_type", "KSampler"},
          {"inputs", {{"model", {model, 0}}, {"positive", {positive, 0}}, {"negative", {negative, 0}},
                      {"latent_image", {latent, 0}}, {"seed", 1}, {"steps", 20}, {"cfg", cfg},
                      {"sampler_name", "euler"}, {"scheduler", "simple"}, {"denoise", 1}}}};
}

// Wan 2.1 1.3B (#9, prompt #5 through umt5 #3) and Qwen-Image (#10, prompt #6 through Qwen 2.5 VL 7B #4),
// each decoded and saved.
json wan_and_qwen() {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.1_t2v_1.3B_fp16.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "UNETLoader", "inputs": {"unet_name": "qwen_image_fp8_e4m3fn.safetensors", "weight_dtype": "default"}},
    "3": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp16.safetensors", "type": "wan"}},
    "4": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_2.5_vl_7b_fp8_scaled.safetensors", "type": "qwen_image"}},
    "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["3", 0]}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "b", "clip": ["4", 0]}},
    "7": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 832, "height": 480, "length": 33, "batch_size": 1}},
    "8": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1328, "height": 1328, "batch_size": 1}},
    "11": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
    "12": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["11", 0]}},
    "13": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["11", 0]}},
    "14": {"class_type": "SaveImage", "inputs": {"images": ["12", 0], "filename_prefix": "a"}},
    "15": {"class_type": "SaveImage", "inputs": {"images": ["13", 0], "filename_prefix": "b"}}
  })");
  wf["9"] = ksampler("1", "5", "5", "7", 6.0);
  wf["10"] = ksampler("2", "6", "6", "8", 4.0);
  return wf;
}

const SamplerJob& sampler(const Job& job, const std::string& id) {
  auto it = std::find_if(job.samplers.begin(), job.samplers.end(), [&](const SamplerJob& s) { return s.node_id == id; });
  REQUIRE(it != job.samplers.end());
  return *it;
}

std::vector<std::string> models(const std::vector<Component>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.model);
  return out;
}

const Stage& stage(const Estimate& est, const std::string& name) {
  auto it = std::find_if(est.stages.begin(), est.stages.end(), [&](const Stage& s) { return s.name == name; });
  REQUIRE(it != est.stages.end());
  return *it;
}

bool holds(const std::vector<std::string>& labels, const std::string& name) {
  return std::find(labels.begin(), labels.end(), name) != labels.end();
}

Runtime card(std::uint64_t gib) {
  Runtime rt;
  rt.vram_bytes = gib * kGiB;
  return rt;
}

}  // namespace

TEST_CASE("each sampler's conditioning is traced to the CLIP loader that encodes it", "[workflow][samplers][text_encode]") {
  const WorkflowInfo info = analyse_workflow(wan_and_qwen(), "wan_and_qwen");
  // The workflow loads both encoders...
  CHECK(models(info.job.text_encoders) == std::vector<std::string>{"umt5-xxl", "qwen2.5-vl-7b"});
  // ...each sampler reads one.
  CHECK(models(sampler(info.job, "9").text_encoders) == std::vector<std::string>{"umt5-xxl"});
  CHECK(models(sampler(info.job, "10").text_encoders) == std::vector<std::string>{"qwen2.5-vl-7b"});
  CHECK(sampler(info.job, "9").text_encoder_loads == std::vector<std::string>{"3"});
}

TEST_CASE("a sampler's text-encode stage holds its own encoder, the other counted in host RAM", "[workflow][samplers][text_encode]") {
  const WorkflowInfo info = analyse_workflow(wan_and_qwen(), "wan_and_qwen");
  const Runtime rt = card(24);
  for (const std::string id : {"9", "10"}) {
    DYNAMIC_SECTION("sampler #" << id) {
      const SamplerJob& s = sampler(info.job, id);
      const Job j = sampler_job(info.job, s);
      CHECK(models(j.text_encoders) == models(s.text_encoders));
      const Estimate est = estimate(j, rt);
      const Stage& te = stage(est, "text_encode");
      const std::string own = s.text_encoders.front().model;
      const std::string other = own == "umt5-xxl" ? "qwen2.5-vl-7b" : "umt5-xxl";
      CHECK(holds(te.resident, own));
      CHECK_FALSE(holds(te.resident, other));
    }
  }
  // The bound job encodes with its sampler's encoder; the other file is still loaded by the run.
  const Job bound = bind_worst_sampler(info.job, rt);
  REQUIRE_FALSE(bound.bound_sampler.empty());
  const SamplerJob& b = sampler(info.job, bound.bound_sampler);
  CHECK(models(bound.text_encoders) == models(b.text_encoders));
  REQUIRE(bound.other_text_encoders.size() == 1);
  CHECK(bound.other_text_encoders[0].model.model != b.text_encoders.front().model);
  Job alone = bound;
  alone.other_text_encoders.clear();
  Runtime legacy = rt;
  legacy.loader = Runtime::Loader::Legacy;
  CHECK(estimate(bound, legacy).host_ram_bytes > estimate(alone, legacy).host_ram_bytes);
  // The plan's text-encode stage is the bound sampler's: one encoder, not both loaded as one.
  const json out = api::plan({{"workflow", wan_and_qwen()}, {"vram", "24GB"}});
  for (const auto& st : out["stages"])
    if (st["name"] == "text_encode") CHECK(st["resident"].size() == 1);
  CHECK(out["job"]["text_encoders"].size() == 1);
  CHECK(out["job"]["other_text_encoders"].size() == 1);
}

TEST_CASE("encoders of separate CLIP loaders run one after another, one CLIP object's together", "[estimate][text_encode]") {
  // Flux with CLIP-L and T5-XXL in one DualCLIPLoader, or in two CLIPLoaders whose prompts are combined.
  json dual = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "3": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["3", 0]}},
    "7": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "11": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "12": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["11", 0]}},
    "14": {"class_type": "SaveImage", "inputs": {"images": ["12", 0], "filename_prefix": "a"}}
  })");
  dual["9"] = ksampler("1", "5", "5", "7", 1.0);
  json separate = dual;
  separate["3"] = {{"class_type", "CLIPLoader"}, {"inputs", {{"clip_name", "t5xxl_fp16.safetensors"}, {"type", "flux"}}}};
  separate["4"] = {{"class_type", "CLIPLoader"}, {"inputs", {{"clip_name", "clip_l.safetensors"}, {"type", "flux"}}}};
  separate["6"] = {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", "a"}, {"clip", {"4", 0}}}}};
  separate["8"] = {{"class_type", "ConditioningCombine"}, {"inputs", {{"conditioning_1", {"5", 0}}, {"conditioning_2", {"6", 0}}}}};
  separate["9"] = ksampler("1", "8", "8", "7", 1.0);
  const Runtime rt = card(24);
  const Job dual_job = bind_worst_sampler(analyse_workflow(dual, "dual").job, rt);
  const Job separate_job = bind_worst_sampler(analyse_workflow(separate, "separate").job, rt);
  REQUIRE(models(separate_job.text_encoders) == models(dual_job.text_encoders));  // the same two files
  CHECK(separate_job.text_encoder_loads.size() == 2);
  CHECK(separate_job.text_encoder_loads[0] != separate_job.text_encoder_loads[1]);
  const Estimate dual_est = estimate(dual_job, rt), separate_est = estimate(separate_job, rt);
  const Stage& together = stage(dual_est, "text_encode");
  const Stage& apart = stage(separate_est, "text_encode");
  CHECK(together.resident.size() == 2);
  // Apart, the stage is T5's (the larger) alone: its own need is less than the two loaded as one.
  CHECK(apart.resident == std::vector<std::string>{"t5-xxl"});
  CHECK(apart.peak_bytes - apart.cached_bytes < together.peak_bytes - together.cached_bytes);
  // Host RAM holds each file once either way.
  CHECK(separate_est.host_ram_bytes == dual_est.host_ram_bytes);
}

TEST_CASE("a prompt reads a checkpoint's bundled encoders only through its CLIP output", "[workflow][samplers][text_encode]") {
  // The Flux fp8 checkpoint bundles CLIP-L and an fp8 T5; here its MODEL and VAE run, and the prompt is
  // encoded by a separate T5 loader, as in the LTX-Video templates.
  json wf = json::parse(R"({
    "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "flux1-dev-fp8.safetensors"}},
    "3": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "flux"}},
    "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["3", 0]}},
    "6": {"class_type": "InpaintModelConditioning", "inputs": {"positive": ["5", 0], "negative": ["5", 0], "vae": ["1", 2],
                                                               "pixels": ["7", 0], "mask": ["7", 1], "noise_mask": true}},
    "7": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
    "8": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "12": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 2]}},
    "14": {"class_type": "SaveImage", "inputs": {"images": ["12", 0], "filename_prefix": "a"}}
  })");
  wf["9"] = ksampler("1", "6", "6", "8", 1.0);
  const WorkflowInfo through_vae = analyse_workflow(wf, "vae_only");
  CHECK(models(sampler(through_vae.job, "9").text_encoders) == std::vector<std::string>{"t5-xxl"});
  wf["5"]["inputs"]["clip"] = {"1", 1};  // now the prompt reads the checkpoint's CLIP
  const WorkflowInfo through_clip = analyse_workflow(wf, "checkpoint_clip");
  const auto encoders = models(sampler(through_clip.job, "9").text_encoders);
  CHECK(std::find(encoders.begin(), encoders.end(), "clip-l") != encoders.end());
  CHECK(sampler(through_clip.job, "9").text_encoder_loads.front() == "1");
}
