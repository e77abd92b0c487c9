// Issue 26, image families part 2: LongCat-Image (text-to-image and edit, one Flux-style DiT of 10 double and
// 20 single blocks on Qwen2.5-VL-7B features) and NetaYume Lumina v3.5 (a Lumina-Image-2.0 NextDiT) with its
// Gemma-2-2B encoder, FireRed-Image-Edit 1.1 (Qwen-Image's DiT), JoyAI-Image-Edit (40 dual-stream blocks of 4096), Ovis-Image 7B (a SwiGLU Flux DiT of 6 + 27 blocks) with the Qwen3-1.7B LLM of Ovis 2.5. The files of the official templates name their models and formats; headers are told apart
// from their near families' (FLUX.1 and Qwen-Image; Z-Image and the other decoder encoders) by their tensors; the
// names of near families are not taken for them.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

const std::set<std::string> kAdded = {"longcat-image", "longcat-image-edit", "netayume-lumina-v3.5", "gemma2-2b",
                                      "ovis-image-7b", "ovis2.5-2b", "joyai-image-edit",
                                      "firered-image-edit-1.1"};

std::string whole(const ModelFile& f) { return recognise_tensors(f).whole.model; }

}  // namespace

TEST_CASE("LongCat-Image: the official file names name their model and format", "[recognise][families][image_c]") {
  // The files the templates of comfyui-workflow-templates-json 0.1.123 load.
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"longcat_image_bf16.safetensors", "diffusion", "longcat-image", "bf16"},
      {"longcat_image_edit_bf16.safetensors", "diffusion", "longcat-image-edit", "bf16"},
      {"qwen_2.5_vl_7b_fp8_scaled.safetensors", "text_encoder", "qwen2.5-vl-7b", "fp8_scaled"},
      {"NetaYumev35_pretrained_all_in_one.safetensors", "checkpoint", "netayume-lumina-v3.5", ""},
      {"gemma_2_2b_it_elm_bf16.safetensors", "text_encoder", "gemma2-2b", "bf16"},  // PixelDiT's Gemma 2 2B
      {"ovis_image_bf16.safetensors", "diffusion", "ovis-image-7b", "bf16"},
      {"ovis_2.5.safetensors", "text_encoder", "ovis2.5-2b", ""},
      {"joyai_image_edit_int8_convrot.safetensors", "diffusion", "joyai-image-edit", "int8_convrot"},
      {"qwen3vl_8b_joyimage_edit_int8_convrot.safetensors", "text_encoder", "qwen3vl-8b", "int8_convrot"},
      {"FireRed-Image-Edit-1.1-transformer.safetensors", "diffusion", "firered-image-edit-1.1", ""},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("LongCat-Image: near names are not taken for it", "[recognise][families][image_c]") {
  const std::pair<const char*, const char*> near[] = {
      {"longcat_video_bf16.safetensors", "diffusion"},      // LongCat-Video, another model of the same lab
      {"longcat_image_lora_style.safetensors", "diffusion"},  // a LoRA that only names the family
      {"flux1-dev-fp8.safetensors", "diffusion"},            // the DiT LongCat's blocks come from: its own entry
      {"qwen_image_bf16.safetensors", "diffusion"},          // the other Qwen2.5-VL-7B image model
      {"z_image_bf16.safetensors", "diffusion"},             // the other NextDiT
      {"neta_lumina_v1.safetensors", "checkpoint"},          // Neta Lumina itself, not its NetaYume fine-tune
      {"gemma_3_12b_it_fp8_scaled.safetensors", "text_encoder"},  // Gemma 3, LTX-2's encoder
      {"joyai_image_understanding.safetensors", "diffusion"},  // names the family, not the edit DiT
      {"ovis_u1_3b.safetensors", "diffusion"},               // Ovis-U1, the unified model Ovis-Image grew from
      {"qwen_1.7b_ace15.safetensors", "text_encoder"},       // ACE-Step's Qwen3-1.7B language model
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!kAdded.count(recognise_file_name(file, role).model));
  }
  CHECK(recognise_file_name("flux1-dev-fp8.safetensors", "diffusion").model == "flux1-dev");
}

