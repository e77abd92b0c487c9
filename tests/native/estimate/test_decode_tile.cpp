// api::decode_tile (issue 25): the tile of ComfyUI's tiled decode, chosen by the core in one request.
// Every priced candidate is checked against an independent api::estimate of VAEDecodeTiled at that tile.
#include <algorithm>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/api/api.hpp"
#include "core/base/units.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

// The decode stage's peak as estimate answers it for the VAE alone in `tile_px` tiles.
std::uint64_t tiled_peak(const std::string& vae, int width, int height, int frames, int tile_px) {
  json request = {{"model", vae}, {"width", width}, {"height", height}, {"decode_mode", "tiled"},
                  {"decode_tile_px", tile_px}};
  if (frames > 1) request["frames"] = frames;
  const json answer = api::estimate(request);
  std::uint64_t peak = 0;
  for (const auto& s : answer["stages"]) peak = std::max(peak, s["peak_bytes"].get<std::uint64_t>());
  return peak;
}

json tile_for(int latent, std::optional<std::uint64_t> budget, const std::string& vae = "flux-vae") {
  json request = {{"model", vae}, {"latent_width", latent}, {"latent_height", latent}};
  if (budget) request["budget_bytes"] = *budget;
  return api::decode_tile(request);
}

}  // namespace

TEST_CASE("decode_tile: the largest candidate that fits, each priced as estimate prices it", "[decode_tile][api]") {
  const json all = tile_for(256, std::nullopt)["candidates_latent"];
  for (double budget_gib : {0.9, 1.6, 3.0}) {
    INFO("budget " << budget_gib << " GiB");
    const auto budget = static_cast<std::uint64_t>(budget_gib * GiB);
    const json t = tile_for(256, budget);  // 2048 x 2048 px
    const json& priced = t["priced"];
    REQUIRE_FALSE(priced.empty());
    for (std::size_t i = 0; i < priced.size(); ++i) {
      // Tried largest first, one candidate after the other, each at its own tile in px.
      CHECK(priced[i]["tile_latent"] == all[i]);
      CHECK(priced[i]["tile_px"] == std::max(64, all[i].get<int>() * 8));
      CHECK(priced[i]["peak_bytes"] == tiled_peak("flux-vae", 2048, 2048, 1, priced[i]["tile_px"]));
      if (i + 1 < priced.size()) CHECK(priced[i]["peak_bytes"].get<std::uint64_t>() > budget);
    }
    CHECK(t["tile_latent"] == priced.back()["tile_latent"]);
    CHECK(t["peak_bytes"] == priced.back()["peak_bytes"]);
    CHECK(t["over_budget"] == (t["peak_bytes"].get<std::uint64_t>() > budget));
    if (!t["over_budget"].get<bool>()) CHECK(t["peak_bytes"].get<std::uint64_t>() <= budget);
    CHECK(t["overlap_latent"] == std::max(4, t["tile_latent"].get<int>() / 4));
  }
  // A smaller budget never gets a larger tile.
  CHECK(tile_for(256, static_cast<std::uint64_t>(0.9 * GiB))["tile_latent"] <=
        tile_for(256, 3 * GiB)["tile_latent"]);
}

TEST_CASE("decode_tile: past the latent's edge a bigger tile changes nothing", "[decode_tile][api]") {
  // No budget: the smallest candidate that covers the latent, priced once.
  const json t = api::decode_tile({{"model", "flux-vae"}, {"latent_width", 100}, {"latent_height", 60}});
  REQUIRE(t["priced"].size() == 1);
  int covering = 0;
  for (int c : t["candidates_latent"]) if (c >= 100) covering = c;
  CHECK(t["tile_latent"] == covering);
  CHECK(t["budget_bytes"].is_null());
  CHECK_FALSE(t["over_budget"].get<bool>());
  // A latent larger than every candidate starts at the largest.
  CHECK(tile_for(300, std::nullopt)["tile_latent"] == t["candidates_latent"][0]);
}

TEST_CASE("decode_tile: a budget below the smallest tile says so and answers the smallest", "[decode_tile][api]") {
  const json t = tile_for(256, 1 * MiB);
  CHECK(t["over_budget"].get<bool>());
  CHECK(t["tile_latent"] == t["candidates_latent"].back());
  CHECK(t["peak_bytes"].get<std::uint64_t>() > 1 * MiB);
  CHECK(t["overlap_latent"] == 2);  // the narrowest seam, as the fallback ran before the core chose it
}

TEST_CASE("decode_tile: a video VAE prices the clip's frames and keeps a 2 px seam", "[decode_tile][api]") {
  json t = api::decode_tile({{"model", "wan2.1-vae"}, {"latent_width", 104}, {"latent_height", 60},
                             {"latent_frames", 21}, {"budget_bytes", 2 * GiB}});
  // 21 latent frames are 81 video frames (temporal stride 4).
  CHECK(t["peak_bytes"] == tiled_peak("wan2.1-vae", 832, 480, 81, t["tile_px"]));
  CHECK(t["overlap_latent"] == std::max(2, t["tile_latent"].get<int>() / 4));
}

TEST_CASE("decode_tile: bad input names its field", "[decode_tile][api]") {
  using support::input_error_field;
  const json catalog = api::catalog();
  std::string diffusion;
  for (const auto& m : catalog["models"])
    if (m["role"] == "diffusion_model") diffusion = m["name"];
  CHECK(input_error_field([&] { tile_for(64, std::nullopt, diffusion); }) == "model");
  CHECK(input_error_field([&] { tile_for(64, std::nullopt, "no-such-vae"); }) == "model");
  // 4096 latent px at 8x is 32768 px, past the estimator's largest image.
  CHECK(input_error_field([&] { tile_for(4096, std::nullopt); }) == "latent_width");
  CHECK(input_error_field([&] { tile_for(1, std::nullopt); }) == "latent_width");  // 8 px: under 16
  CHECK(input_error_field([&] {
          api::decode_tile({{"model", "flux-vae"}, {"latent_width", 64}});
        }) == "latent_height");
  // 2501 latent frames are 10001 video frames at stride 4: the longest clip; the field's own range
  // refuses more, and a video VAE's stride is checked against the estimator's limit.
  CHECK(input_error_field([&] {
          api::decode_tile({{"model", "wan2.1-vae"}, {"latent_width", 8}, {"latent_height", 8}, {"latent_frames", 2502}});
        }) == "latent_frames");
}
