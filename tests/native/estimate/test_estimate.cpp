// The memory model and runtime policy through api::estimate / estimate(): shapes, CFG batching,
// companions, the VAE decode, the card policy and bad input.
#include <chrono>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/estimate/estimator.hpp"
#include "core/base/units.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

// The policy cases here are the legacy loader's (partial loading, ComfyUI's reserve); the API's default
// is dynamic VRAM, whose cases are in test_runtime_dynamic.cpp and test_runtime_upstream.cpp.
json run(json request) {
  if (!request.contains("runtime")) request["runtime"] = "legacy";
  return api::estimate(request);
}

const json& stage(const json& r, const std::string& name) {
  for (const auto& s : r["stages"])
    if (s["name"] == name) return s;
  FAIL("no stage " << name << " in " << r.dump());
  static json none;
  return none;
}

std::uint64_t part(const json& r, const std::string& stage_name, const std::string& key) {
  const json& bd = stage(r, stage_name)["breakdown"];
  return bd.contains(key) ? bd[key].get<std::uint64_t>() : 0;
}

std::string field_of(const json& request) {
  return support::input_error_field([&] { api::estimate(request); });
}

std::vector<std::string> stage_names(const json& r) {
  std::vector<std::string> out;
  for (const auto& s : r["stages"]) out.push_back(s["name"]);
  return out;
}

}  // namespace

TEST_CASE("a diffusion model brings its companions and stages in ComfyUI's order", "[estimate]") {
  json flux = run({{"model", "flux1-dev"}});
  CHECK(stage_names(flux) == std::vector<std::string>{"text_encode", "sample", "vae_decode"});
  CHECK(flux["job"]["text_encoders"].size() == 2);
  CHECK(flux["job"]["vae"]["model"] == "flux-vae");
  CHECK(flux["peak_stage"] == "sample");
  CHECK_FALSE(flux.contains("verdict"));  // no card, no verdict

  json i2v = run({{"model", "wan2.1-i2v-14b"}});
  CHECK(stage_names(i2v) ==
        std::vector<std::string>{"text_encode", "clip_vision_encode", "vae_encode", "sample", "vae_decode"});
  CHECK(i2v["job"]["clip_vision"]["model"] == "clip-vision-h");
  // Wan 2.2 I2V A14B has no CLIP-vision branch (facts §1.2).
  json i2v22 = run({{"model", "wan2.2-i2v-a14b"}});
  CHECK(i2v22["job"]["clip_vision"].is_null());
}

TEST_CASE("a model file name also gives the precision", "[estimate]") {
  json r = run({{"model", "flux1-dev-fp8.safetensors"}});
  CHECK(r["job"]["diffusion"]["model"] == "flux1-dev");
  CHECK(r["job"]["diffusion"]["precision"] == "fp8_e4m3fn");
  json explicit_precision = run({{"model", "flux1-dev-fp8.safetensors"}, {"precision", "bf16"}});
  CHECK(explicit_precision["job"]["diffusion"]["precision"] == "bf16");
  json te = run({{"model", "umt5_xxl_fp8_e4m3fn_scaled.safetensors"}});
  CHECK(te["job"]["text_encoders"][0]["precision"] == "fp8_scaled");
}

TEST_CASE("a VAE or text encoder alone gives only its own stage", "[estimate]") {
  CHECK(stage_names(run({{"model", "flux-vae"}})) == std::vector<std::string>{"vae_decode"});
  CHECK(stage_names(run({{"model", "t5xxl"}})) == std::vector<std::string>{"text_encode"});
  CHECK(stage_names(run({{"model", "clip-vision-h"}})) == std::vector<std::string>{"clip_vision_encode"});
}

TEST_CASE("2048^2 has four times the image tokens of 1024^2 and activations follow", "[estimate]") {
  json a = run({{"model", "flux1-dev"}, {"width", 1024}, {"height", 1024}});
  json b = run({{"model", "flux1-dev"}, {"width", 2048}, {"height", 2048}});
  // Independent: Flux tokens = (H/16)(W/16) image + 256 padded T5 tokens (facts §1.1).
  const double seq_a = 64 * 64 + 256, seq_b = 128 * 128 + 256;
  const double ratio = static_cast<double>(part(b, "sample", "activations")) / part(a, "sample", "activations");
  CHECK(ratio == Approx(seq_b / seq_a).epsilon(0.001));
  // The KL VAE decode is linear in pixels (facts §2.2): exactly 4x.
  CHECK(static_cast<double>(part(b, "vae_decode", "activations")) / part(a, "vae_decode", "activations") ==
        Approx(4.0).epsilon(0.001));
}

