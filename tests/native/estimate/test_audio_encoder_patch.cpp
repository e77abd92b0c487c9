// Issue 19: the audio encoder as a stage of its own (AudioEncoderLoader -> AudioEncoderEncode) and the model
// patches ModelPatchLoader loads (InfiniteTalk, a DiffSynth ControlNet), whose weights join the sample stage of
// the model they patch. Figures by hand from the catalog's analytic counts (models.json params_source).
#include <algorithm>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "support/input_errors.hpp"
#include "support/stages.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

bool has_stage(const Estimate& e, const std::string& name) {
  return std::any_of(e.stages.begin(), e.stages.end(), [&](const Stage& s) { return s.name == name; });
}

const json* stage(const json& plan, const std::string& name) {
  for (const auto& s : plan["stages"])
    if (s["name"] == name) return &s;
  return nullptr;
}

json link(const std::string& node, int slot = 0) { return json::array({node, slot}); }

// An InfiniteTalk graph in API format: the patch reaches the sampler's model through WanInfiniteTalkToVideo,
// the audio encoder runs in AudioEncoderEncode.
json infinitetalk(const std::string& patch_file, const std::string& encoder_file) {
  json wf;
  wf["1"] = {{"class_type", "UNETLoader"},
             {"inputs", {{"unet_name", "Wan2_1-I2V-14B-480p_fp8_e4m3fn_scaled_KJ.safetensors"}, {"weight_dtype", "default"}}}};
  wf["2"] = {{"class_type", "ModelPatchLoader"}, {"inputs", {{"name", patch_file}}}};
  wf["3"] = {{"class_type", "AudioEncoderLoader"}, {"inputs", {{"audio_encoder_name", encoder_file}}}};
  wf["4"] = {{"class_type", "LoadAudio"}, {"inputs", {{"audio", "speech.wav"}}}};
  wf["5"] = {{"class_type", "AudioEncoderEncode"}, {"inputs", {{"audio_encoder", link("3")}, {"audio", link("4")}}}};
  wf["6"] = {{"class_type", "WanInfiniteTalkToVideo"},
             {"inputs", {{"model", link("1")}, {"model_patch", link("2")}, {"audio_encoder_output_1", link("5")},
                         {"mode", "single_speaker"}, {"width", 832}, {"height", 480}, {"length", 81},
                         {"motion_frame_count", 9}, {"audio_scale", 1}}}};
  wf["7"] = {{"class_type", "KSampler"},
             {"inputs", {{"model", link("6")}, {"positive", link("6", 1)}, {"negative", link("6", 2)},
                         {"latent_image", link("6", 3)}, {"seed", 1}, {"steps", 4}, {"cfg", 1}, {"sampler_name", "euler"},
                         {"scheduler", "simple"}, {"denoise", 1}}}};
  wf["8"] = {{"class_type", "SaveLatent"}, {"inputs", {{"samples", link("7")}, {"filename_prefix", "x"}}}};
  return wf;
}

constexpr std::uint64_t kInfiniteTalkParams = 2487168000;  // audio_proj 74,214,400 + 40 x 60,323,840
constexpr std::uint64_t kWav2vec2LargeParams = 315438720;
constexpr std::uint64_t kWav2vec2BaseParams = 94371712;

}  // namespace

TEST_CASE("audio_encode: the encoder's weights and its pass over the clip, before sampling", "[estimate][audio_encoder]") {
  Job job = default_job("wan2.2-s2v-14b");
  const Estimate plain = estimate(job, Runtime{});
  CHECK_FALSE(has_stage(plain, "audio_encode"));

  job.audio_encoder = Component{"wav2vec2-large-english", "fp16", std::nullopt, ""};
  const Estimate e = estimate(job, Runtime{});
  const Stage& enc = support::stage_named(e, "audio_encode");
  CHECK(enc.breakdown.at("weights:wav2vec2-large-english") == kWav2vec2LargeParams * 2);
  // 1500 positions (30 s at 50 a second), the conv front end's 3 x 64 x 512 elements each, in fp16.
  CHECK(enc.breakdown.at("activations") == 1500ull * 3 * 64 * 512 * 2);
  // It runs before the sampler, and its weights are held in host RAM with the rest.
  std::size_t at_encode = 0, at_sample = 0;
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    if (e.stages[i].name == "audio_encode") at_encode = i;
    if (e.stages[i].name == "sample") at_sample = i;
  }
  CHECK(at_encode < at_sample);
  CHECK(e.host_ram_bytes - plain.host_ram_bytes == kWav2vec2LargeParams * 2);
}

