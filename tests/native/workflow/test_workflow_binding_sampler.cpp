// The verdict, the stages and the plan are the binding sampler's (issue 19): a workflow whose worst
// sampler is not the job the reader assembles (the largest model at the largest latent with the first cfg
// read) gets that sampler's figures, and the decode is of the latent the last pass leaves.
#include <algorithm>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/sampler_binding.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

json ksampler(const std::string& model, const std::string& latent, double cfg) {
  return {{"class_type", "KSampler"},
          {"inputs", {{"model", {model, 0}}, {"positive", {"4", 0}}, {"negative", {"4", 0}},
                      {"latent_image", {latent, 0}}, {"seed", 1}, {"steps", 20}, {"cfg", cfg},
                      {"sampler_name", "euler"}, {"scheduler", "simple"}, {"denoise", 1}}},
          {"_meta", {{"title", "KSampler"}}}};
}

// A Flux image sampler (#8, titled "Flux pass") beside a Wan 2.1 video sampler (#9, titled only with its
// type), each decoded on its own (tests/data/workflows).
json flux_and_wan() {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/tests/data/workflows/two_samplers_flux_wan.json");
  REQUIRE(in);
  return json::parse(in);
}

// A first pass of FLUX.1 dev (#6) at 1024x1024, its latent upscaled 2x and sampled again by SDXL (#8).
json big_first_pass() {
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
    "3": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["3", 0]}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "7": {"class_type": "LTXVLatentUpsampler", "inputs": {"samples": ["6", 0]}},
    "10": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "11": {"class_type": "VAEDecode", "inputs": {"samples": ["8", 0], "vae": ["10", 0]}},
    "12": {"class_type": "SaveImage", "inputs": {"images": ["11", 0], "filename_prefix": "a"}}
  })");
  wf["6"] = ksampler("1", "5", 1.0);
  wf["8"] = ksampler("2", "7", 1.0);
  return wf;
}

const json& stage(const json& plan, const std::string& name) {
  for (const auto& s : plan["stages"])
    if (s["name"] == name) return s;
  FAIL("no stage " << name);
  static const json none;
  return none;
}

const json& binding(const json& plan) {
  for (const auto& s : plan["samplers"])
    if (s["binding"] == true) return s;
  FAIL("no binding sampler");
  static const json none;
  return none;
}

}  // namespace

TEST_CASE("the plan's stages, job and verdict are the binding sampler's", "[workflow][samplers][binding]") {
  for (std::uint64_t gib : {16, 24, 80}) {
    DYNAMIC_SECTION(gib << " GiB") {
      const json out = api::plan({{"workflow", flux_and_wan()}, {"vram", std::to_string(gib) + "GB"}});
      const json& b = binding(out);
      const json& job = out["job"];
      CHECK(job["bound_sampler"] == b["node_id"]);
      CHECK(job["diffusion"]["model"] == b["model"]);
      CHECK((job["width"] == b["width"] && job["height"] == b["height"] && job["frames"] == b["frames"]));
      CHECK(job["cfg"] == b["cfg"]);
      // The sample stage is the binding sampler's own: no other figure is made for it.
      CHECK(stage(out, "sample")["peak_bytes"] == b["peak_bytes"]);
      // Every loaded model is counted: the other sampler's model is in the job, and in host RAM.
      REQUIRE(job["other_diffusion"].size() == 1);
      CHECK(job["other_diffusion"][0]["model"]["model"] != b["model"]);
    }
  }
}

TEST_CASE("the model of a sampler that ran before stays cached while it fits", "[workflow][samplers][binding]") {
  const WorkflowInfo info = analyse_workflow(flux_and_wan(), "flux_and_wan");
  Runtime rt;
  rt.vram_bytes = 141 * kGiB;  // room for both models
  const Job bound = bind_worst_sampler(info.job, rt);
  REQUIRE(bound.bound_sampler == "9");  // Wan 14B at 81 frames and cfg 6 outweighs Flux at 1024x1024
  REQUIRE(bound.other_diffusion.size() == 1);
  CHECK(bound.other_diffusion[0].model.model == "flux1-dev");
  CHECK(bound.other_diffusion[0].runs_before);
  const Estimate est = estimate(bound, rt);
  const auto sample = std::find_if(est.stages.begin(), est.stages.end(), [](const Stage& s) { return s.name == "sample"; });
  REQUIRE(sample != est.stages.end());
  CHECK(std::find(sample->cached.begin(), sample->cached.end(), "flux1-dev") != sample->cached.end());
  // The listing sizes the binding sampler with the same cache: the two figures are one.
  for (const auto& s : est.samplers)
    if (s.binding) CHECK(s.peak_bytes == sample->peak_bytes);
  Job alone = bound;
  alone.other_diffusion.clear();
  CHECK(estimate(bound, rt).host_ram_bytes > estimate(alone, rt).host_ram_bytes);
}

