// Issue 19: the audio encoders and model patches of the 2026 templates are known by their headers and names, and a
// whole Whisper checkpoint counts its encoder only (models.json dropped_prefixes), as ComfyUI's loader keeps it.
#include <string>

#include "catch.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

TEST_CASE("audio encoders and model patches are recognised by their keys and file names", "[recognise][audio_encoder]") {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"wav2vec2-chinese-base", "wav2vec2-chinese-base_fp16.safetensors"},
      {"wav2vec2-large-english", "wav2vec2_large_english_fp16.safetensors"},
      {"whisper-large-v3-encoder", "whisper_large_v3_fp16.safetensors"},
      {"infinitetalk-single", "wan2.1_infiniteTalk_single_fp16.safetensors"},
      {"infinitetalk-multi", "wan2.1_infiniteTalk_multi_fp16.safetensors"},
      {"uso-flux1-projector", "uso-flux1-projector-v1.safetensors"},
      {"qwen-image-diffsynth-controlnet", "qwen_image_canny_diffsynth_controlnet.safetensors"}};
  for (const auto& [model, file] : files) {
    INFO(file);
    CHECK(recognise_tensors(support::header_of({model.c_str()}, file, "fp16")).whole.model == model);
    const std::string role = resolve_model(model).role == Role::AudioEncoder ? "audio_encoder" : "model_patch";
    CHECK(recognise_file_name(file, role).model == model);
    // A diffusion loader given the file never takes it for a diffusion model of the same words.
    CHECK(recognise_file_name(file, "diffusion").model != model);
  }
}

TEST_CASE("a whole Whisper checkpoint counts its encoder only", "[recognise][audio_encoder]") {
  ModelFile encoder = support::header_of({"whisper-large-v3-encoder"}, "whisper_large_v3_fp16.safetensors", "fp16");
  for (auto& t : encoder.tensors) t.name = "model." + t.name;  // the Hugging Face layout ComfyUI strips
  ModelFile whole = encoder;
  whole.tensors.push_back(TensorRecord{"model.decoder.layers.0.fc1.weight", "fp16", {5120, 1280}, 5120 * 1280, 5120 * 1280 * 2, false});
  whole.tensors.push_back(TensorRecord{"model.decoder.embed_tokens.weight", "fp16", {51866, 1280}, 51866 * 1280, 51866 * 1280 * 2, false});
  const Inspection a = recognise_tensors(encoder), b = recognise_tensors(whole);
  CHECK(b.whole.model == "whisper-large-v3-encoder");
  CHECK(b.whole.weight_gpu_bytes == a.whole.weight_gpu_bytes);
  // A key that only starts like a dropped prefix elsewhere in the name is kept.
  ModelFile kept = encoder;
  kept.tensors.push_back(TensorRecord{"model.encoder.decoder_like.weight", "fp16", {10}, 10, 20, false});
  CHECK(recognise_tensors(kept).whole.weight_gpu_bytes == a.whole.weight_gpu_bytes + 20);
}