TEST_CASE("audio_encode: Whisper counts its encoder only, and an audio encoder estimates alone", "[estimate][audio_encoder]") {
  const ModelInfo& whisper = resolve_model("whisper-large-v3-encoder");
  CHECK(whisper.role == Role::AudioEncoder);
  // The decoder of a whole Whisper checkpoint is dropped on load, said in data.
  REQUIRE(whisper.dropped_prefixes.size() == 1);
  CHECK(whisper.dropped_prefixes.front() == "decoder.");
  const json r = api::estimate({{"model", "whisper-large-v3-encoder"}});
  const json& s = r["stages"][0];
  CHECK(s["name"] == "audio_encode");
  // 636,968,960 weights in fp16; per token 36 x 1280 + 2 x 5120 elements over Whisper's fixed 1500 positions.
  CHECK(s["breakdown"]["weights:whisper-large-v3-encoder"] == 636968960ull * 2);
  CHECK(s["breakdown"]["activations"] == 1500ull * (36 * 1280 + 2 * 5120) * 2);
}

TEST_CASE("model patch: its weights join the sample stage of the model it patches", "[estimate][model_patch]") {
  Job job = default_job("wan2.1-i2v-14b");
  const Estimate plain = estimate(job, Runtime{});
  job.model_patches.push_back(Component{"infinitetalk-multi", "fp16", std::nullopt, ""});
  const Estimate e = estimate(job, Runtime{});
  CHECK(support::stage_named(e, "sample").breakdown.at("weights:infinitetalk-multi") == kInfiniteTalkParams * 2);
  CHECK(e.host_ram_bytes - plain.host_ram_bytes == kInfiniteTalkParams * 2);
  // The stages before sampling do not load it.
  CHECK(support::stage_named(e, "text_encode").breakdown.count("weights:infinitetalk-multi") == 0);
  // A patch is never a job of its own.
  CHECK(support::input_error_field([] { api::estimate({{"model", "infinitetalk-single"}}); }) == "model");
  Job alone;
  alone.model_patches.push_back(Component{"infinitetalk-single", "fp16", std::nullopt, ""});
  CHECK(support::input_error_field([&] { estimate(alone, Runtime{}); }) == "model_patches");
}

TEST_CASE("a workflow's patch and audio encoder are read from their loaders", "[workflow][model_patch][audio_encoder]") {
  const json p = api::plan({{"workflow", infinitetalk("wan2.1_infiniteTalk_single_fp16.safetensors",
                                                      "wav2vec2-chinese-base_fp16.safetensors")},
                            {"vram", 80}});  // on a card that holds every weight, so the breakdown is whole
  CHECK(p["job"]["audio_encoder"]["model"] == "wav2vec2-chinese-base");
  REQUIRE(p["job"]["model_patches"].size() == 1);
  CHECK(p["job"]["model_patches"][0]["model"] == "infinitetalk-single");
  const json* enc = stage(p, "audio_encode");
  REQUIRE(enc != nullptr);
  CHECK((*enc)["breakdown"]["weights:wav2vec2-chinese-base"] == kWav2vec2BaseParams * 2);
  const json* sample = stage(p, "sample");
  REQUIRE(sample != nullptr);
  CHECK((*sample)["breakdown"]["weights:infinitetalk-single"] == kInfiniteTalkParams * 2);
  CHECK(p["workflow"]["node_stages"]["5"] == "audio_encode");
  CHECK(p["verdict"] != "unknown");
}

TEST_CASE("an audio encoder or patch file Headroom does not know leaves the verdict unknown, naming the node",
          "[workflow][model_patch][audio_encoder]") {
  const json patch = api::plan({{"workflow", infinitetalk("mystery_talk_patch.safetensors",
                                                          "wav2vec2-chinese-base_fp16.safetensors")},
                                {"vram", 80}});
  CHECK(patch["verdict"] == "unknown");
  CHECK(patch["not_covered"]["kind"] == "part");
  CHECK(patch["not_covered"]["node_id"] == "2");
  CHECK(patch["verdict_reason"].get<std::string>().find("ModelPatchLoader #2") != std::string::npos);
  CHECK(patch["job"]["model_patches"].empty());

  const json encoder = api::plan({{"workflow", infinitetalk("wan2.1_infiniteTalk_single_fp16.safetensors",
                                                            "mystery_speech_encoder.safetensors")},
                                  {"vram", 80}});
  CHECK(encoder["verdict"] == "unknown");
  CHECK(encoder["not_covered"]["node_type"] == "AudioEncoderLoader");
  CHECK(encoder["verdict_reason"].get<std::string>().find("AudioEncoderLoader #3") != std::string::npos);
  CHECK(stage(encoder, "audio_encode") == nullptr);
}
