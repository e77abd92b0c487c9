// HunyuanVideo 1.5 (issue 26): the files of the official 720p templates name their models and formats; its
// headers (54 double blocks of 2048, no single blocks) are not HunyuanVideo 1.0's or Flux's, and names of the
// near families (HunyuanVideo 1.0, a plain T5) are not taken for 1.5's models.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

// The tensors an entry's `recognise` section names, in fp16 (the official files' dtype).
ModelFile header_of(const char* model, const std::string& path) { return support::header_of({model}, path, "fp16"); }

}  // namespace

TEST_CASE("HunyuanVideo 1.5: the official file names name their model and format", "[recognise][families][hunyuan15]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"hunyuanvideo1.5_720p_t2v_fp16.safetensors", "diffusion", "hunyuan-video-1.5-t2v", "fp16"},
      {"hunyuanvideo1.5_720p_i2v_fp16.safetensors", "diffusion", "hunyuan-video-1.5-i2v", "fp16"},
      {"hunyuanvideo1.5_1080p_sr_distilled_fp16.safetensors", "diffusion", "hunyuan-video-1.5-1080p-sr-distilled", "fp16"},
      {"hunyuanvideo1.5_480p_i2v_cfg_distilled_fp8_scaled.safetensors", "diffusion", "hunyuan-video-1.5-i2v", "fp8_scaled"},
      {"byt5_small_glyphxl_fp16.safetensors", "text_encoder", "byt5-small-glyphxl", "fp16"},
      {"qwen_2.5_vl_7b_fp8_scaled.safetensors", "text_encoder", "qwen2.5-vl-7b", "fp8_scaled"},
      {"hunyuanvideo15_vae_fp16.safetensors", "vae", "hunyuan-video-1.5-vae", "fp16"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("HunyuanVideo 1.5: near families are not taken for it", "[recognise][families][hunyuan15]") {
  const std::set<std::string> added = {"hunyuan-video-1.5-t2v", "hunyuan-video-1.5-i2v",
                                       "hunyuan-video-1.5-1080p-sr-distilled", "byt5-small-glyphxl",
                                       "hunyuan-video-1.5-vae"};
  const std::pair<const char*, const char*> near[] = {
      {"hunyuan_video_t2v_720p_bf16.safetensors", "diffusion"},         // HunyuanVideo 1.0
      {"hunyuan_video_image_to_video_720p_bf16.safetensors", "diffusion"},
      {"hunyuan_video_vae_bf16.safetensors", "vae"},                    // 1.0's 16-channel VAE
      {"t5xxl_fp16.safetensors", "text_encoder"},
      {"umt5_xxl_fp8_e4m3fn_scaled.safetensors", "text_encoder"},
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!added.count(recognise_file_name(file, role).model));
  }
}

TEST_CASE("HunyuanVideo 1.5: headers are told apart by their tensors", "[recognise][families][hunyuan15]") {
  // A nameless file with the 1.5 tensors is a 1.5 model; the SR distill's wider input tells it apart.
  CHECK(recognise_tensors(header_of("hunyuan-video-1.5-t2v", "/m/dit.safetensors")).whole.model.rfind("hunyuan-video-1.5-", 0) == 0);
  CHECK(recognise_tensors(header_of("hunyuan-video-1.5-1080p-sr-distilled", "/m/dit.safetensors")).whole.model ==
        "hunyuan-video-1.5-1080p-sr-distilled");
  // Flux's header (single blocks, no byT5 projection) is not 1.5, nor is 1.5's Flux.
  const std::string flux = recognise_tensors(header_of("flux1-dev", "/m/dit.safetensors")).whole.model;
  CHECK(!flux.empty());
  CHECK(flux.rfind("hunyuan-video-1.5-", 0) != 0);
  // The byT5 glyph encoder's header is not T5-XXL's, and T5-XXL's is not byT5's.
  CHECK(recognise_tensors(header_of("byt5-small-glyphxl", "/m/te.safetensors")).whole.model == "byt5-small-glyphxl");
  CHECK(recognise_tensors(header_of("t5-xxl", "/m/te.safetensors")).whole.model == "t5-xxl");
}