TEST_CASE("CFG doubles the batch only when it is batched", "[estimate]") {
  json distilled = run({{"model", "flux1-dev"}});
  json cfg = run({{"model", "flux1-dev"}, {"cfg", 3.5}});
  CHECK(static_cast<double>(part(cfg, "sample", "activations")) / part(distilled, "sample", "activations") ==
        Approx(2.0).epsilon(0.001));
  // On a card where ComfyUI's own estimate x1.5 exceeds the free memory, cond and uncond run one
  // after the other: Wan 14B fp8 at 832x480x81 on a 24 GB card (ComfyUI estimate 11.8 GiB for two,
  // facts comfyui-internals §3.5, x1.5 > 24 GiB - 13.3 GiB of weights).
  json wan = run({{"model", "wan2.2-t2v-a14b"}, {"precision", "fp8_scaled"}, {"cfg", 3.5}, {"gpu", "4090"}});
  json wan_free = run({{"model", "wan2.2-t2v-a14b"}, {"precision", "fp8_scaled"}, {"cfg", 3.5}});
  CHECK(static_cast<double>(part(wan_free, "sample", "activations")) / part(wan, "sample", "activations") ==
        Approx(2.0).epsilon(0.001));
}

// Comfy-Org/ComfyUI comfy/samplers.py@311c0140 _calc_cond_batch batches cond and uncond when
// memory_required x 1.5 < model.current_patcher.get_free_memory(device), and
// comfy/model_patcher.py@08d0e510 ModelPatcher.get_free_memory adds comfy_aimdo.model_vbar.vbars_analyze
// (every evictable VBAR page) when aimdo runs. Under dynamic VRAM the resident weights are therefore free
// to this test, and the same Wan job that runs cond and uncond apart on the legacy loader batches them.
TEST_CASE("CFG batching under dynamic VRAM counts evictable weights as free", "[estimate][dynamic]") {
  const json job = {{"model", "wan2.2-t2v-a14b"}, {"precision", "fp8_scaled"}, {"cfg", 3.5}};
  auto with = [&](json extra) {
    json r = job;
    for (auto& kv : extra.items()) r[kv.key()] = kv.value();
    return run(r);
  };
  json unbounded = with({{"runtime", "dynamic"}});
  json legacy = with({{"gpu", "4090"}, {"runtime", "legacy"}});
  json dynamic = with({{"gpu", "4090"}, {"runtime", "dynamic"}});
  const double batched = static_cast<double>(part(unbounded, "sample", "activations"));
  // ComfyUI's estimate for the two (11.8 GiB) x 1.5 = 17.7 GiB: above 24 GiB minus the 13.3 GiB of
  // resident weights, below 24 GiB minus the CUDA context.
  CHECK(batched / part(legacy, "sample", "activations") == Approx(2.0).epsilon(0.001));
  CHECK(static_cast<double>(part(dynamic, "sample", "activations")) == Approx(batched).epsilon(0.001));
  // A 16 GiB card has less than 17.7 GiB even with every weight evicted: apart, as on the legacy loader.
  json small = with({{"vram_bytes", 16ull * 1024 * 1024 * 1024}, {"runtime", "dynamic"}});
  CHECK(batched / part(small, "sample", "activations") == Approx(2.0).epsilon(0.001));
}

TEST_CASE("Kontext reference images add their tokens", "[estimate]") {
  json none = run({{"model", "flux1-kontext-dev"}, {"reference_images", 0}});
  json one = run({{"model", "flux1-kontext-dev"}});  // the template default: one reference
  const double expected = (2.0 * 64 * 64 + 256) / (64 * 64 + 256);
  CHECK(static_cast<double>(part(one, "sample", "activations")) / part(none, "sample", "activations") ==
        Approx(expected).epsilon(0.001));
  CHECK(stage_names(one)[1] == "vae_encode");
}

