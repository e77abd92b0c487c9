// Issue 26, image DiTs part D: Lens and Lens Turbo with GPT-OSS-20B, Chroma1 Radiance and PixelDiT (pixel space, the
// pixel_space passthrough VAE), NewBie-Image with Gemma 3 4B and Jina CLIP v2, Ming-Image 0.1 Design with its encoder
// and VAE. The files of the official templates name their model and format; near names and the headers of their
// relatives (Chroma1-HD, Lumina 2, Z-Image, the Wan 2.1 VAE, Qwen-Image) keep their own entries.
#include <set>
#include <string>
#include <tuple>

#include "catch.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

const std::set<std::string> kAdded = {
    "lens",        "lens-turbo",          "gpt-oss-20b",          "chroma1-radiance",       "pixel-space",
    "pixeldit-1300m", "newbie-image-exp0.1", "gemma3-4b",         "jina-clip-v2",           "ming-image-0.1-design",
    "ming-image-0.1-encoder", "ming-image-vae"};

std::string whole(const ModelFile& f) { return recognise_tensors(f).whole.model; }

}  // namespace

TEST_CASE("image families D: the official file names name their model and format", "[recognise][families][image_d]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"lens_bf16.safetensors", "diffusion", "lens", "bf16"},
      {"lens_mxfp8.safetensors", "diffusion", "lens", "mxfp8"},
      {"lens_turbo_bf16.safetensors", "diffusion", "lens-turbo", "bf16"},
      {"lens_turbo_mxfp8.safetensors", "diffusion", "lens-turbo", "mxfp8"},
      {"gpt_oss_20b_nvfp4.safetensors", "text_encoder", "gpt-oss-20b", "nvfp4"},
      {"chroma-radiance-x0.safetensors", "diffusion", "chroma1-radiance", ""},
      {"pixel_space", "vae", "pixel-space", ""},
      {"pixeldit_1300m_1024px_bf16.safetensors", "diffusion", "pixeldit-1300m", "bf16"},
      {"gemma_2_2b_it_elm_bf16.safetensors", "text_encoder", "gemma2-2b", "bf16"},
      {"NewBie-Image-Exp0.1-bf16.safetensors", "diffusion", "newbie-image-exp0.1", "bf16"},
      {"gemma_3_4b_it_bf16.safetensors", "text_encoder", "gemma3-4b", "bf16"},
      {"jina_clip_v2_bf16.safetensors", "text_encoder", "jina-clip-v2", "bf16"},
      {"ming_image_0.1_design_int8_convrot.safetensors", "diffusion", "ming-image-0.1-design", "int8_convrot"},
      {"ming_image_0.1_ling_mini_2.0_int8_convrot.safetensors", "text_encoder", "ming-image-0.1-encoder",
       "int8_convrot"},
      {"ming_image_vae_bf16.safetensors", "vae", "ming-image-vae", "bf16"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("image families D: near names keep their own entries", "[recognise][families][image_d]") {
  const std::pair<const char*, const char*> near[] = {
      {"chroma1-hd-fp8mixed.safetensors", "diffusion"},  // Chroma1-HD, not Radiance
      {"z_image_turbo_bf16.safetensors", "diffusion"},    // Z-Image, whose NextDiT Ming-Image shares
      {"wan_2.1_vae.safetensors", "vae"},                 // the Wan 2.1 VAE, whose layout the Ming VAE shares
      {"qwen_image_vae.safetensors", "vae"},
      {"fibo2_dev_int8_convrot.safetensors", "diffusion"},  // FIBO 2: no public widths, stays unknown
      {"fibo2_edit_turbo_int8_convrot.safetensors", "diffusion"},
      {"flux2-vae.safetensors", "vae"},
      {"gemma_3_12b_it_fp8_scaled.safetensors", "text_encoder"},
      {"lens_flare_lora.safetensors", "diffusion"},  // the family word alone names nothing
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!kAdded.count(recognise_file_name(file, role).model));
  }
}

TEST_CASE("image families D: headers are told from their relatives", "[recognise][families][image_d]") {
  CHECK(whole(support::header_of({"lens"}, "/m/lens_turbo_bf16.safetensors")) == "lens-turbo");
  CHECK(whole(support::header_of({"lens"}, "/m/dit.safetensors")).rfind("lens", 0) == 0);
  CHECK(!kAdded.count(whole(support::header_of({"qwen-image"}, "/m/dit.safetensors"))));
  CHECK(whole(support::header_of({"gpt-oss-20b"}, "/m/te.safetensors")) == "gpt-oss-20b");
  CHECK(whole(support::header_of({"chroma1-radiance"}, "/m/dit.safetensors")) == "chroma1-radiance");
  CHECK(whole(support::header_of({"chroma1-hd"}, "/m/dit.safetensors")) == "chroma1-hd");
  CHECK(whole(support::header_of({"pixeldit-1300m"}, "/m/dit.safetensors")) == "pixeldit-1300m");
  CHECK(whole(support::header_of({"newbie-image-exp0.1"}, "/m/dit.safetensors")) == "newbie-image-exp0.1");
  CHECK(whole(support::header_of({"netayume-lumina-v3.5"}, "/m/dit.safetensors")) == "netayume-lumina-v3.5");
  CHECK(whole(support::header_of({"gemma3-4b"}, "/m/te.safetensors")) == "gemma3-4b");
  CHECK(whole(support::header_of({"gemma2-2b"}, "/m/te.safetensors")) == "gemma2-2b");
  // Ming-Image's DiT is Z-Image's without the learned pad tokens: a Z-Image header (which has them) stays Z-Image.
  CHECK(whole(support::header_of({"ming-image-0.1-design"}, "/m/dit.safetensors")) == "ming-image-0.1-design");
  CHECK(whole(support::header_of({"z-image"}, "/m/z_image_bf16.safetensors")) == "z-image");
  CHECK(whole(support::header_of({"ming-image-0.1-encoder"}, "/m/te.safetensors")) == "ming-image-0.1-encoder");
  // The Ming VAE shares the Wan 2.1 VAE's tensors: the file name decides.
  CHECK(whole(support::header_of({"wan2.1-vae"}, "/m/ming_image_vae_bf16.safetensors")) == "ming-image-vae");
  CHECK(whole(support::header_of({"wan2.1-vae"}, "/m/wan_2.1_vae.safetensors")) == "wan2.1-vae");
}
