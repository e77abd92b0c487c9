// The 2026 families of issue 19 (Krea 2, Qwen3-VL-4B, Wan Animate 2, SCAIL-2, Wan Dancer, HuMo, ChronoEdit,
// Wan-Move, Bernini-R) and the weight formats of their official files, recognised from the names the
// official templates load and from the tensors their `recognise` sections name; a name that only shares a
// word is not recognised.
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

using support::header_of;

struct Named {
  const char* file;
  const char* role;
  const char* model;
  const char* precision;
};

// Each file name, as a loader of its role gives it, names that model and precision.
template <std::size_t N>
void check_names(const Named (&names)[N]) {
  for (const auto& n : names) {
    INFO(n.file << " as " << n.role);
    NameRecognition r = recognise_file_name(n.file, n.role);
    CHECK(r.model == n.model);
    CHECK(r.precision == n.precision);
  }
}

}  // namespace

TEST_CASE("2026 families: the official file names name their model and format", "[recognise][families]") {
  // The files the official templates of comfyui-workflow-templates-json 0.1.123 load.
  const Named official[] = {
      {"qwen3vl_4b_int8_convrot.safetensors", "text_encoder", "qwen3vl-4b", "int8_convrot"},
      {"qwen3vl_4b_fp8_scaled.safetensors", "text_encoder", "qwen3vl-4b", "fp8_scaled"},
      {"krea2_turbo_fp8_scaled.safetensors", "diffusion", "krea2-turbo", "fp8_scaled"},
      {"krea2_turbo_int8_convrot.safetensors", "diffusion", "krea2-turbo", "int8_convrot"},
      {"krea2_raw_bf16.safetensors", "diffusion", "krea2-raw", "bf16"},
      {"wan_animate_2_int8_convrot.safetensors", "diffusion", "wan-animate-2-14b", "int8_convrot"},
      {"wan_animate_2_distill_int8_convrot.safetensors", "diffusion", "wan-animate-2-14b", "int8_convrot"},
      {"wan2.1_14B_SCAIL_2_fp16.safetensors", "diffusion", "wan2.1-scail-2-14b", "fp16"},
      {"wan2.1_14B_SCAIL_2_int8_convrot.safetensors", "diffusion", "wan2.1-scail-2-14b", "int8_convrot"},
      {"wan2.2_dancer_14b_global_fp8_scaled.safetensors", "diffusion", "wan2.2-dancer-14b", "fp8_scaled"},
      {"wan2.2_dancer_14b_local_fp8_scaled.safetensors", "diffusion", "wan2.2-dancer-14b", "fp8_scaled"},
      {"humo_17B_fp8_e4m3fn.safetensors", "diffusion", "humo-17b", "fp8_e4m3fn"},
      {"qwen_image_vae.safetensors", "vae", "wan2.1-vae", ""},
      {"chrono_edit_14B_fp16.safetensors", "diffusion", "chrono-edit-14b", "fp16"},
      {"Wan21-WanMove_fp8_scaled_e4m3fn_KJ.safetensors", "diffusion", "wan-move-14b", "fp8_scaled"},
      {"wan2.2_bernini_r_high_noise_fp8_scaled.safetensors", "diffusion", "bernini-r-a14b", "fp8_scaled"},
      {"wan2.2_bernini_r_low_noise_fp8_scaled.safetensors", "diffusion", "bernini-r-a14b", "fp8_scaled"},
  };
  check_names(official);
  // The Qwen-Image VAE is sized as the Wan 2.1 VAE, and the answer says why.
  NameRecognition qvae = recognise_file_name("qwen_image_vae.safetensors", "vae");
  bool says_why = false;
  for (const auto& note : qvae.notes) says_why = says_why || note.find("Wan 2.1 VAE architecture") != std::string::npos;
  CHECK(says_why);
}