TEST_CASE("Wan VAE decode activations do not grow with frames, the output clip does", "[estimate]") {
  json f81 = run({{"model", "wan2.1-vae"}, {"width", 832}, {"height", 480}, {"frames", 81}});
  json f121 = run({{"model", "wan2.1-vae"}, {"width", 832}, {"height", 480}, {"frames", 121}});
  CHECK(part(f81, "vae_decode", "activations") == part(f121, "vae_decode", "activations"));
  // Output: 2 copies (torch.cat) x 3 channels x frames x pixels x 2 bytes (bf16).
  CHECK(part(f81, "vae_decode", "output_buffers") == 2ull * 3 * 81 * 832 * 480 * 2);
  CHECK(part(f121, "vae_decode", "output_buffers") == 2ull * 3 * 121 * 832 * 480 * 2);
}

TEST_CASE("weights follow the precision and Wan 2.2 A14B holds one expert", "[estimate]") {
  json bf16 = run({{"model", "flux1-dev"}, {"precision", "bf16"}});
  json q8 = run({{"model", "flux1-dev"}, {"precision", "gguf-q8_0"}});
  CHECK(part(bf16, "sample", "weights:flux1-dev") == 2ull * 11901408320ull);
  CHECK(part(q8, "sample", "weights:flux1-dev") == (11901408320ull + 31) / 32 * 34);
  CHECK(part(q8, "sample", "dequant_transient") == 2ull * 3072 * 21504);  // one single-block linear1 in bf16
  CHECK(part(bf16, "sample", "dequant_transient") == 0);
  json a14b = run({{"model", "wan2.2-t2v-a14b"}, {"precision", "fp16"}});
  CHECK(part(a14b, "sample", "weights:wan2.2-t2v-a14b (one expert)") == 2ull * 14288491584ull);
  json te8 = run({{"model", "flux1-dev"}, {"text_encoder_precision", "fp8_e4m3fn"}});
  CHECK(part(te8, "text_encode", "weights:t5-xxl") == 4762310656ull);
  CHECK(part(te8, "text_encode", "weights:clip-l") == 2ull * 123060480ull);  // CLIP-L keeps fp16
}

TEST_CASE("tiled decode scales with the tile, not the image", "[estimate]") {
  json full = run({{"model", "flux-vae"}, {"width", 2048}, {"height", 2048}});
  json tiled = run({{"model", "flux-vae"}, {"width", 2048}, {"height", 2048}, {"decode_mode", "tiled"}, {"decode_tile_px", 512}});
  const double expected = (512.0 * 512) / (2048.0 * 2048);
  CHECK(static_cast<double>(part(tiled, "vae_decode", "activations")) / part(full, "vae_decode", "activations") ==
        Approx(expected).epsilon(0.01));
  CHECK(stage(tiled, "vae_decode")["slowdown"].get<double>() > 1.0);
  // Headroom mode answers with the native decoder's plan or, while that is unavailable, a tiled estimate.
  json hr = run({{"model", "flux-vae"}, {"width", 2048}, {"height", 2048}, {"decode_mode", "headroom"}, {"vram", 8}});
  CHECK(hr["peak_bytes"].get<std::uint64_t>() > 0);
}

