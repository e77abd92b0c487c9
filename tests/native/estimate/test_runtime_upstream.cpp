// Rules of current ComfyUI and comfy-aimdo the runtime model follows, each checked on the same inputs
// as the upstream function it names (runtime review da82589, points 5, 6, 8, 9 and the Windows
// headroom). The expected figures are worked from the upstream code by hand in each case.
#include <functional>

#include "catch.hpp"
#include "support/stages.hpp"
#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/memory_model.hpp"
#include "core/estimate/runtime_policy.hpp"
#include "core/estimate/vae_retry.hpp"
#include "support/verdict_text.hpp"

using namespace headroom;
using support::stage_named;

namespace {

constexpr std::uint64_t MiB_ = 1024ull * 1024;

// The layer is 100 MiB cast to bf16 and 50 MiB stored in fp8.
StageDemand streaming_demand() { return support::sampling_demand(100 * MiB_, 50 * MiB_); }

Runtime card(Runtime::Loader loader, std::uint64_t vram, int streams) {
  Runtime rt;
  rt.loader = loader;
  rt.vram_bytes = vram;
  rt.offload_streams = streams;
  rt.pcie_bytes_per_s = 2e10;
  rt.flops_per_s = 1e14;
  return rt;
}

}  // namespace

// Comfy-Org/ComfyUI comfy/cli_args.py@03294572 (--async-offload NUM_STREAMS, const 2;
// --disable-async-offload) and comfy/ops.py@0271a469 cast_modules_with_vbar: each offload stream
// copies one stored weight into its VRAMBuffer; with no stream the copy runs on the compute stream,
// one layer at a time. The cast to bf16 is the stage's dequant_transient, not one per stream.
TEST_CASE("dynamic VRAM: one stored layer per offload stream, from the flags", "[runtime][upstream]") {
  const StageDemand d = streaming_demand();
  const double context = 450.0 * MiB_, activations = 1.2 * GiB;
  for (int streams : {0, 1, 2, 4}) {
    const PolicyContext c = policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, streams));
    CHECK(c.offload_streams == streams);
    const Stage s = fit_stage(d, c);
    REQUIRE(s.mode == StageMode::Streams);
    const double in_flight = 50.0 * MiB_ * std::max(1, streams);
    CHECK(static_cast<double>(s.required_bytes()) == Approx(context + activations + in_flight).epsilon(1e-9));
  }
  // Unset, the default is ComfyUI's own: 2 on NVIDIA and AMD.
  CHECK(policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, -1)).offload_streams == 2);
  // Through the JSON API: the field reaches the policy (the sampling stage; the VAE needs its weights whole).
  auto required = [](int streams) {
    const auto r = api::estimate({{"model", "flux1-dev"}, {"vram_bytes", 6 * GiB}, {"runtime", "dynamic"},
                                  {"offload_streams", streams}});
    for (const auto& s : r["stages"])
      if (s["name"] == "sample") return s["required_bytes"].get<std::uint64_t>();
    return std::uint64_t{0};
  };
  CHECK(required(4) > required(2));
  CHECK(required(2) > required(0));
}

// Comfy-Org/ComfyUI comfy/model_patcher.py@08d0e510 ModelPatcher.load: a module that does not fit
// reserves offload_buffer = its own offload cost + the next NUM_STREAMS modules; and
// comfy/model_management.py@02b2b388 load_models_gpu: lowvram_model_memory = max(0, ...), no 128 MiB.
TEST_CASE("legacy loader: offload buffer of the module and the next NUM_STREAMS, no floor", "[runtime][upstream]") {
  StageDemand d = streaming_demand();
  d.comfy_minimum_bytes = 2 * GiB;
  CHECK(runtime_constant("min_lowvram_weights_bytes") == 0);
  for (int streams : {0, 2}) {
    const PolicyContext c = policy_context(card(Runtime::Loader::Legacy, 8 * GiB, streams));
    const Stage s = fit_stage(d, c);
    REQUIRE(s.mode == StageMode::Partial);
    CHECK(s.breakdown.at("streamed_layer") == 50 * MiB_ * (1 + static_cast<std::uint64_t>(streams)));
    const double fixed = 450.0 * MiB_ + static_cast<double>(c.reserve_bytes);
    CHECK(static_cast<double>(s.min_bytes) ==
          Approx(fixed + 1.2 * GiB + 50.0 * MiB_ * (1 + streams)).epsilon(1e-9));
  }
}

