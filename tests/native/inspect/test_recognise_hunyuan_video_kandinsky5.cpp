// HunyuanVideo 1.0 and Kandinsky 5 Lite (issue 26): the files of the official templates name their models
// and formats; the headers tell 1.0 from 1.5, the Lite T2V/I2V DiT from other DiTs and LLaVA-Llama-3 from
// Llama 3.1 and the video DiT from the image one; names of near families (Kandinsky 5 Pro and I2I, HunyuanVideo
// I2V, the 1.5 VAE, the LLaVA vision tower) are not taken for the new entries.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

std::string whole(const char* model, const char* dtype = "bf16") {
  return recognise_tensors(support::header_of({model}, "/m/file.safetensors", dtype)).whole.model;
}

}  // namespace

TEST_CASE("HunyuanVideo 1.0 and Kandinsky 5: the official file names name their model and format",
          "[recognise][families][hunyuan10][kandinsky5]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"hunyuan_video_t2v_720p_bf16.safetensors", "diffusion", "hunyuan-video-t2v-720p", "bf16"},
      {"llava_llama3_fp8_scaled.safetensors", "text_encoder", "llava-llama3-8b", "fp8_scaled"},
      {"hunyuan_video_vae_bf16.safetensors", "vae", "hunyuan-video-vae", "bf16"},
      {"kandinsky5lite_t2v_sft_5s.safetensors", "diffusion", "kandinsky5-lite-t2v", ""},
      {"kandinsky5lite_i2v_5s.safetensors", "diffusion", "kandinsky5-lite-i2v", ""},
      {"kandinsky5lite_t2i.safetensors", "diffusion", "kandinsky5-lite-t2i", ""},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("HunyuanVideo 1.0 and Kandinsky 5: near families stay unknown or their own",
          "[recognise][families][hunyuan10][kandinsky5]") {
  const std::set<std::string> added = {"hunyuan-video-t2v-720p", "llava-llama3-8b", "hunyuan-video-vae",
                                       "kandinsky5-lite-t2v", "kandinsky5-lite-i2v", "kandinsky5-lite-t2i"};
  const std::pair<const char*, const char*> near[] = {
      {"kandinsky5pro_t2v_sft_5s.safetensors", "diffusion"},  // Video Pro, 19B: not the Lite DiT
      {"kandinsky5lite_i2i.safetensors", "diffusion"},         // the image-editing model: not in the catalog
      {"hunyuan_video_image_to_video_720p_bf16.safetensors", "diffusion"},  // 1.0 I2V: 32 input channels
      {"hunyuanvideo1.5_720p_t2v_fp16.safetensors", "diffusion"},
      {"hunyuanvideo15_vae_fp16.safetensors", "vae"},
      {"llava_llama3_vision.safetensors", "clip_vision"},
      {"llama_3.1_8b_instruct_fp8_scaled.safetensors", "text_encoder"},
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!added.count(recognise_file_name(file, role).model));
  }
}

TEST_CASE("HunyuanVideo 1.0 and Kandinsky 5: headers are told apart by their tensors",
          "[recognise][families][hunyuan10][kandinsky5]") {
  CHECK(whole("hunyuan-video-t2v-720p") == "hunyuan-video-t2v-720p");
  // 1.5's header (54 double blocks, byT5 projection) is not 1.0, and 1.0's is not 1.5 or Flux.
  CHECK(whole("hunyuan-video-1.5-t2v", "fp16").rfind("hunyuan-video-1.5-", 0) == 0);
  CHECK(whole("flux1-dev") != "hunyuan-video-t2v-720p");
  CHECK(whole("kandinsky5-lite-t2v").rfind("kandinsky5-lite-", 0) == 0);
  CHECK(whole("kandinsky5-lite-t2v") != "kandinsky5-lite-t2i");
  CHECK(whole("kandinsky5-lite-t2i") == "kandinsky5-lite-t2i");
  CHECK(whole("wan2.1-t2v-1.3b", "fp16") == "wan2.1-t2v-1.3b");
  // The 128320-row embedding is LLaVA-Llama-3's; Llama 3.1's 128256 stays Llama 3.1.
  CHECK(whole("llava-llama3-8b") == "llava-llama3-8b");
  CHECK(whole("llama-3.1-8b") == "llama-3.1-8b");
  // The 16-channel 3D-conv KL VAE is not the 1.5 VAE (32 channels into 1024), and the reverse.
  CHECK(whole("hunyuan-video-vae") == "hunyuan-video-vae");
  CHECK(whole("hunyuan-video-1.5-vae", "fp16") == "hunyuan-video-1.5-vae");
}
