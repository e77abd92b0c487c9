// Issue 26, Mage-Flow: the official text-to-image, Turbo and edit files name their model and format, the Mage-VAE
// file names the Mage-VAE (not the FLUX.2 VAE its latent format shares), and a 12-block header with a 2560-wide
// txt_norm is Mage-Flow, not Qwen-Image (60 blocks, 3584), nor Qwen-Image Mage-Flow.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

const std::set<std::string> kAdded = {"mage-flow", "mage-flow-edit", "mage-flow-vae"};

std::string whole(const ModelFile& f) { return recognise_tensors(f).whole.model; }

}  // namespace

TEST_CASE("Mage-Flow: the official file names name their model and format", "[recognise][families][mage_flow]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"mage_flow_int8_convrot.safetensors", "diffusion", "mage-flow", "int8_convrot"},
      {"mage_flow_turbo_int8_convrot.safetensors", "diffusion", "mage-flow", "int8_convrot"},
      {"mage_flow_bf16.safetensors", "diffusion", "mage-flow", "bf16"},
      {"mage_flow_edit_int8_convrot.safetensors", "diffusion", "mage-flow-edit", "int8_convrot"},
      {"mage_flow_edit_turbo_int8_convrot.safetensors", "diffusion", "mage-flow-edit", "int8_convrot"},
      {"mage_flow_vae_bf16.safetensors", "vae", "mage-flow-vae", "bf16"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    CHECK(r.precision == precision);
  }
}

TEST_CASE("Mage-Flow: near names and headers keep their own entries", "[recognise][families][mage_flow]") {
  const std::pair<const char*, const char*> near[] = {
      {"qwen_image_fp8_e4m3fn.safetensors", "diffusion"},
      {"flux2-vae.safetensors", "vae"},
      {"qwen_image_vae.safetensors", "vae"},
      {"mage_vl_4b.safetensors", "diffusion"},  // Mage-VL, the family's understanding model
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!kAdded.count(recognise_file_name(file, role).model));
  }
  CHECK(whole(support::header_of({"mage-flow"}, "/m/dit.safetensors")).rfind("mage-flow", 0) == 0);
  CHECK(whole(support::header_of({"mage-flow"}, "/m/mage_flow_edit_bf16.safetensors")) == "mage-flow-edit");
  CHECK(!kAdded.count(whole(support::header_of({"qwen-image"}, "/m/dit.safetensors"))));
  CHECK(whole(support::header_of({"mage-flow-vae"}, "/m/vae.safetensors")) == "mage-flow-vae");
  CHECK(!kAdded.count(whole(support::header_of({"flux2-vae"}, "/m/vae.safetensors"))));
}