// Comfy-Org/ComfyUI comfy/model_prefetch.py@03fb330a make_prefetch_queue / prefetch_queue_pop: the
// next block is faulted in whole while the current one runs (none when NUM_STREAMS is 0);
// comfy/text_encoders/llama.py Llama2_.forward queues its layers, so an LLM text encoder holds two
// whole decoder layers in flight (or a layer and the token embedding before it).
TEST_CASE("dynamic VRAM: models that prefetch hold two whole blocks", "[runtime][upstream]") {
  Job job = default_job("flux2-dev");
  ResolvedJob rj = resolve_job(job);
  const StageDemand te = text_encode_demand(rj);
  const ModelInfo& encoder = *rj.text_encoders.front().model;
  REQUIRE(encoder.encoder);
  const double block = encoder.encoder->block_prefetch_params;
  REQUIRE(block > 0);
  CHECK(te.prefetch_block_bytes == rj.text_encoders.front().precision->bytes_for(static_cast<std::uint64_t>(block)));
  // Mistral's token embedding (671 M params) is larger than one of its layers (556 M): the embedding
  // runs while layer 0 is prefetched.
  REQUIRE(te.stored_layer_bytes > te.prefetch_block_bytes);
  CHECK(in_flight_bytes(te, policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, 2))) ==
        te.prefetch_block_bytes + te.stored_layer_bytes);
  StageDemand blocks_only = te;
  blocks_only.stored_layer_bytes = te.prefetch_block_bytes / 2;
  CHECK(in_flight_bytes(blocks_only, policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, 2))) ==
        2 * te.prefetch_block_bytes);
  CHECK(in_flight_bytes(te, policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, 0))) == te.stored_layer_bytes);
  // A model whose loop streams layer by layer (Wan's, comfy/ldm/wan/model.py@0c9a69ae) has no block in data.
  Job wan = default_job("wan2.1-t2v-14b");
  ResolvedJob rw = resolve_job(wan);
  CHECK(sample_demand(rw, DemandOptions{}).prefetch_block_bytes == 0);
}

// Comfy-Org/ComfyUI comfy/ops.py@0271a469 resolve_cast_module_with_vbar / update_weight: under
// dynamic VRAM LoRA patches live in pinned host buffers and are baked into each weight as it is cast.
TEST_CASE("dynamic VRAM: a LoRA takes host memory, not VRAM", "[runtime][upstream]") {
  Job job = default_job("flux1-dev");
  job.lora_bytes = 1 * GiB;
  const Estimate dyn = estimate(job, card(Runtime::Loader::Dynamic, 80 * GiB, -1));
  const Estimate leg = estimate(job, card(Runtime::Loader::Legacy, 80 * GiB, -1));
  CHECK(stage_named(dyn, "sample").breakdown.count("weights:lora") == 0);
  CHECK(stage_named(leg, "sample").breakdown.at("weights:lora") == 1 * GiB);
  CHECK(dyn.host_ram_held_bytes >= 1 * GiB);  // held in RAM instead
}

// comfy-aimdo src-win/shmem-detect.c (Comfy-Org/comfy-aimdo@ce3c59e): on Windows the budget poll
// keeps 512 MiB free (Comfy-Org/ComfyUI PR #15886, aimdo 0.4.15); Linux keeps 256 MiB.
TEST_CASE("dynamic VRAM on Windows keeps the WDDM headroom", "[runtime][upstream]") {
  Runtime rt = card(Runtime::Loader::Dynamic, 16 * GiB, -1);
  rt.vram_headroom_bytes = 100 * MiB_;
  CHECK(policy_context(rt).keep_free_bytes == 256 * MiB_ + 100 * MiB_);
  rt.windows = true;
  CHECK(policy_context(rt).keep_free_bytes == 512 * MiB_ + 100 * MiB_);
  rt.reserve_bytes = 1 * GiB;  // --reserve-vram above the headroom replaces it, as on Linux
  CHECK(policy_context(rt).keep_free_bytes == 1 * GiB + 100 * MiB_);
  const auto answer = api::estimate({{"model", "flux1-dev"}, {"vram_bytes", 16 * GiB}, {"windows", true}});
  const auto linux_answer = api::estimate({{"model", "flux1-dev"}, {"vram_bytes", 16 * GiB}});
  CHECK(answer["full_load_peak_bytes"].get<std::uint64_t>() ==
        linux_answer["full_load_peak_bytes"].get<std::uint64_t>() + 256 * MiB_);
}

// Comfy-Org/ComfyUI comfy/sd.py@033046cc VAE.decode, the 3-D retry: budget = min(memory_used,
// 0.8 x total); tile_t = T halved (ceil) while > 2 and est(tile_t, tile) > budget; then the spatial
// tile doubled while 2 x tile <= max(H, W) and est(tile_t, 2 x tile) <= budget.
TEST_CASE("the 3-D tiled retry grows its tile to ComfyUI's budget", "[runtime][upstream][vae]") {
  // est as memory_used_decode of a tile: 1000 bytes per latent px per frame, H 60, W 104, T 21.
  const std::function<std::uint64_t(std::uint64_t, std::uint64_t)> est = [](std::uint64_t t, std::uint64_t tile) {
    return 1000 * t * std::min<std::uint64_t>(60, tile) * std::min<std::uint64_t>(104, tile);
  };
  const std::uint64_t untiled = est(21, 104);  // 131,040,000
  // No card: the untiled estimate is the budget; one 32 px tile of all 21 frames fits (21.5 MB), 64 fits
  // (80.6 MB), 128 exceeds max(H, W).
  RetryTile3d r = retry_tile_3d(21, 60, 104, 32, untiled, 0, est);
  CHECK(r.budget == untiled);
  CHECK(r.tile_t == 21);
  CHECK(r.tile == 64);
  // A card whose 0.8 share is 10 MB: 21 -> 11 -> 6 frames (6 x 32 x 32 x 1000 = 6.1 MB fits), then
  // 64 px needs 6 x 60 x 64 x 1000 = 23 MB: stays 32.
  r = retry_tile_3d(21, 60, 104, 32, untiled, 12500000, est);
  CHECK(r.budget == 10000000);
  CHECK(r.tile_t == 6);
  CHECK(r.tile == 32);
}

