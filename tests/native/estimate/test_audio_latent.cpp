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

TEST_CASE("Stable Audio 3 runs 10.77 positions a second plus its 64 memory tokens", "[estimate][audio]") {
  const json r = api::estimate({{"model", "stable-audio-3-medium"}, {"seconds", 150}, {"vram", 24}});
  // 150 s x 44100 / 4096 = 1615 positions, one token each, and 64 memory tokens in the sequence.
  CHECK(notes_have(stage_json(r, "sample"), "1679 tokens per sequence"));
  // SAME-L holds 1500 elements of 2 bytes (bf16) per output sample: 150 s x 44100 = 6,615,000 samples.
  const json d = api::estimate({{"model", "stable-audio-3-same-l-vae"}, {"seconds", 150}, {"vram", 80}});
  CHECK(stage_json(d, "vae_decode")["breakdown"]["activations"].get<std::uint64_t>() == 6615000ull * 1500 * 2);
}

TEST_CASE("a windowed audio DiT holds one window, whatever the clip's length", "[estimate][audio]") {
  // MiniMax Music 3: windows of 689 positions (latent_length(200 frames)), one timestep token beside them.
  const json r120 = api::estimate({{"model", "minimax-music-3"}, {"seconds", 120}, {"vram", 24}});
  const json r240 = api::estimate({{"model", "minimax-music-3"}, {"seconds", 240}, {"vram", 24}});
  const json& s120 = stage_json(r120, "sample");
  const json& s240 = stage_json(r240, "sample");
  CHECK(notes_have(s120, "690 tokens per sequence"));
  // 120 s x 86.1328 = 10,336 positions: 1 + ceil((10336 - 689) / 344) = 30 windows per step.
  CHECK(notes_have(s120, "30 windows per step"));
  CHECK(s120["breakdown"]["activations"] == s240["breakdown"]["activations"]);
  // A clip shorter than one window is one pass over its own positions: 5 s = 431 positions + 1.
  const json r5 = api::estimate({{"model", "minimax-music-3"}, {"seconds", 5}, {"vram", 24}});
  CHECK(notes_have(stage_json(r5, "sample"), "432 tokens per sequence"));
  CHECK_FALSE(notes_have(stage_json(r5, "sample"), "windows per step"));
}

TEST_CASE("an audio decoder's fixed working set stays whole in the retry's pieces", "[estimate][audio]") {
  // MiniMax Music 3's DAV: 1400 fp32 elements per output sample plus 8e8 whatever the length.
  const json r = api::estimate({{"model", "minimax-music-3-dav"}, {"seconds", 10}, {"vram", 80}});
  const json& d = stage_json(r, "vae_decode");
  CHECK(d["breakdown"]["activations"].get<std::uint64_t>() == 441000ull * 1400 * 4);
  CHECK(d["breakdown"]["fixed_working_set"].get<std::uint64_t>() == 800000000ull * 4);
}