TEST_CASE("a first pass that binds is decoded at the size of the pass that continues it", "[workflow][samplers][binding]") {
  const WorkflowInfo info = analyse_workflow(big_first_pass(), "big_first_pass");
  REQUIRE(info.job.samplers.size() == 2);
  CHECK(info.job.samplers[1].continues == "6");
  // The assembled job: the picked model (FLUX.1 dev) at the latent it samples, not SDXL's larger one.
  CHECK((info.job.width == 1024 && info.job.height == 1024));
  // On 80 GiB FLUX.1 dev stays cached beside SDXL's 2048 pass, which so holds the most (about 37.5 GiB).
  Runtime big;
  big.vram_bytes = 80 * kGiB;
  CHECK(bind_worst_sampler(info.job, big).bound_sampler == "8");
  // On 34 GiB it cannot stay: SDXL's pass alone (about 15 GiB) is below FLUX.1 dev's (about 33 GiB).
  Runtime rt;
  rt.vram_bytes = 34 * kGiB;
  const Job bound = bind_worst_sampler(info.job, rt);
  REQUIRE(bound.bound_sampler == "6");
  CHECK((bound.width == 1024 && bound.height == 1024));
  CHECK(bound.decode_scale == 2.0);
  const Estimate as_bound = estimate(bound, rt);
  Job decoded_alone = bound;  // the same decode, of the 2048 latent, without the sampler listing
  decoded_alone.samplers.clear();
  decoded_alone.other_diffusion.clear();
  decoded_alone.width = decoded_alone.height = 2048;
  decoded_alone.decode_scale = 1.0;
  const Estimate reference = estimate(decoded_alone, rt);
  auto decode_peak = [](const Estimate& e) {
    for (const auto& s : e.stages)
      if (s.name == "vae_decode") return s.peak_bytes - s.cached_bytes;
    return std::uint64_t{0};
  };
  CHECK(decode_peak(as_bound) > 0);
  CHECK(decode_peak(as_bound) == decode_peak(reference));
  // A planner size change scales both: 1024 sampled and 2048 decoded become one smaller pair.
  Job smaller = bound;
  smaller.width = smaller.height = 512;
  CHECK(decode_peak(estimate(smaller, rt)) < decode_peak(as_bound));
}

TEST_CASE("samplers are named by id, type and the title the workflow gives", "[workflow][samplers]") {
  const WorkflowInfo info = analyse_workflow(flux_and_wan(), "titles");
  const json j = info.to_json();
  REQUIRE(j["samplers"].size() == 2);
  CHECK(j["samplers"][0]["title"] == "Flux pass");
  CHECK(j["samplers"][1]["title"].is_null());  // "KSampler" only repeats the type
  Runtime rt;
  rt.vram_bytes = 24 * kGiB;
  const Estimate est = estimate(info.job, rt);
  CHECK(est.to_json()["samplers"][0]["title"] == "Flux pass");
  const bool named = std::any_of(est.notes.begin(), est.notes.end(), [](const std::string& n) {
    return n.find("KSampler #8 \"Flux pass\"") != std::string::npos;
  });
  CHECK(named);
}

TEST_CASE("an API prompt linking to a node it lacks is refused naming the node and the link", "[workflow][formats]") {
  json wf = flux_and_wan();
  wf["12"]["inputs"]["samples"] = {"99", 0};
  try {
    analyse_workflow(wf, "dangling");
    FAIL("a prompt with a link to a missing node was read");
  } catch (const FileFormatError& e) {
    const std::string what = e.what();
    CHECK(what.find("VAEDecode #12") != std::string::npos);
    CHECK(what.find("'samples'") != std::string::npos);
    CHECK(what.find("'99'") != std::string::npos);
    CHECK(what.find("/12/inputs/samples") != std::string::npos);
  }
  CHECK_THROWS_AS(api::plan({{"workflow", wf}, {"vram", "24GB"}}), FileFormatError);
}

TEST_CASE("a frontend-only node hands on the input comfy_nodes.json names", "[workflow][comfy_nodes]") {
  const ComfyNode* reroute = comfy_nodes().find("Reroute");
  REQUIRE(reroute);
  REQUIRE(reroute->passes);
  CHECK(*reroute->passes == "");
  const ComfyNode* note = comfy_nodes().find("Note");
  REQUIRE(note);
  CHECK_FALSE(note->passes);
  CHECK(comfy_nodes().model_through_inputs == std::vector<std::string>{"model"});
  CHECK(std::find(comfy_nodes().latent_through_inputs.begin(), comfy_nodes().latent_through_inputs.end(), "samples") !=
        comfy_nodes().latent_through_inputs.end());
  json data = {{"weight_dtypes", {{"precisions", {{"fp8_e5m2", "fp8_e5m2"}}}}},
               {"loader_roles", {{"vae", {{"folders", {"vae"}}, {"file_widgets", {{"vae_name"}}}}}}},
               {"nodes", {{"VAELoader", {{"widgets", {"vae_name"}}, {"loads", "vae"}}}}}};
  data["nodes"]["Virtual"] = {{"virtual", true}, {"passes", "x"}};
  CHECK(*load_comfy_nodes(data, "nodes-test.json").find("Virtual")->passes == "x");
  data["nodes"]["Pass"] = {{"passes", "x"}};
  CHECK_THROWS_WITH(load_comfy_nodes(data, "nodes-test.json"), Catch::Contains("passes") && Catch::Contains("virtual"));
  data["nodes"]["Pass"] = {{"virtual", true}, {"passes", 3}};
  CHECK_THROWS_WITH(load_comfy_nodes(data, "nodes-test.json"), Catch::Contains("passes"));
}

TEST_CASE("samplers are in the order ComfyUI runs them, not in the order of their ids", "[workflow][samplers][binding]") {
  // The first pass renamed #90: by id ("8" < "90") it would come second, and FLUX.1 dev would not count
  // as cached beside SDXL's pass that runs after it.
  json wf = big_first_pass();
  wf["90"] = wf["6"];
  wf.erase("6");
  wf["7"]["inputs"]["samples"] = {"90", 0};
  const WorkflowInfo info = analyse_workflow(wf, "renamed");
  REQUIRE(info.job.samplers.size() == 2);
  CHECK(info.job.samplers[0].node_id == "90");
  CHECK(info.job.samplers[1].node_id == "8");
  Runtime big;
  big.vram_bytes = 80 * kGiB;
  const Job bound = bind_worst_sampler(info.job, big);
  CHECK(bound.bound_sampler == "8");
  REQUIRE(bound.other_diffusion.size() == 1);
  CHECK(bound.other_diffusion[0].runs_before);
}