TEST_CASE("the video VAE's retry stage uses the grown tile", "[runtime][upstream][vae]") {
  // Wan 2.1 at 832 x 480: latent 104 x 60. ComfyUI's estimate does not depend on the frames, so the
  // tile starts at 256 / 8 = 32 latent px and doubles to 64 (128 > 104) on a card whose 0.8 share
  // holds the untiled estimate: 512 px tiles where the old rule kept 256 px.
  Job job = default_job("wan2.1-t2v-14b");
  job.width = 832;
  job.height = 480;
  job.frames = 81;
  ResolvedJob rj = resolve_job(job);
  DemandOptions o;
  o.card_total_bytes = 80 * GiB;
  const StageDemand d = vae_decode_demand(rj, o);
  REQUIRE(d.fallback.size() == 1);
  bool grown = false;
  for (const auto& n : d.fallback.front().notes) grown = grown || n.find("512 px tiles") != std::string::npos;
  CHECK(grown);
  // With a card too small for the untiled estimate the budget is 0.8 of it and the tile stays smaller.
  o.card_total_bytes = comfy_decode_estimate(rj, 32, 32) * 5 / 4;  // 0.8 x card = exactly one 32 px tile
  const StageDemand small = vae_decode_demand(rj, o);
  bool start = false;
  for (const auto& n : small.fallback.front().notes) start = start || n.find("256 px tiles") != std::string::npos;
  CHECK(start);
}

// One default set (issue 23 point 6): a request without runtime fields is answered for the runtime the
// CLI assumes, dynamic VRAM on Linux with ComfyUI's own streams.
TEST_CASE("the JSON API and the CLI share the core's runtime defaults", "[runtime][defaults]") {
  const Runtime d = api::runtime_defaults();
  CHECK(d.loader == Runtime::Loader::Dynamic);
  CHECK_FALSE(d.windows);
  CHECK(d.offload_streams == -1);
  CHECK(d.ram_bytes == 0);
  const auto answer = api::estimate({{"model", "flux1-dev"}, {"vram_bytes", 24 * GiB}});
  CHECK(answer["runtime"] == "dynamic");
}

// Comfy-Org/ComfyUI comfy/model_management.py@02b2b388 (the pinned-memory cap): Linux
// max(0.4 RAM, min(0.9 RAM, RAM - 4 GiB, RAM + swap - 16 GiB)), Windows 40 %; streamed weights beyond
// it are copied from pageable memory, at pageable_copy_fraction of the link's rate.
TEST_CASE("the pinned-memory cap per OS prices what streams beyond it", "[runtime][upstream]") {
  CHECK(pinned_limit_bytes(32 * GiB, 0, false, true) == 16 * GiB);       // RAM - 16 GiB: 50 %
  CHECK(pinned_limit_bytes(64 * GiB, 0, false, true) == 48 * GiB);       // 75 %
  // With 32 GiB of swap the 0.9 share binds (57.6 < 60 = RAM - 4 GiB < 80 = RAM + swap - 16 GiB).
  CHECK(pinned_limit_bytes(64 * GiB, 32 * GiB, false, true) == static_cast<std::uint64_t>(0.9 * 64 * GiB));
  CHECK(pinned_limit_bytes(16 * GiB, 0, false, true) == static_cast<std::uint64_t>(0.4 * 16 * GiB));
  CHECK(pinned_limit_bytes(32 * GiB, 0, true, true) == static_cast<std::uint64_t>(0.4 * 32 * GiB));
  CHECK(pinned_limit_bytes(32 * GiB, 0, false, false) == 0);  // --disable-pinned-memory
  Runtime rt = card(Runtime::Loader::Dynamic, 8 * GiB, -1);
  rt.ram_bytes = 32 * GiB;
  const PolicyContext c = policy_context(rt);
  CHECK(c.pinned_limit_bytes == 16 * GiB);
  const double pageable = 2e10 * runtime_constant("pageable_copy_fraction");
  CHECK(transfer_seconds(20 * GiB, c) == Approx(16.0 * GiB / 2e10 + 4.0 * GiB / pageable).epsilon(1e-9));
  CHECK(transfer_seconds(20 * GiB, policy_context(card(Runtime::Loader::Dynamic, 8 * GiB, -1))) ==
        Approx(20.0 * GiB / 2e10).epsilon(1e-9));  // RAM not given: no cap known, all pinned
}
