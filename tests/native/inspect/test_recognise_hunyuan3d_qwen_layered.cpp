// Hunyuan3D 2.0 / 2.1 and Qwen-Image-Layered: the official templates' file names name their models and formats,
// near families are not taken for them, and the headers their recognise sections describe are told apart from
// their neighbours' (Qwen-Image's transformer without the layered time embedding, FLUX.1's blocks).
#include <set>
#include <string>
#include <tuple>

#include "catch.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

TEST_CASE("Hunyuan3D and Qwen-Image-Layered: the template files name their models", "[recognise][families][hunyuan3d]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"hunyuan3d-dit-v2_fp16.safetensors", "diffusion", "hunyuan3d-dit-v2", "fp16"},
      {"hunyuan3d-dit-v2-mv_fp16.safetensors", "diffusion", "hunyuan3d-dit-v2-mv", "fp16"},
      {"hunyuan3d-dit-v2-mv-turbo_fp16.safetensors", "diffusion", "hunyuan3d-dit-v2-mv-turbo", "fp16"},
      {"hunyuan_3d_v2.1.safetensors", "diffusion", "hunyuan3d-dit-v2.1", ""},
      {"qwen_image_layered_bf16.safetensors", "diffusion", "qwen-image-layered", "bf16"},
      {"qwen_image_layered_control_bf16.safetensors", "diffusion", "qwen-image-layered-control", "bf16"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    const NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    if (*precision) CHECK(r.precision == precision);
  }
}

TEST_CASE("Hunyuan3D and Qwen-Image-Layered: near families keep their own models", "[recognise][families][hunyuan3d]") {
  const std::set<std::string> added = {"hunyuan3d-dit-v2", "hunyuan3d-dit-v2-mv", "hunyuan3d-dit-v2-mv-turbo",
                                       "hunyuan3d-dit-v2.1", "qwen-image-layered", "qwen-image-layered-control"};
  const std::pair<const char*, const char*> near[] = {
      {"hunyuan_video_t2v_720p_bf16.safetensors", "diffusion"},
      {"hunyuanvideo1.5_720p_t2v_fp16.safetensors", "diffusion"},
      {"qwen_image_fp8_e4m3fn.safetensors", "diffusion"},
      {"qwen_image_edit_2511_bf16.safetensors", "diffusion"},
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!added.count(recognise_file_name(file, role).model));
  }
  // The layered VAE stays the Wan 2.1-architecture VAE, not a layered diffusion model.
  CHECK(recognise_file_name("qwen_image_layered_vae.safetensors", "vae").model == "wan2.1-vae");
}

TEST_CASE("Hunyuan3D and Qwen-Image-Layered: headers are told apart by their tensors", "[recognise][families][hunyuan3d]") {
  auto model_of = [](const char* name) {
    return recognise_tensors(support::header_of({name}, "/m/x.safetensors", "fp16")).whole.model;
  };
  // A nameless Qwen-Image-Layered header carries the addition_t embedding: a layered release, never plain Qwen-Image.
  CHECK(model_of("qwen-image-layered").rfind("qwen-image-layered", 0) == 0);
  CHECK(model_of("qwen-image-edit-2511").rfind("qwen-image-layered", 0) != 0);
  // The 2.0 DiT (latent_in, FLUX.1 blocks), the 2.1 MoE DiT, the ShapeVAE and the two DINOv2 towers.
  CHECK(model_of("hunyuan3d-dit-v2").rfind("hunyuan3d-dit-v2", 0) == 0);
  CHECK(model_of("hunyuan3d-dit-v2-mv-turbo") == "hunyuan3d-dit-v2-mv-turbo");
  CHECK(model_of("hunyuan3d-dit-v2.1") == "hunyuan3d-dit-v2.1");
  CHECK(model_of("hunyuan3d-shape-vae") == "hunyuan3d-shape-vae");
  CHECK(model_of("dinov2-giant") == "dinov2-giant");
  CHECK(model_of("dinov2-large") == "dinov2-large");
  CHECK(model_of("flux1-dev").rfind("hunyuan3d", 0) != 0);
}