TEST_CASE("2026 families: the new weight formats are read from names, whatever the model", "[recognise][families]") {
  CHECK(precision_from_file_name("qwen3.5_9b_flux3_prompt_upsampler_w4a8.safetensors").value_or("") == "w4a8");
  CHECK(precision_from_file_name("minimax_h3_fl2va_pruned_int4_convrot.safetensors").value_or("") == "convrot_w4a4");
  CHECK(precision_from_file_name("some_dit_convrot_w4a4.safetensors").value_or("") == "convrot_w4a4");
  CHECK(precision_from_file_name("qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors").value_or("") == "nvfp4_awq");
  CHECK(precision_from_file_name("flux1-dev-nvfp4.safetensors").value_or("") == "nvfp4");       // the longer spelling only where written
  CHECK(precision_from_file_name("flux2_klein_9b_int8.safetensors").value_or("") == "int8");  // plain int8 stays int8
  // The bytes of each format follow from its block: 8, 4 and 4.5 bits a weight.
  const ModelInfo& te = resolve_model("qwen3vl-4b");
  REQUIRE(te.params % 16 == 0);
  CHECK(weight_bytes(te, resolve_precision("int8_convrot")) == te.params);
  CHECK(weight_bytes(te, resolve_precision("convrot_w4a4")) == te.params / 2);
  CHECK(weight_bytes(te, resolve_precision("w4a8")) == te.params / 16 * 9);
  CHECK(weight_bytes(te, resolve_precision("nvfp4_awq")) == te.params / 16 * 9);
}

