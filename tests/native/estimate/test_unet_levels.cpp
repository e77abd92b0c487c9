// UNet models (SD 1.5, SDXL): activations are set per resolution level (models.json arch.levels), not per
// token of one width. The figures below are worked out by hand from the levels, never read from the output.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/inspect/recognise.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

std::uint64_t sample_part(const json& r, const std::string& key) {
  for (const auto& s : r["stages"])
    if (s["name"] == "sample") return s["breakdown"].value(key, std::uint64_t{0});
  FAIL("no sample stage in " << r.dump().substr(0, 400));
  return 0;
}

}  // namespace

TEST_CASE("SD 1.5 at 512x512: skip connections of every level plus the largest level's working set",
          "[estimate][unet]") {
  const json r = api::estimate({{"model", "sd15"}, {"width", 512}, {"height", 512}, {"cfg", 1.0}, {"vram", 24}});
  // Latent 64x64 = 4096 px at level 0, /4 per level. Skips: (320 + 2x320) x 4096 + (320 + 2x640) x 1024
  // + (640 + 2x1280) x 256 + (1280 + 2x1280) x 64 = 6,635,520. Largest level: level 0 with attention,
  // max(8 x 320, 2 x 320 + 4 x 1280) x 4096 = 23,592,960. In fp16: 2 bytes each.
  const std::uint64_t expected = (6635520ull + 23592960ull) * 2;
  CHECK(sample_part(r, "activations") == expected);
}

TEST_CASE("a UNet's activations grow with the latent area, four times for twice the side", "[estimate][unet]") {
  for (const char* model : {"sd15", "sdxl-base", "sdxl-refiner"}) {
    INFO(model);
    const json a = api::estimate({{"model", model}, {"width", 512}, {"height", 512}, {"cfg", 1.0}, {"vram", 48}});
    const json b = api::estimate({{"model", model}, {"width", 1024}, {"height", 1024}, {"cfg", 1.0}, {"vram", 48}});
    CHECK(sample_part(b, "activations") == 4 * sample_part(a, "activations"));
  }
}

TEST_CASE("SDXL at 1024x1024 peaks at its 640-wide level, not at its 1280-wide one", "[estimate][unet]") {
  const json r = api::estimate({{"model", "sdxl-base"}, {"cfg", 1.0}, {"vram", 24}});
  // Latent 128x128 = 16384 px. Skips: (320 + 2x320) x 16384 + (320 + 2x640) x 4096 + (640 + 2x1280) x 1024
  // = 25,559,040. Level peaks: level 0, convolutions only, 6 x 320 x 16384 = 31,457,280; level 1:
  // (2 x 640 + 4 x 2560) x 4096 = 47,185,920; level 2: (2 x 1280 + 4 x 5120) x 1024 = 23,592,960.
  CHECK(sample_part(r, "activations") == (25559040ull + 47185920ull) * 2);
}

TEST_CASE("SD checkpoints and SD 3.5 files are known by their own names, near relatives are not taken",
          "[recognise][unet]") {
  struct Name { const char* file; const char* role; const char* model; };
  const Name names[] = {
      {"sd_xl_base_1.0.safetensors", "checkpoint", "sdxl-base"},
      {"sd_xl_refiner_1.0.safetensors", "checkpoint", "sdxl-refiner"},
      {"sd_xl_turbo_1.0_fp16.safetensors", "checkpoint", "sdxl-turbo"},
      {"v1-5-pruned-emaonly-fp16.safetensors", "checkpoint", "sd15"},
      {"sd3.5_large_fp8_scaled.safetensors", "checkpoint", "sd3.5-large"},
      {"clip_g.safetensors", "text_encoder", "clip-g"},
      // A ControlNet of SD 3.5, SD 3.5 Medium and Large Turbo are other models: unknown, never SD 3.5 Large.
      {"sd3.5_large_controlnet_canny.safetensors", "diffusion", ""},
      {"sd3.5_medium.safetensors", "checkpoint", ""},
      {"sd3.5_large_turbo.safetensors", "checkpoint", ""},
  };
  for (const auto& n : names) {
    INFO(n.file << " as " << n.role);
    CHECK(recognise_file_name(n.file, n.role).model == n.model);
  }
}
