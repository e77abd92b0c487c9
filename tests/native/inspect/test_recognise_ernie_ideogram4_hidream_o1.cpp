// Issue 26, image families part 1: ERNIE-Image (base and Turbo) with Ministral3-3B and its prompt enhancer,
// Ideogram 4 (conditional and unconditional files) and HiDream-O1-Image (full and dev). The files of the official
// templates name their models and formats; headers are told apart by their tensors; near names (MOSS-Image,
// FLUX 3 Image Klein, Boogu, HiDream I1, other Mistral or Qwen encoders) are not taken for them.
#include <set>
#include <string>
#include <tuple>

#include "catch.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

const std::set<std::string> kAdded = {"ernie-image",         "ernie-image-turbo",       "ministral-3-3b",
                                      "ernie-image-prompt-enhancer", "ideogram4",     "ideogram4-unconditional",
                                      "hidream-o1-image",    "hidream-o1-image-dev"};

std::string whole(const ModelFile& f) { return recognise_tensors(f).whole.model; }

}  // namespace

TEST_CASE("ERNIE-Image, Ideogram 4, HiDream-O1: the official file names name their model and format",
          "[recognise][families][image_b]") {
  // The files the templates of the pinned comfyui-workflow-templates-json package load.
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"ernie-image.safetensors", "diffusion", "ernie-image", ""},
      {"ernie-image-turbo.safetensors", "diffusion", "ernie-image-turbo", ""},
      {"ministral-3-3b.safetensors", "text_encoder", "ministral-3-3b", ""},
      {"ernie-image-prompt-enhancer.safetensors", "text_encoder", "ernie-image-prompt-enhancer", ""},
      {"ideogram4_fp8_scaled.safetensors", "diffusion", "ideogram4", "fp8_scaled"},
      {"ideogram4_int8_convrot.safetensors", "diffusion", "ideogram4", "int8_convrot"},
      {"ideogram4_unconditional_fp8_scaled.safetensors", "diffusion", "ideogram4-unconditional", "fp8_scaled"},
      {"ideogram4_unconditional_int8_convrot.safetensors", "diffusion", "ideogram4-unconditional", "int8_convrot"},
      {"hidream_o1_image_bf16.safetensors", "diffusion", "hidream-o1-image", "bf16"},
      {"hidream_o1_image_fp8_scaled.safetensors", "diffusion", "hidream-o1-image", "fp8_scaled"},
      {"hidream_o1_image_dev_fp8_scaled.safetensors", "diffusion", "hidream-o1-image-dev", "fp8_scaled"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("ERNIE-Image, Ideogram 4, HiDream-O1: near names are not taken for them", "[recognise][families][image_b]") {
  const std::pair<const char*, const char*> near[] = {
      {"moss_image_sft_int8_convrot.safetensors", "diffusion"},         // MOSS-Image: no public widths, unknown
      {"flux3-image-klein-int8-convrot.safetensors", "diffusion"},      // FLUX 3 Image Klein: no public widths
      {"boogu_image_turbo_fp8_scaled.safetensors", "diffusion"},        // Boogu: its widths are not public here
      {"hidream_i1_full_fp8.safetensors", "diffusion"},                 // HiDream I1, its own entry
      {"ernie-image-turbo-lora-v1.safetensors", "diffusion"},           // a LoRA, not the DiT
      {"ideogram4_style_lora.safetensors", "diffusion"},                // a LoRA
      {"latent_upscaler_ideogram4_2x.safetensors", "diffusion"},        // the family word alone names nothing
      {"mistral_3_small_flux2_fp8.safetensors", "text_encoder"},        // FLUX.2's Mistral Small, its own entry
      {"qwen3.5_9b_w4a8_gptq.safetensors", "text_encoder"},             // MOSS-Image's encoder, not in the catalog
      {"gemma4_e4b_it_fp8_scaled.safetensors", "text_encoder"},         // HiDream-O1's prompt enhancer: not ours
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!kAdded.count(recognise_file_name(file, role).model));
  }
  CHECK(recognise_file_name("hidream_i1_full_fp8.safetensors", "diffusion").model == "hidream-i1");
  CHECK(recognise_file_name("mistral_3_small_flux2_fp8.safetensors", "text_encoder").model == "mistral-small-3.2-24b");
}

