// Each sampler is its own job (issue 19): the reader follows every sampler back to its own diffusion
// loader (through LoRA loaders, model patches and Reroutes) and to the latent node that sizes it, and the
// estimate sizes each sampler's sample stage and marks the worst as binding.
#include <algorithm>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "core/estimate/estimator.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

json ksampler(const std::string& model, const std::string& latent, double cfg, int latent_slot = 0) {
  return {{"class_type", "KSampler"},
          {"inputs", {{"model", {model, 0}}, {"positive", {"4", 0}}, {"negative", {"4", 0}},
                      {"latent_image", {latent, latent_slot}}, {"seed", 1}, {"steps", 20}, {"cfg", cfg},
                      {"sampler_name", "euler"}, {"scheduler", "simple"}, {"denoise", 1}}}};
}

// Two KSamplerAdvanced passes: #6 samples model #1 on latent #5, #7 model #2 on #6's result.
void two_passes(json& wf, double first_cfg, double second_cfg) {
  wf["6"] = ksampler("1", "5", first_cfg);
  wf["6"]["class_type"] = "KSamplerAdvanced";
  wf["7"] = ksampler("2", "6", second_cfg);
  wf["7"]["class_type"] = "KSamplerAdvanced";
}

json save(const std::string& vae_input, const std::string& vae) {
  return {{"class_type", "VAEDecode"}, {"inputs", {{"samples", {vae_input, 0}}, {"vae", {vae, 0}}}}};
}

// SDXL sampled twice: #6 on a 640x512 latent, #8 (cfg `second_cfg`) on what node `second_latent` makes of it.
json sdxl_two_pass(const std::string& second_latent, double second_cfg) {
  json wf = json::parse(R"({
    "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["1", 1]}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 640, "height": 512, "batch_size": 1}},
    "10": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "a"}}
  })");
  wf["6"] = ksampler("1", "5", 7.0);
  wf["8"] = ksampler("1", second_latent, second_cfg);
  wf["9"] = save("8", "1");
  return wf;
}

// A Flux image sampler (#8) beside a Wan 2.1 video sampler (#9), in API format (tests/data/workflows).
json flux_and_wan() {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/workflows/two_samplers_flux_wan.json");
  REQUIRE(in);
  return json::parse(in);
}

const SamplerJob& sampler(const Job& job, const std::string& id) {
  auto it = std::find_if(job.samplers.begin(), job.samplers.end(), [&](const SamplerJob& s) { return s.node_id == id; });
  REQUIRE(it != job.samplers.end());
  return *it;
}

Runtime card(std::uint64_t gib) {
  Runtime rt;
  rt.vram_bytes = gib * kGiB;
  return rt;
}

// The worst sized sampler is the one marked binding, and only one is.
void check_binding(const Estimate& est) {
  REQUIRE_FALSE(est.samplers.empty());
  std::uint64_t worst = 0;
  for (const auto& s : est.samplers) worst = std::max(worst, s.peak_bytes.value_or(0));
  CHECK(std::count_if(est.samplers.begin(), est.samplers.end(), [](const SamplerPeak& s) { return s.binding; }) == 1);
  for (const auto& s : est.samplers)
    if (s.binding) CHECK(s.peak_bytes == worst);
}

}  // namespace

TEST_CASE("two samplers on two models and two latent sizes are each their own job", "[workflow][estimate][samplers]") {
  const WorkflowInfo info = analyse_workflow(flux_and_wan(), "flux_and_wan");
  REQUIRE(info.job.samplers.size() == 2);
  const SamplerJob& flux = sampler(info.job, "8");
  const SamplerJob& wan = sampler(info.job, "9");
  REQUIRE(flux.diffusion);
  REQUIRE(wan.diffusion);
  CHECK(flux.diffusion->model == "flux1-dev");
  CHECK(wan.diffusion->model == "wan2.1-t2v-14b");  // through ModelSamplingSD3
  CHECK((flux.width == 1024 && flux.height == 1024 && flux.frames == 1));
  CHECK((wan.width == 832 && wan.height == 480 && wan.frames == 81));
  CHECK(flux.cfg == 1.0);
  CHECK(wan.cfg == 6.0);
  CHECK((flux.unknown.empty() && wan.unknown.empty()));

  const Estimate est = estimate(info.job, card(24));
  REQUIRE(est.samplers.size() == 2);
  check_binding(est);
  const auto peak = [&](const std::string& id) {
    for (const auto& s : est.samplers)
      if (s.job.node_id == id) return s.peak_bytes.value_or(0);
    return std::uint64_t{0};
  };
  CHECK(peak("8") > 0);
  CHECK(peak("8") != peak("9"));  // two models at two shapes, not one job twice
  const json j = est.to_json();
  REQUIRE(j["samplers"].size() == 2);
  CHECK(j["samplers"][0]["node_id"] == "8");
  CHECK(j["samplers"][1]["model"] == "wan2.1-t2v-14b");
  CHECK(j["samplers"][1]["frames"] == 81);
  CHECK(info.to_json()["samplers"].size() == 2);
}

