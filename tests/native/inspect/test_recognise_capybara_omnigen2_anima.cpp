// Issue 26, image families: Capybara v0.1 (loaded by ComfyUI as a HunyuanVideo 1.5 DiT), OmniGen2 with its
// Qwen2.5-VL-3B encoder, and Anima (a Cosmos-Predict2 2B DiT with an LLM adapter) with Qwen3-0.6B. The files of
// the official templates name their models and formats; headers are told apart by their tensors; the names and
// headers of near families (HunyuanVideo 1.5 itself, Boogu-Image, Cosmos-Predict2, the other Qwen encoders) are
// not taken for them.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

const std::set<std::string> kAdded = {"capybara-v0.1",   "omnigen2",       "qwen2.5-vl-3b",
                                      "anima-base-v1.0", "anima-preview3", "qwen3-0.6b"};

std::string whole(const ModelFile& f) { return recognise_tensors(f).whole.model; }

}  // namespace

TEST_CASE("Capybara, OmniGen2, Anima: the official file names name their model and format",
          "[recognise][families][image_a]") {
  // The files the templates of comfyui-workflow-templates-json 0.1.123 load.
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"capybara_v0.1.safetensors", "diffusion", "capybara-v0.1", ""},
      {"omnigen2_fp16.safetensors", "diffusion", "omnigen2", "fp16"},
      {"qwen_2.5_vl_fp16.safetensors", "text_encoder", "qwen2.5-vl-3b", "fp16"},
      {"anima-base-v1.0.safetensors", "diffusion", "anima-base-v1.0", ""},
      {"anima-preview3-base.safetensors", "diffusion", "anima-preview3", ""},
      {"qwen_3_06b_base.safetensors", "text_encoder", "qwen3-0.6b", ""},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("Capybara, OmniGen2, Anima: near names are not taken for them", "[recognise][families][image_a]") {
  const std::pair<const char*, const char*> near[] = {
      {"hunyuanvideo1.5_720p_i2v_fp16.safetensors", "diffusion"},  // the DiT Capybara is built on: its own entry
      {"boogu_image_edit_fp8_scaled.safetensors", "diffusion"},    // an OmniGen2 derivative, not OmniGen2
      {"omnigen_v1.safetensors", "diffusion"},                     // OmniGen 1 (Phi-3 based)
      {"anima-turbo-lora-v0.2.safetensors", "diffusion"},          // the turbo LoRA, not a DiT
      {"anima-lllite-inpainting-v2.safetensors", "diffusion"},     // the control patch
      {"cosmos_predict2_2B_t2i.safetensors", "diffusion"},         // the plain Cosmos-Predict2 Anima is built on
      {"qwen_2.5_vl_7b_fp8_scaled.safetensors", "text_encoder"},   // the 7B, its own entry
      {"qwen_3_4b.safetensors", "text_encoder"},
      {"qwen3.5_9b_int8_convrot.safetensors", "text_encoder"},
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!kAdded.count(recognise_file_name(file, role).model));
  }
  // The 7B and 4B encoders still name their own entries.
  CHECK(recognise_file_name("qwen_2.5_vl_7b_fp8_scaled.safetensors", "text_encoder").model == "qwen2.5-vl-7b");
  CHECK(recognise_file_name("qwen_3_4b.safetensors", "text_encoder").model == "qwen3-4b");
}

TEST_CASE("Capybara, OmniGen2, Anima: headers are told apart by their tensors", "[recognise][families][image_a]") {
  // OmniGen2's and Anima's headers name their own entries, whatever the file is called.
  CHECK(whole(support::header_of({"omnigen2"}, "/m/dit.safetensors", "fp16")) == "omnigen2");
  CHECK(whole(support::header_of({"anima-base-v1.0"}, "/m/dit.safetensors")).rfind("anima-", 0) == 0);
  // The two Anima releases share their tensors: the file name decides.
  CHECK(whole(support::header_of({"anima-base-v1.0"}, "/m/anima-preview3-base.safetensors")) == "anima-preview3");
  // Capybara's tensors are HunyuanVideo 1.5's and no tensor tells them apart: a 1.5 header is taken for the base
  // model (same shape, same estimate), and only the file name names Capybara.
  CHECK(whole(support::header_of({"hunyuan-video-1.5-i2v"}, "/m/dit.safetensors", "fp16")).rfind("hunyuan-video-1.5-", 0) == 0);
  // The encoders: 36 layers of 2048 with q/k/v biases, 28 layers of 1024 with q/k norms.
  CHECK(whole(support::header_of({"qwen2.5-vl-3b"}, "/m/te.safetensors")) == "qwen2.5-vl-3b");
  CHECK(whole(support::header_of({"qwen3-0.6b"}, "/m/te.safetensors")) == "qwen3-0.6b");
  // Other encoders' headers are not taken for the new ones.
  CHECK(!kAdded.count(whole(support::header_of({"qwen2.5-vl-7b"}, "/m/te.safetensors"))));
  CHECK(!kAdded.count(whole(support::header_of({"qwen3-4b"}, "/m/te.safetensors"))));
  // A Flux header is not OmniGen2's or Anima's.
  CHECK(!kAdded.count(whole(support::header_of({"flux1-dev"}, "/m/dit.safetensors"))));
}