TEST_CASE("ERNIE-Image, Ideogram 4, HiDream-O1: headers are told apart by their tensors", "[recognise][families][image_b]") {
  CHECK(whole(support::header_of({"ernie-image"}, "/m/dit.safetensors")).rfind("ernie-image", 0) == 0);
  CHECK(whole(support::header_of({"ideogram4"}, "/m/dit.safetensors")).rfind("ideogram4", 0) == 0);
  CHECK(whole(support::header_of({"hidream-o1-image"}, "/m/ckpt.safetensors")).rfind("hidream-o1-image", 0) == 0);
  // Releases that share tensors: the file name decides.
  CHECK(whole(support::header_of({"ernie-image"}, "/m/ernie-image-turbo.safetensors")) == "ernie-image-turbo");
  CHECK(whole(support::header_of({"ideogram4"}, "/m/ideogram4_unconditional_fp8_scaled.safetensors")) ==
        "ideogram4-unconditional");
  CHECK(whole(support::header_of({"hidream-o1-image"}, "/m/hidream_o1_image_dev_fp8_scaled.safetensors")) ==
        "hidream-o1-image-dev");
  // The Ministral3-3B encoder: 26 layers of 3072 with the Mistral vocabulary, no q/k norms.
  const std::string te = whole(support::header_of({"ministral-3-3b"}, "/m/te.safetensors"));
  CHECK((te == "ministral-3-3b" || te == "ernie-image-prompt-enhancer"));
  // Other families' headers are not taken for the new ones.
  CHECK(!kAdded.count(whole(support::header_of({"flux2-klein-9b"}, "/m/dit.safetensors"))));
  CHECK(!kAdded.count(whole(support::header_of({"qwen3vl-8b"}, "/m/te.safetensors"))));
  CHECK(!kAdded.count(whole(support::header_of({"mistral-small-3.2-24b"}, "/m/te.safetensors"))));
  CHECK(!kAdded.count(whole(support::header_of({"hidream-i1"}, "/m/dit.safetensors"))));
}

TEST_CASE("FLUX 3 Image Klein, MOSS-Image, Boogu: named as their family, whose architecture is unknown",
          "[recognise][families][image_b]") {
  // No public source gives their widths: the file names the family and says so, the model stays unknown, and no
  // near family (FLUX.2 klein, OmniGen2) takes the file.
  const std::pair<const char*, const char*> unsized[] = {
      {"flux3-image-klein-int8-convrot.safetensors", "FLUX 3 Image Klein"},
      {"flux3-image-klein-base-bf16.safetensors", "FLUX 3 Image Klein"},
      {"moss_image_sft_int8_convrot.safetensors", "MOSS-Image"},
      {"moss_image_base_bf16.safetensors", "MOSS-Image"},
      {"boogu_image_edit_int8_convrot.safetensors", "Boogu-Image"},
      {"boogu_image_turbo_fp8_scaled.safetensors", "Boogu-Image"},
  };
  for (const auto& [file, family] : unsized)
    for (const char* role : {"diffusion", "checkpoint"}) {
      INFO(file << " as " << role);
      const NameRecognition r = recognise_file_name(file, role);
      CHECK(r.model.empty());
      bool named = false;
      for (const auto& n : r.notes) {
        CHECK(n.find("taken for") == std::string::npos);
        named = named || (n.find(std::string("is ") + family + ", whose architecture Headroom does not know") !=
                          std::string::npos);
      }
      CHECK(named);
    }
  // The FLUX.2 klein files keep their own entries.
  CHECK(recognise_file_name("flux-2-klein-4b.safetensors", "diffusion").model == "flux2-klein-4b");
  CHECK(recognise_file_name("flux-2-klein-9b-fp8.safetensors", "diffusion").model == "flux2-klein-9b");
}
