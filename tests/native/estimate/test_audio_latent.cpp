// Audio models (ACE-Step, Stable Audio): the latent is 1-D, sized by the clip's seconds and models.json
// arch.audio, not by width and height. Figures are worked out by hand from the data, never read from the output.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "support/stage_json.hpp"

using namespace headroom;
using nlohmann::json;

using support::notes_have;
using support::stage_json;

TEST_CASE("ACE-Step 1.5 samples 25 latent positions per second, two per token", "[estimate][audio]") {
  const json r = api::estimate({{"model", "ace-step-1.5-turbo"}, {"seconds", 120}, {"vram", 24}});
  // 120 s x 25 = 3000 positions on one row, patch 2 along time: 1500 tokens.
  CHECK(notes_have(stage_json(r, "sample"), "1500 tokens per sequence"));
  const json r60 = api::estimate({{"model", "ace-step-1.5-turbo"}, {"seconds", 60}, {"vram", 24}});
  CHECK(notes_have(stage_json(r60, "sample"), "750 tokens per sequence"));
}

TEST_CASE("ACE-Step 1.0 puts the 16 mel rows of a position in one token", "[estimate][audio]") {
  const json r = api::estimate({{"model", "ace-step-v1-3.5b"}, {"seconds", 30}, {"cfg", 1.0}, {"vram", 24}});
  // 30 s x 10.7666 = 323 positions (rounded), 16 rows patched 16 high: 323 tokens.
  CHECK(notes_have(stage_json(r, "sample"), "323 tokens per sequence"));
}

TEST_CASE("an audio VAE's decode grows with the samples it writes", "[estimate][audio]") {
  const json r = api::estimate({{"model", "ace-step-1.5-vae"}, {"seconds", 10}, {"vram", 24}});
  // 10 s at 48 kHz = 480,000 samples x 1067 elements x 2 bytes (fp16).
  CHECK(stage_json(r, "vae_decode")["breakdown"]["activations"].get<std::uint64_t>() == 480000ull * 1067 * 2);
  const json r20 = api::estimate({{"model", "ace-step-1.5-vae"}, {"seconds", 20}, {"vram", 24}});
  CHECK(stage_json(r20, "vae_decode")["breakdown"]["activations"].get<std::uint64_t>() == 960000ull * 1067 * 2);
}

TEST_CASE("seconds are checked against the kind of model", "[estimate][audio]") {
  auto field_of = [](const json& req) -> std::string {
    try {
      api::estimate(req);
    } catch (const InputError& e) {
      return e.field();
    }
    return "";
  };
  CHECK(field_of({{"model", "flux1-dev"}, {"seconds", 30}}) == "seconds");
  CHECK(field_of({{"model", "ace-step-1.5-turbo"}, {"seconds", 5000}}) == "seconds");
  // No seconds given: the model's default clip (120 s) is estimated, not an error.
  CHECK(field_of({{"model", "ace-step-1.5-turbo"}}).empty());
}