TEST_CASE("SDXL base and refiner: two checkpoints, the refiner on the base's latent", "[workflow][estimate][samplers]") {
  json wf = json::parse(R"({
    "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
    "2": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_refiner_1.0.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["1", 1]}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "a"}}
  })");
  two_passes(wf, 8.0, 7.5);
  wf["8"] = save("7", "2");
  const WorkflowInfo info = analyse_workflow(wf, "sdxl_refiner");
  REQUIRE(info.job.samplers.size() == 2);
  const SamplerJob& base = sampler(info.job, "6");
  const SamplerJob& refiner = sampler(info.job, "7");
  REQUIRE((base.diffusion && refiner.diffusion));
  CHECK(base.diffusion->model == "sdxl-base");
  CHECK(refiner.diffusion->model == "sdxl-refiner");
  CHECK((refiner.size_known && refiner.width == 1024 && refiner.height == 1024));  // through the base's pass
  CHECK(base.cfg == 8.0);
  CHECK(refiner.cfg == 7.5);
  const Estimate est = estimate(info.job, card(8));
  REQUIRE(est.samplers.size() == 2);
  check_binding(est);
}

TEST_CASE("Wan 2.2 A14B's two experts: two samplers, one model, the answer unchanged", "[workflow][estimate][samplers]") {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors", "weight_dtype": "default"}},
    "3": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["3", 0]}},
    "5": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 640, "height": 640, "length": 81, "batch_size": 1}},
    "10": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
    "12": {"class_type": "SaveImage", "inputs": {"images": ["11", 0], "filename_prefix": "a"}}
  })");
  two_passes(wf, 3.5, 3.5);
  wf["11"] = save("7", "10");
  const WorkflowInfo info = analyse_workflow(wf, "a14b");
  REQUIRE(info.job.diffusion);
  CHECK(info.job.diffusion->model == "wan2.2-t2v-a14b");
  REQUIRE(info.job.samplers.size() == 2);
  for (const char* id : {"6", "7"}) {
    const SamplerJob& s = sampler(info.job, id);
    REQUIRE(s.diffusion);
    CHECK(s.diffusion->model == "wan2.2-t2v-a14b");
    CHECK((s.width == 640 && s.height == 640 && s.frames == 81));
  }
  CHECK(sampler(info.job, "6").diffusion->file != sampler(info.job, "7").diffusion->file);
  for (std::uint64_t gib : {12, 24, 80}) {
    const Estimate est = estimate(info.job, card(gib));
    Job single = info.job;
    single.samplers.clear();
    const Estimate before = estimate(single, card(gib));
    CHECK(est.peak_bytes == before.peak_bytes);
    CHECK(est.verdict == before.verdict);
    REQUIRE(est.samplers.size() == 2);
    const auto sample = std::find_if(est.stages.begin(), est.stages.end(), [](const Stage& s) { return s.name == "sample"; });
    REQUIRE(sample != est.stages.end());
    // Each expert's pass is the job's own sample stage (calibration aside, none here).
    for (const auto& s : est.samplers) CHECK(s.peak_bytes == sample->peak_bytes);
    check_binding(est);
  }
}