TEST_CASE("2026 families: a name that only shares a word with them names none of them", "[recognise][families]") {
  const std::set<std::string> added = {"qwen3vl-4b",         "krea2-turbo",       "krea2-raw",
                                       "wan-animate-2-14b",  "wan2.1-scail-2-14b", "wan2.2-dancer-14b",
                                       "humo-17b",           "chrono-edit-14b",   "wan-move-14b",
                                       "bernini-r-a14b"};
  const Named near[] = {
      {"qwen3_4b.safetensors", "text_encoder", "qwen3-4b", ""},                 // the text-only Qwen3
      {"qwen3vl_8b_fp8_scaled.safetensors", "text_encoder", "qwen3vl-8b", "fp8_scaled"},  // the 8B, not the 4B
      {"qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors", "text_encoder", "qwen3vl-32b-minimax-h3", "nvfp4_awq"},  // H3's
      {"krea2_style_reference.safetensors", "diffusion", "", ""},               // a Krea 2 LoRA
      {"flux1-krea-dev_fp8_scaled.safetensors", "diffusion", "flux1-krea-dev", "fp8_scaled"},
      {"wan2.2_animate_14B_bf16.safetensors", "diffusion", "wan2.2-animate-14b", "bf16"},  // Animate 1
      {"qwen_image_2.1_vae.safetensors", "vae", "qwen-image-2.1-vae", ""},       // its own VAE, not Wan 2.1's
      {"qwen_image_vae.safetensors", "vae", "wan2.1-vae", ""},                   // Qwen-Image 1.x's, not 2.1's
      {"qwen_image_bf16.safetensors", "diffusion", "qwen-image", "bf16"},        // Qwen-Image 1.x, not 2.1
      {"qwen_image_2.1_turbo_int8_convrot.safetensors", "diffusion", "qwen-image-2.1-turbo", "int8_convrot"},
      {"humo.safetensors", "diffusion", "", ""},
      {"dancer_pose_detector.safetensors", "diffusion", "", ""},
      {"wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "diffusion", "wan2.2-t2v-a14b", "fp8_scaled"},
  };
  for (const auto& n : near) {
    INFO(n.file << " as " << n.role);
    NameRecognition r = recognise_file_name(n.file, n.role);
    CHECK(r.model == n.model);
    CHECK(!added.count(r.model));
    CHECK(r.precision == n.precision);
  }
}

TEST_CASE("2026 families: headers are told apart by their tensors", "[recognise][families]") {
  // Qwen3-VL-4B carries the Qwen3-4B language model plus a vision tower: each header goes to its own entry.
  CHECK(recognise_tensors(header_of({"qwen3vl-4b", "qwen3-4b"}, "/m/te.safetensors")).whole.model == "qwen3vl-4b");
  CHECK(recognise_tensors(header_of({"qwen3-4b"}, "/m/te.safetensors")).whole.model == "qwen3-4b");
  // Turbo and RAW share their tensors; the file name decides between them.
  CHECK(recognise_tensors(header_of({"krea2-turbo"}, "/m/krea2_raw_bf16.safetensors")).whole.model == "krea2-raw");
  CHECK(recognise_tensors(header_of({"krea2-raw"}, "/m/krea2_turbo_bf16.safetensors")).whole.model == "krea2-turbo");
  // A Wan variant's file holds every tensor of the Wan model it extends plus the key ComfyUI's detection
  // reads; the variant wins, under a name that says nothing.
  const std::pair<const char*, const char*> variants[] = {
      {"wan2.1-scail-2-14b", "wan2.1-i2v-14b"}, {"wan2.2-dancer-14b", "wan2.1-i2v-14b"}, {"humo-17b", "wan2.1-t2v-14b"}};
  for (const auto& [variant, base] : variants) {
    INFO(variant << " over " << base);
    CHECK(recognise_tensors(header_of({variant, base}, "/m/dit.safetensors")).whole.model == variant);
    CHECK(recognise_tensors(header_of({base}, "/m/dit.safetensors")).whole.model != variant);
  }
  // Wan Animate 2 is i2v-shaped: the Wan 2.1 I2V header, named as Animate 2, is Animate 2.
  CHECK(recognise_tensors(header_of({"wan2.1-i2v-14b"}, "/m/wan_animate_2_bf16.safetensors")).whole.model ==
        "wan-animate-2-14b");
  CHECK(recognise_tensors(header_of({"wan2.1-i2v-14b"}, "/m/wan2.1_i2v_14B_bf16.safetensors")).whole.model ==
        "wan2.1-i2v-14b");
}

TEST_CASE("HiDream: I1, E1 and Llama 3.1 8B are named by their files and tensors, near names are not", "[recognise][families]") {
  const Named official[] = {
      {"hidream_i1_dev_fp8.safetensors", "diffusion", "hidream-i1", "fp8_e4m3fn"},
      {"hidream_i1_full_fp16.safetensors", "diffusion", "hidream-i1", "fp16"},
      {"hidream_e1_1_bf16.safetensors", "diffusion", "hidream-e1", "bf16"},
      {"llama_3.1_8b_instruct_fp8_scaled.safetensors", "text_encoder", "llama-3.1-8b", "fp8_scaled"},
      // HiDream-O1 is a pixel-space model of another architecture, a catalog model of its own
      // (test_recognise_ernie_ideogram4_hidream_o1.cpp), never I1; HunyuanVideo's encoder is LLaVA-Llama-3, a
      // catalog model of its own (test_recognise_hunyuan_video_kandinsky5.cpp), never Llama 3.1.
      {"hidream_o1_image_bf16.safetensors", "diffusion", "hidream-o1-image", "bf16"},
      {"llava_llama3_fp8_scaled.safetensors", "text_encoder", "llava-llama3-8b", "fp8_scaled"},
  };
  check_names(official);
  // I1 and E1 share their tensors: the file name decides, and a name that says nothing still gets HiDream.
  CHECK(recognise_tensors(header_of({"hidream-i1"}, "/m/hidream_e1_full_bf16.safetensors")).whole.model == "hidream-e1");
  CHECK(recognise_tensors(header_of({"hidream-e1"}, "/m/hidream_i1_dev_bf16.safetensors")).whole.model == "hidream-i1");
  CHECK(recognise_tensors(header_of({"hidream-i1"}, "/m/dit.safetensors")).whole.model.rfind("hidream-", 0) == 0);
  CHECK(recognise_tensors(header_of({"llama-3.1-8b"}, "/m/te.safetensors")).whole.model == "llama-3.1-8b");
  // LLaVA-Llama-3's embedding has 128320 rows, not Llama 3.1's 128256: not taken for it.
  ModelFile llava = header_of({"llama-3.1-8b"}, "/m/te.safetensors");
  for (auto& t : llava.tensors)
    if (t.name == "model.embed_tokens.weight") t.shape = {128320, 4096};
  CHECK(recognise_tensors(llava).whole.model != "llama-3.1-8b");
}
