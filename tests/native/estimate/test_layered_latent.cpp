// Qwen-Image-Layered (models.json arch.latent_layers): the latent stacks the composite image and its layers as
// frames of one sequence, with no temporal compression, and the VAE decodes each layer as an image. Figures are
// worked out by hand from the data, never read from the output.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "support/input_errors.hpp"
#include "support/stage_json.hpp"

using namespace headroom;
using nlohmann::json;
using support::notes_have;
using support::stage_json;

namespace {

json layered(int frames, int refs) {
  return api::estimate({{"model", "qwen-image-layered"}, {"width", 640}, {"height", 640}, {"frames", frames},
                        {"reference_images", refs}, {"vram", 24}});
}

}  // namespace

TEST_CASE("a layered latent puts every layer frame and the reference image in one sequence", "[estimate][layers]") {
  // 640 px / 8 = 80 latent px, patch 2: 1600 tokens a frame; 3 frames + 1 reference = 6400, + 256 text tokens.
  CHECK(notes_have(stage_json(layered(3, 1), "sample"), "6656 tokens per sequence"));
  // One more layer adds one frame of 1600 tokens, not a 4k+1 step of a video VAE.
  CHECK(notes_have(stage_json(layered(4, 1), "sample"), "8256 tokens per sequence"));
  CHECK(notes_have(stage_json(layered(4, 0), "sample"), "6656 tokens per sequence"));
}

TEST_CASE("the layers of a layered latent are decoded as images", "[estimate][layers]") {
  const json one = stage_json(layered(1, 1), "vae_decode");
  const json three = stage_json(layered(3, 1), "vae_decode");
  CHECK(notes_have(three, "the 3 layer frames are decoded as 3 images"));
  const auto a1 = one["breakdown"]["activations"].get<std::uint64_t>();
  REQUIRE(a1 > 0);
  // ComfyUI decodes the batch of three at once when it fits: three single-image working sets.
  CHECK(three["breakdown"]["activations"].get<std::uint64_t>() == 3 * a1);
}

TEST_CASE("frames stay refused for an image model without layers", "[estimate][layers]") {
  CHECK(support::input_error_field([] { api::estimate({{"model", "qwen-image-edit-2511"}, {"frames", 3}}); }) == "frames");
}