TEST_CASE("a sampler's model through two LoRA loaders and a Reroute reaches its loader", "[workflow][samplers]") {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "LoraLoaderModelOnly", "inputs": {"model": ["1", 0], "lora_name": "a.safetensors", "strength_model": 1}},
    "3": {"class_type": "Reroute", "inputs": {"": ["2", 0]}},
    "20": {"class_type": "LoraLoaderModelOnly", "inputs": {"model": ["3", 0], "lora_name": "b.safetensors", "strength_model": 1}},
    "21": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["21", 0]}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1344, "height": 768, "batch_size": 2}},
    "10": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "12": {"class_type": "SaveImage", "inputs": {"images": ["11", 0], "filename_prefix": "a"}}
  })");
  wf["6"] = ksampler("20", "5", 1.0);
  wf["11"] = save("6", "10");
  const WorkflowInfo info = analyse_workflow(wf, "loras");
  REQUIRE(info.job.samplers.size() == 1);
  const SamplerJob& s = info.job.samplers.front();
  REQUIRE(s.diffusion);
  CHECK(s.diffusion->model == "flux1-dev");
  CHECK(s.diffusion->file == "flux1-dev.safetensors");
  CHECK((s.width == 1344 && s.height == 768 && s.batch == 2));
  CHECK(s.unknown.empty());
  CHECK(s.lora_bytes == 0);  // not read without a models folder
}

TEST_CASE("a sampler on an upscaled latent is sized at the upscaled size", "[workflow][samplers]") {
  json wf = sdxl_two_pass("7", 7.0);
  wf["7"] = {{"class_type", "LTXVLatentUpsampler"}, {"inputs", {{"samples", {"6", 0}}}}};
  const WorkflowInfo info = analyse_workflow(wf, "upscale");
  REQUIRE(info.job.samplers.size() == 2);
  CHECK((sampler(info.job, "6").width == 640 && sampler(info.job, "6").height == 512));
  CHECK((sampler(info.job, "8").width == 1280 && sampler(info.job, "8").height == 1024));
  const Estimate est = estimate(info.job, card(12));
  check_binding(est);
  for (const auto& s : est.samplers) CHECK(s.binding == (s.job.node_id == "8"));
}

TEST_CASE("a sampler whose latent comes from an unknown node names it and withholds the size", "[workflow][samplers]") {
  json wf = flux_and_wan();
  wf["6"] = {{"class_type", "MysteryLatentMaker"}, {"inputs", {{"frames", 81}}}};
  const WorkflowInfo info = analyse_workflow(wf, "unknown_latent");
  const SamplerJob& wan = sampler(info.job, "9");
  CHECK_FALSE(wan.size_known);
  CHECK(wan.unknown.find("MysteryLatentMaker #6") != std::string::npos);
  CHECK(sampler(info.job, "8").size_known);
  const Estimate est = estimate(info.job, card(24));
  for (const auto& s : est.samplers)
    if (s.job.node_id == "9") {
      CHECK_FALSE(s.peak_bytes);
      CHECK(s.unsized.find("MysteryLatentMaker #6") != std::string::npos);
    }
}

TEST_CASE("a sampler's model through a switch is the branch the switch selects", "[workflow][samplers]") {
  for (bool on : {true, false}) {
    DYNAMIC_SECTION("switch " << on) {
      json wf = flux_and_wan();
      wf["15"] = {{"class_type", "ComfySwitchNode"},
                  {"inputs", {{"switch", on}, {"on_true", {"1", 0}}, {"on_false", {"7", 0}}}}};
      wf["8"]["inputs"]["model"] = {"15", 0};
      const WorkflowInfo info = analyse_workflow(wf, "switch");
      const SamplerJob& s = sampler(info.job, "8");
      REQUIRE(s.diffusion);
      CHECK(s.diffusion->model == (on ? "flux1-dev" : "wan2.1-t2v-14b"));
      CHECK(s.unknown.empty());
    }
  }
}

TEST_CASE("an audio-video latent is followed through its video part to the upscaled size", "[workflow][samplers]") {
  json wf = sdxl_two_pass("21", 1.0);
  wf["20"] = {{"class_type", "LTXVSeparateAVLatent"}, {"inputs", {{"av_latent", {"6", 0}}}}};
  wf["7"] = {{"class_type", "LTXVLatentUpsampler"}, {"inputs", {{"samples", {"20", 0}}}}};
  wf["21"] = {{"class_type", "LTXVConcatAVLatent"}, {"inputs", {{"video_latent", {"7", 0}}, {"audio_latent", {"20", 1}}}}};
  const WorkflowInfo info = analyse_workflow(wf, "av");
  const SamplerJob& second = sampler(info.job, "8");
  CHECK(second.unknown.empty());
  CHECK((second.size_known && second.width == 1280 && second.height == 1024));
}