TEST_CASE("the card policy: fits, partial loading, tiled retry, does not fit", "[estimate][policy]") {
  json fits = run({{"model", "flux1-schnell"}, {"precision", "fp8_e4m3fn"}, {"gpu", "5090"}});
  CHECK(fits["verdict"] == "fits");
  CHECK(stage(fits, "sample")["mode"] == "full");

  // Flux dev bf16 (22.2 GiB weights) on 12 GB: ComfyUI loads part of the weights and streams the rest.
  json partial = run({{"model", "flux1-dev"}, {"gpu", "3060 12GB"}});
  const json& s = stage(partial, "sample");
  CHECK(s["mode"] == "partial");
  CHECK(s["peak_bytes"].get<std::uint64_t>() <= partial["vram_bytes"].get<std::uint64_t>());
  CHECK(s["slowdown"].get<double>() > 1.0);
  CHECK(s["full_load_bytes"].get<std::uint64_t>() > partial["vram_bytes"].get<std::uint64_t>());
  CHECK(partial["verdict"] == "tight");

  // The full decode of 2048^2 (about 13 GiB) does not fit 12 GB: ComfyUI's tiled retry does.
  json retry = run({{"model", "flux-vae"}, {"width", 2048}, {"height", 2048}, {"vram", 8}});
  CHECK(stage(retry, "vae_decode")["mode"] == "tiled_fallback");

  // Flux at 4096^2 on 8 GB: 65,792 tokens of activations alone exceed the card.
  json too_big = run({{"model", "flux1-dev"}, {"width", 4096}, {"height", 4096}, {"gpu", "4060"}});
  CHECK(too_big["verdict"] == "does not fit");

  // Explicit block swap streams blocks and costs time even when nothing limits the card.
  json swap = run({{"model", "wan2.1-t2v-14b"}, {"blocks_swapped", 20}});
  json plain = run({{"model", "wan2.1-t2v-14b"}});
  CHECK(part(plain, "sample", "weights:wan2.1-t2v-14b") - part(swap, "sample", "weights:wan2.1-t2v-14b") ==
        20ull * 2 * 351400000ull);
  CHECK(stage(swap, "sample")["slowdown"].get<double>() > 1.0);
}

TEST_CASE("without a card the unconstrained need is reported; with one, reserves count", "[estimate][policy]") {
  json r = run({{"model", "flux1-dev"}});
  const json& bd = stage(r, "sample")["breakdown"];
  std::uint64_t sum = 0;
  for (const auto& kv : bd.items()) sum += kv.value().get<std::uint64_t>();
  CHECK(sum == stage(r, "sample")["peak_bytes"].get<std::uint64_t>());
  CHECK(bd["comfyui_reserve"] == 400ull * MiB);  // comfy/model_management.py EXTRA_RESERVED_VRAM (Linux)
  json win = run({{"model", "flux1-dev"}, {"windows", true}});
  CHECK(stage(win, "sample")["breakdown"]["comfyui_reserve"] == 600ull * MiB);
  CHECK(bd["allocator_overhead"].get<std::uint64_t>() > 0);
}

TEST_CASE("bad input names the field", "[estimate][errors]") {
  CHECK(field_of({{"model", "flux1-dev"}, {"width", 0}}) == "width");
  CHECK(field_of({{"model", "flux1-dev"}, {"height", -5}}) == "height");
  CHECK(field_of({{"model", "flux1-dev"}, {"width", "wide"}}) == "width");
  CHECK(field_of({{"model", "flux-vae"}, {"precision", "gguf-q8_0"}}) == "precision");
  CHECK(field_of({{"model", "flux1-dev"}, {"vae_precision", "fp8"}}) == "vae_precision");
  CHECK(field_of({{"model", "flux1-dev"}, {"frames", 81}}) == "frames");
  CHECK(field_of({{"model", "nope-model"}}) == "model");
  CHECK(field_of(json::object()) == "model");
  CHECK(field_of({{"model", "flux1-dev"}, {"decode_mode", "fast"}}) == "decode_mode");
  CHECK(field_of({{"model", "flux1-dev"}, {"gpu", "4090"}, {"vram_bytes", 1000000000}}) == "gpu");
  CHECK(field_of({{"model", "flux1-dev"}, {"cfg", -1}}) == "cfg");
  CHECK(field_of({{"model", "flux1-dev"}, {"widht", 512}}) == "widht");
  CHECK(field_of({{"model", "flux-vae"}, {"text_encoder_precision", "fp8"}}) == "text_encoder_precision");
  CHECK(field_of({{"model", "wan2.1-t2v-14b"}, {"blocks_swapped", 41}}) == "blocks_swapped");
  CHECK(field_of({{"model", "flux1-dev"}, {"decode_tile_px", 10}}) == "decode_tile_px");
  CHECK(field_of({{"model", "flux1-dev"}, {"gpu", "gtx"}}) == "gpu");
  CHECK_THROWS_AS(api::estimate(json::array()), InputError);

  Job job;  // estimate() itself validates a Job built by other code
  job.diffusion = Component{"flux-vae", "", std::nullopt, ""};
  CHECK_THROWS_AS(estimate(job, Runtime{}), InputError);
}