TEST_CASE("LongCat-Image: headers are told apart by their tensors", "[recognise][families][image_c]") {
  // 10 + 20 blocks and a 3584-wide txt_in: LongCat, whatever the file is called; the two releases share the
  // tensors, so the file name decides between them.
  CHECK(kAdded.count(whole(support::header_of({"longcat-image"}, "/m/dit.safetensors"))));
  CHECK(whole(support::header_of({"longcat-image"}, "/m/longcat_image_edit_bf16.safetensors")) == "longcat-image-edit");
  CHECK(whole(support::header_of({"longcat-image"}, "/m/longcat_image_bf16.safetensors")) == "longcat-image");
  // FLUX.1 (19 + 38 blocks, guidance and vector inputs) and Qwen-Image headers keep their own entries.
  CHECK(whole(support::header_of({"flux1-dev"}, "/m/dit.safetensors")) == "flux1-dev");
  CHECK(!kAdded.count(whole(support::header_of({"qwen-image"}, "/m/dit.safetensors"))));
}

TEST_CASE("NetaYume Lumina and Gemma-2-2B: headers are told apart by their tensors", "[recognise][families][image_c]") {
  // 2304-wide caption embedder and 26 layers: the Lumina 2 DiT; Z-Image (3840 wide, 30 layers) keeps its entry.
  CHECK(whole(support::header_of({"netayume-lumina-v3.5"}, "/m/dit.safetensors")) == "netayume-lumina-v3.5");
  CHECK(whole(support::header_of({"z-image"}, "/m/dit.safetensors")).rfind("z-image", 0) == 0);
  // 26 Gemma 2 layers of 2304 with a 256000-row vocabulary; Qwen3 and Gemma 3 headers keep theirs.
  CHECK(whole(support::header_of({"gemma2-2b"}, "/m/te.safetensors")) == "gemma2-2b");
  CHECK(!kAdded.count(whole(support::header_of({"qwen3-4b"}, "/m/te.safetensors"))));
  CHECK(!kAdded.count(whole(support::header_of({"gemma3-12b"}, "/m/te.safetensors"))));
}

TEST_CASE("Ovis-Image: headers are told apart by their tensors", "[recognise][families][image_c]") {
  // A SwiGLU gate, 6 + 27 blocks and a 2048-wide txt_in: Ovis-Image; FLUX.1 and LongCat headers keep theirs.
  CHECK(whole(support::header_of({"ovis-image-7b"}, "/m/dit.safetensors")) == "ovis-image-7b");
  CHECK(whole(support::header_of({"longcat-image"}, "/m/dit.safetensors")) != "ovis-image-7b");
  CHECK(whole(support::header_of({"flux1-dev"}, "/m/dit.safetensors")) == "flux1-dev");
  // Qwen3-1.7B with 28 layers of 2048; ACE-Step's 1.7B LM header keeps its own entry.
  CHECK(whole(support::header_of({"ovis2.5-2b"}, "/m/te.safetensors")) == "ovis2.5-2b");
  CHECK(whole(support::header_of({"qwen3-1.7b-ace15-lm"}, "/m/qwen_1.7b_ace15.safetensors")) == "qwen3-1.7b-ace15-lm");
}

TEST_CASE("JoyAI-Image-Edit: its header is told apart by its tensors", "[recognise][families][image_c]") {
  // 40 blocks of 4096 with modulation tables and a Conv3d patch embedder: JoyAI; Qwen-Image keeps its entry.
  CHECK(whole(support::header_of({"joyai-image-edit"}, "/m/dit.safetensors")) == "joyai-image-edit");
  CHECK(whole(support::header_of({"qwen-image"}, "/m/dit.safetensors")) != "joyai-image-edit");
  // FireRed-Image-Edit has Qwen-Image's tensors: its file name names it, a Qwen-Image-Edit name keeps its entry.
  CHECK(whole(support::header_of({"qwen-image"}, "/m/FireRed-Image-Edit-1.1-transformer.safetensors")) ==
        "firered-image-edit-1.1");
  CHECK(whole(support::header_of({"qwen-image"}, "/m/qwen_image_edit_2509_fp8_e4m3fn.safetensors")) ==
        "qwen-image-edit-2509");
}
