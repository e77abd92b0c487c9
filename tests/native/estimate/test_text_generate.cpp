// The prompt upsampler as a stage of its own (issue 19 item 6): a text encoder that ComfyUI's
// TextGenerate runs as a language model holds its weights and the key/value cache of the prompt and of
// every token it writes, before the prompt is encoded; from a workflow, the node's clip input says which
// loader it runs and its max_length how much it may write.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

const Stage* stage(const Estimate& e, const std::string& name) {
  for (const auto& s : e.stages)
    if (s.name == name) return &s;
  return nullptr;
}

// An API-format KSampler over the outputs 0 of the nodes named.
json ksampler(const std::string& model, const std::string& positive, const std::string& negative, const std::string& latent,
              int steps, double cfg) {
  return {{"class_type", "KSampler"},
          {"inputs", {{"model", json::array({model, 0})}, {"positive", json::array({positive, 0})},
                      {"negative", json::array({negative, 0})}, {"latent_image", json::array({latent, 0})}, {"seed", 1},
                      {"steps", steps}, {"cfg", cfg}, {"sampler_name", "euler"}, {"scheduler", "simple"}, {"denoise", 1}}}};
}

// CLIPLoader `file` -> TextGenerate (max_length `tokens`) -> CLIPTextEncode -> KSampler -> SaveLatent.
json upsampled_workflow(const std::string& generator_file, int tokens) {
  json wf;
  wf["1"] = {{"class_type", "UNETLoader"}, {"inputs", {{"unet_name", "krea2_turbo_fp8_scaled.safetensors"}, {"weight_dtype", "default"}}}};
  wf["2"] = {{"class_type", "CLIPLoader"}, {"inputs", {{"clip_name", "qwen3vl_4b_fp8_scaled.safetensors"}, {"type", "krea2"}}}};
  wf["3"] = {{"class_type", "CLIPLoader"}, {"inputs", {{"clip_name", generator_file}, {"type", "krea2"}}}};
  wf["4"] = {{"class_type", "TextGenerate"},
             {"inputs", {{"clip", json::array({"3", 0})}, {"prompt", "a fox"}, {"max_length", tokens}, {"sampling_mode", "off"}}}};
  wf["5"] = {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", json::array({"4", 0})}, {"clip", json::array({"2", 0})}}}};
  wf["6"] = {{"class_type", "EmptyLatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}};
  wf["7"] = ksampler("1", "5", "5", "6", 8, 1);
  wf["8"] = {{"class_type", "SaveLatent"}, {"inputs", {{"samples", json::array({"7", 0})}, {"filename_prefix", "x"}}}};
  return wf;
}

}  // namespace

TEST_CASE("text_generate: the upsampler's weights and key/value cache, before the prompt is encoded", "[estimate][text_generate]") {
  const ModelInfo& te = resolve_model("qwen3vl-4b");
  REQUIRE(te.encoder);
  // Qwen3-4B's config: 36 layers, 8 key/value heads of 128, keys and values.
  CHECK(te.encoder->kv_elems_per_token == 2.0 * 36 * 8 * 128);

  Job job = default_job("krea2-turbo");
  const Estimate plain = estimate(job, Runtime{});
  CHECK(stage(plain, "text_generate") == nullptr);

  job.text_generations.push_back({job.text_encoders.front(), 3584});
  const Estimate e = estimate(job, Runtime{});
  REQUIRE(e.stages.front().name == "text_generate");  // it writes the prompt the encoder then reads
  const Stage& gen = e.stages.front();
  const double tokens = te.encoder->tokens + 3584;  // the padded prompt and every token written
  CHECK(gen.breakdown.at("kv_cache") == static_cast<std::uint64_t>(tokens * 2.0 * 36 * 8 * 128 * 2));  // bf16
  CHECK(gen.breakdown.at("weights:qwen3vl-4b") == stage(plain, "text_encode")->breakdown.at("weights:qwen3vl-4b"));
  // The same file writing and encoding is one residency in host RAM.
  CHECK(e.host_ram_bytes == plain.host_ram_bytes);
  // Writing more costs more cache, linearly.
  job.text_generations.front().new_tokens = 7168;
  const Estimate longer = estimate(job, Runtime{});
  CHECK(longer.stages.front().breakdown.at("kv_cache") - gen.breakdown.at("kv_cache") ==
        static_cast<std::uint64_t>(3584 * 2.0 * 36 * 8 * 128 * 2));
}

TEST_CASE("text_generate: a model that only encodes is refused, naming the field", "[estimate][text_generate]") {
  Job job = default_job("wan2.1-t2v-1.3b");
  job.text_generations.push_back({job.text_encoders.front(), 512});
  try {
    estimate(job, Runtime{});
    FAIL("umt5 was accepted as a language model");
  } catch (const InputError& err) {
    CHECK_THAT(std::string(err.what()), Catch::Contains("text_generations[0]") && Catch::Contains("only encodes"));
  }
  job.text_generations.front() = {default_job("krea2-turbo").text_encoders.front(), 0};
  CHECK_THROWS_AS(estimate(job, Runtime{}), InputError);  // no tokens to write
}

TEST_CASE("text_generate: from a workflow, TextGenerate runs the loader its clip input names", "[workflow][text_generate]") {
  SECTION("the encoder it is given writes up to max_length tokens") {
    const auto info = workflow::analyse_workflow(upsampled_workflow("qwen3vl_4b_fp8_scaled.safetensors", 1200), "upsampler");
    REQUIRE(info.job.text_generations.size() == 1);
    CHECK(info.job.text_generations.front().model.model == "qwen3vl-4b");
    CHECK(info.job.text_generations.front().model.precision == "fp8_scaled");
    CHECK(info.job.text_generations.front().new_tokens == 1200);
    CHECK(info.unknown_nodes.empty());
  }
  SECTION("an upsampler the catalog does not know is said, and not guessed") {
    const auto info =
        workflow::analyse_workflow(upsampled_workflow("qwen3.5_9b_flux3_prompt_upsampler_w4a8.safetensors", 3584), "unknown upsampler");
    CHECK(info.job.text_generations.empty());
    bool said = false;
    for (const auto& n : info.job.notes)
      said = said || (n.find("TextGenerate #4") != std::string::npos && n.find("not in the catalog") != std::string::npos);
    CHECK(said);
  }
}

TEST_CASE("text_generate: a broken generates entry names the node and the key", "[workflow][text_generate]") {
  json data = data_file("comfy_nodes.json");
  REQUIRE(data["nodes"].contains("TextGenerate"));
  data["nodes"]["TextGenerate"]["generates"] = "clip";
  try {
    workflow::load_comfy_nodes(data, "comfy_nodes.json");
    FAIL("a generates string was accepted");
  } catch (const Error& err) {
    CHECK_THAT(std::string(err.what()), Catch::Contains("TextGenerate") && Catch::Contains("generates") &&
                                            Catch::Contains("expected {input, max_tokens}"));
  }
  data["nodes"]["TextGenerate"]["generates"] = json{{"input", "clip"}};
  CHECK_THROWS_WITH(workflow::load_comfy_nodes(data, "comfy_nodes.json"), Catch::Contains("max_tokens"));
}

namespace {

// MiniMax Music 3 as its template wires it: the text encode's seconds output sizes the latent.
json music_workflow(double max_duration) {
  json wf;
  wf["1"] = {{"class_type", "UNETLoader"}, {"inputs", {{"unet_name", "minimax_music3_dit_fp16.safetensors"}, {"weight_dtype", "default"}}}};
  wf["2"] = {{"class_type", "CLIPLoader"},
             {"inputs", {{"clip_name", "minimax_music3_text_encoder_pruned_int8_convrot.safetensors"}, {"type", "minimax"}}}};
  wf["3"] = {{"class_type", "MiniMaxMusic3TextEncode"},
             {"inputs", {{"clip", json::array({"2", 0})}, {"caption", "lo-fi"}, {"lyrics", "[Instrumental]"}, {"seed", 1},
                         {"max_duration", max_duration}, {"cfg_scale", 1.7}, {"top_k", 50}}}};
  wf["4"] = {{"class_type", "EmptyMiniMaxMusic3LatentAudio"}, {"inputs", {{"seconds", json::array({"3", 1})}, {"batch_size", 1}}}};
  wf["5"] = {{"class_type", "ConditioningZeroOut"}, {"inputs", {{"conditioning", json::array({"3", 0})}}}};
  wf["6"] = ksampler("1", "3", "5", "4", 30, 1.7);
  wf["7"] = {{"class_type", "SaveLatent"}, {"inputs", {{"samples", json::array({"6", 0})}, {"filename_prefix", "x"}}}};
  return wf;
}

}  // namespace

TEST_CASE("text_generate: a duration budget writes tokens_per_unit tokens a second", "[workflow][text_generate]") {
  const auto info = workflow::analyse_workflow(music_workflow(60.5), "music");
  REQUIRE(info.job.text_generations.size() == 1);
  // 60.5 s of 25 Hz frames: 1512.5, rounded to 1513 tokens; the latent takes the same 60.5 s, the longest song.
  CHECK(info.job.text_generations[0].new_tokens == 1513);
  CHECK(info.job.text_generations[0].model.model == "minimax-music-3-text-encoder");
  CHECK(info.size_known);
  CHECK(info.job.seconds == Approx(60.5));
  const auto shorter = workflow::analyse_workflow(music_workflow(30), "music");
  REQUIRE(shorter.job.text_generations.size() == 1);
  CHECK(shorter.job.text_generations[0].new_tokens == 750);
}

TEST_CASE("text_generate: tokens_per_unit must be a positive number", "[workflow][text_generate]") {
  json data = data_file("comfy_nodes.json");
  REQUIRE(data["nodes"].contains("MiniMaxMusic3TextEncode"));
  data["nodes"]["MiniMaxMusic3TextEncode"]["generates"]["tokens_per_unit"] = 0;
  CHECK_THROWS_WITH(workflow::load_comfy_nodes(data, "comfy_nodes.json"),
                    Catch::Contains("MiniMaxMusic3TextEncode") && Catch::Contains("tokens_per_unit") && Catch::Contains("above 0"));
  data["nodes"]["MiniMaxMusic3TextEncode"]["generates"]["tokens_per_unit"] = "25";
  CHECK_THROWS_WITH(workflow::load_comfy_nodes(data, "comfy_nodes.json"), Catch::Contains("tokens_per_unit"));
}