TEST_CASE("estimate takes well under a millisecond", "[estimate][speed]") {
  Job job = default_job("wan2.2-t2v-a14b");
  Runtime rt;
  rt.vram_bytes = 24ull * GiB;
  estimate(job, rt);  // parse the catalog once
  const int n = 2000;
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t sink = 0;
  for (int i = 0; i < n; ++i) sink += estimate(job, rt).peak_bytes;
  double per_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  CHECK(sink > 0);
  CHECK(per_call_ms < 1.0);
}

TEST_CASE("ComfyUI loads partially when its own estimate leaves too little room", "[estimate][policy]") {
  // Independent arithmetic from comfy/model_management.py (facts comfyui-internals §3.4/§3.5): on a
  // 4090 (25,757,220,864 bytes) ComfyUI keeps max(0.8 GiB, est(batch 1) = 0.99 GiB) + 400 MiB free
  // for Flux at 1024^2, which leaves less than the 23.8 GB of bf16 weights after the CUDA context.
  const double card = 25757220864.0, context = 450.0 * MiB;
  const double keep_free = 32768.0 * 2 * 0.01 * 3.1 * MiB + 400.0 * MiB;
  const double weights = 2.0 * 11901408320.0;
  REQUIRE(weights > card - context - keep_free);
  json r = run({{"model", "flux1-dev"}, {"gpu", "4090"}});
  CHECK(stage(r, "sample")["mode"] == "partial");
  CHECK(r["verdict"] == "tight");
  // In fp8 everything stays loaded, and the text encoders stay cached next to it.
  json fp8 = run({{"model", "flux1-dev"}, {"precision", "fp8_e4m3fn"}, {"gpu", "4090"}});
  CHECK(stage(fp8, "sample")["mode"] == "full");
  CHECK(fp8["verdict"] == "fits");
  CHECK_FALSE(stage(fp8, "sample")["cached"].empty());
}

TEST_CASE("Wan 2.2 A14B: the other expert stays cached only where both fit", "[estimate][policy]") {
  json h200 = run({{"model", "wan2.2-t2v-a14b"}, {"precision", "fp8_scaled"}, {"gpu", "h200"}});
  bool other = false;
  for (const auto& c : stage(h200, "sample")["cached"]) other = other || c == "wan2.2-t2v-a14b (other expert)";
  CHECK(other);
  json small = run({{"model", "wan2.2-t2v-a14b"}, {"precision", "fp8_scaled"}, {"gpu", "4090"}});
  for (const auto& c : stage(small, "sample")["cached"]) CHECK(c != "wan2.2-t2v-a14b (other expert)");
  CHECK(stage(small, "sample")["resident"][0] == "wan2.2-t2v-a14b (one expert)");
}

TEST_CASE("fp8 weights are upcast where ComfyUI would, on cards without fp8 compute", "[estimate][policy]") {
  // comfy/model_management.py unet_dtype: fp8 stays fp8 on compute capability >= 8.9, or when
  // 16-bit weights exceed total*0.88 - (0.8 GiB + reserve). A100 80GB: 23.8 GB of bf16 fits -> bf16.
  json a100 = run({{"model", "flux1-dev"}, {"precision", "fp8_e4m3fn"}, {"gpu", "a100"}});
  CHECK(part(a100, "sample", "weights:flux1-dev") == 2ull * 11901408320ull);
  // RTX 3090 24GB (Ampere): 25,769,803,776 * 0.88 - 1.19 GiB < 23.8 GB, so fp8 stays.
  REQUIRE(25769803776.0 * 0.88 - (0.8 * GiB + 400.0 * MiB) < 2.0 * 11901408320.0);
  json rtx3090 = run({{"model", "flux1-dev"}, {"precision", "fp8_e4m3fn"}, {"gpu", "3090"}});
  CHECK(part(rtx3090, "sample", "weights:flux1-dev") == 11901408320ull);
  // H100 computes in fp8: stays fp8.
  json h100 = run({{"model", "flux1-dev"}, {"precision", "fp8_e4m3fn"}, {"gpu", "h100"}});
  CHECK(part(h100, "sample", "weights:flux1-dev") == 11901408320ull);
}
