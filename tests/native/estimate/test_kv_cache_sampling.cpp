// Block-autoregressive sampling (SamplingKind::KvCacheBlocks, ComfyUI's ar_video for Causal Forcing): the pass
// holds one block's tokens, the k/v cache every latent frame's. Every figure is worked out by hand from the
// Wan 2.1 1.3B layout of causal-forcing-1.3b (30 blocks, 12 heads x 128 = 1536 wide, ffn 8960, 512 text tokens,
// fp16) and the formula: k/v cache = blocks x 2 x tokens x width x 2 B; never read back from the output.
#include <cstdint>

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

// The Wan block's larger phase: the FFN's 2 x 1536 + 2 x 8960 = 20,992 live fp16 elements per token.
constexpr std::uint64_t kActivationBytesPerToken = 20992ull * 2;
constexpr std::uint64_t kCrossCache = 30ull * 2 * 512 * 1536 * 2;  // 94,371,840 B whatever the clip

json sample_of(json request) {
  request["model"] = "causal-forcing-1.3b";
  request["vram"] = 24;
  return stage_json(api::estimate(request), "sample");
}

std::uint64_t item(const json& stage, const char* name) {
  const json& b = stage["breakdown"];
  return b.contains(name) ? b[name].get<std::uint64_t>() : 0;
}

std::string field_of(const json& request) {
  return support::input_error_field([&] { api::estimate(request); });
}

}  // namespace

TEST_CASE("the k/v cache of block-by-block sampling holds every latent frame's tokens", "[estimate][kv_cache]") {
  // 832 x 480 x 81 (the model's default, the template's shape): 21 latent frames of 60 x 104, 30 x 52 = 1560
  // tokens each, 32,760 cached; one frame per block (framewise).
  const json a = sample_of(json::object());
  CHECK(item(a, "kv_cache") == 30ull * 2 * 32760 * 1536 * 2);  // 6,038,323,200 B = 6.04 GB
  CHECK(item(a, "kv_cache") == 6038323200ull);
  CHECK(item(a, "cross_attention_cache") == kCrossCache);
  CHECK(item(a, "activations") == kActivationBytesPerToken * 1560);
  CHECK(notes_have(a, "21 blocks of 1 latent frame(s), 1560 tokens per pass"));

  // 1280 x 720 x 33 in blocks of 3 frames: 9 latent frames of 90 x 160, 45 x 80 = 3600 tokens each.
  const json b = sample_of({{"width", 1280}, {"height", 720}, {"frames", 33}, {"block_frames", 3}});
  CHECK(item(b, "kv_cache") == 30ull * 2 * (9 * 3600) * 1536 * 2);
  CHECK(item(b, "cross_attention_cache") == kCrossCache);
  CHECK(item(b, "activations") == kActivationBytesPerToken * 3 * 3600);
  CHECK(notes_have(b, "3 blocks of 3 latent frame(s), 10800 tokens per pass"));
}

TEST_CASE("the frames per block size the pass, not the cache", "[estimate][kv_cache]") {
  const json one = sample_of({{"block_frames", 1}});
  const json three = sample_of({{"block_frames", 3}});
  CHECK(item(one, "kv_cache") == item(three, "kv_cache"));
  CHECK(item(three, "activations") == 3 * item(one, "activations"));
  CHECK(notes_have(three, "7 blocks of 3 latent frame(s)"));
  // A block longer than the clip is the clip: one pass over all 21 frames.
  const json whole = sample_of({{"block_frames", 32}});
  CHECK(item(whole, "activations") == kActivationBytesPerToken * 32760);
  CHECK(notes_have(whole, "1 blocks of 21 latent frame(s)"));
  // A longer clip grows the cache with its frames: 161 frames are 41 latent frames.
  const json longer = sample_of({{"frames", 161}});
  CHECK(item(longer, "kv_cache") == 30ull * 2 * (41 * 1560) * 1536 * 2);
  CHECK(item(longer, "activations") == item(one, "activations"));
}

TEST_CASE("standard sampling of the same model runs the whole latent and keeps no cache", "[estimate][kv_cache]") {
  const json s = sample_of({{"sampling", "standard"}});
  CHECK(item(s, "kv_cache") == 0);
  CHECK(item(s, "cross_attention_cache") == 0);
  CHECK(item(s, "activations") == kActivationBytesPerToken * 32760);
  CHECK(notes_have(s, "32760 tokens per sequence"));
  // And a standard model can be asked to sample block by block.
  const json w = stage_json(api::estimate({{"model", "wan2.1-t2v-1.3b"}, {"sampling", "kv_cache_blocks"}, {"vram", 24}}),
                            "sample");
  CHECK(item(w, "kv_cache") == 6038323200ull);
}

TEST_CASE("bad sampling fields name the field", "[estimate][kv_cache]") {
  const json base = {{"model", "causal-forcing-1.3b"}, {"vram", 24}};
  auto with = [&](const char* key, const json& value) {
    json r = base;
    r[key] = value;
    return r;
  };
  CHECK(field_of(with("block_frames", 0)) == "block_frames");
  CHECK(field_of(with("block_frames", 65)) == "block_frames");
  CHECK(field_of(with("block_frames", "three")) == "block_frames");
  CHECK(field_of(with("sampling", "autoregressive")) == "sampling");
  CHECK(field_of(with("sampling", 3)) == "sampling");
  json standard = with("sampling", "standard");
  standard["block_frames"] = 3;
  CHECK(field_of(standard) == "block_frames");
  // An image model has no frames to sample block by block.
  CHECK(field_of({{"model", "flux1-dev"}, {"sampling", "kv_cache_blocks"}, {"vram", 24}}) == "sampling");
}
