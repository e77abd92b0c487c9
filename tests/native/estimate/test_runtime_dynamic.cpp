// The two loaders of ComfyUI on one stage and on whole runs. The stage figures are computed by hand
// from the rules in runtime_dynamic.cpp and their sources: aimdo keeps max(256 MiB, --reserve-vram)
// + --vram-headroom free (comfy-aimdo control.c), two offload streams hold one stored layer each
// (ComfyUI --async-offload, in_flight_bytes), and what does not stay resident is copied in every
// forward pass.
#include "catch.hpp"
#include "support/stages.hpp"
#include "core/api/api.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/runtime_dynamic.hpp"
#include "core/estimate/runtime_policy.hpp"
#include "support/verdict_text.hpp"

using namespace headroom;

namespace {

constexpr std::uint64_t MiB_ = 1024ull * 1024;

StageDemand sampling_demand() { return support::sampling_demand(100 * MiB_); }
using support::stage_named;

Runtime dynamic_card(std::uint64_t vram) {
  Runtime rt;
  rt.loader = Runtime::Loader::Dynamic;
  rt.vram_bytes = vram;
  rt.vram_headroom_bytes = 512 * MiB_;
  rt.pcie_bytes_per_s = 2e10;
  rt.flops_per_s = 1e14;  // one forward pass of 1e14 FLOPs takes 1 s
  return rt;
}

Job flux_job(const std::string& precision, int size) {
  Job job = default_job("flux1-dev");
  job.diffusion->precision = precision;
  job.width = job.height = size;
  return job;
}

}  // namespace

TEST_CASE("dynamic VRAM: what aimdo keeps free", "[runtime][dynamic]") {
  Runtime rt = dynamic_card(8 * GiB);
  CHECK(policy_context(rt).keep_free_bytes == 256 * MiB_ + 512 * MiB_);
  rt.reserve_bytes = 1 * GiB;  // --reserve-vram 1 is larger than aimdo's own 256 MiB
  CHECK(policy_context(rt).keep_free_bytes == 1 * GiB + 512 * MiB_);
  CHECK(policy_context(rt).reserve_bytes == 0);  // the legacy reserve is not added on top
  CHECK(policy_context(rt).offload_streams == 2);
}

TEST_CASE("dynamic VRAM: a stage whose weights do not fit streams them", "[runtime][dynamic]") {
  const PolicyContext c = policy_context(dynamic_card(8 * GiB));
  const std::uint64_t context = c.context_bytes;                  // 450 MiB from models.json
  const double activations = 1.2 * GiB;                           // 1 GiB + 20% allocator overhead
  const double in_flight = 2 * 100 * MiB_;                        // one stored layer per offload stream
  const double keep = 768.0 * MiB_;
  const Stage s = fit_stage(sampling_demand(), c);
  REQUIRE(s.mode == StageMode::Streams);
  CHECK(s.loader == Runtime::Loader::Dynamic);
  // What aimdo keeps free is not part of the least the run needs (see the kept-free test below).
  const double required = context + activations + in_flight;
  CHECK(static_cast<double>(s.required_bytes()) == Approx(required).epsilon(1e-6));
  const double resident = 8.0 * GiB - required - keep;
  CHECK(static_cast<double>(s.resident_bytes.at("dit")) == Approx(resident).epsilon(1e-6));
  CHECK(static_cast<double>(s.streamed_bytes.at("dit")) == Approx(10.0 * GiB - resident).epsilon(1e-6));
  CHECK(s.peak_bytes == 8 * GiB);  // the card fills to its edge
  const double slowdown = 1.0 + (10.0 * GiB - resident) / 2e10 / 1.0;
  CHECK(s.slowdown == Approx(slowdown).epsilon(1e-6));
  CHECK(s.seconds_per_step == Approx(slowdown).epsilon(1e-6));  // one pass of 1 s, slowed
  CHECK(static_cast<double>(s.full_load_bytes) == Approx(context + keep + activations + 10.0 * GiB).epsilon(1e-6));
}

TEST_CASE("dynamic VRAM: everything resident when it fits, out of memory only for activations",
          "[runtime][dynamic]") {
  const Stage roomy = fit_stage(sampling_demand(), policy_context(dynamic_card(24 * GiB)));
  CHECK(roomy.mode == StageMode::Full);
  CHECK(roomy.streamed_bytes.empty());
  CHECK(roomy.resident_bytes.at("dit") == 10 * GiB);
  CHECK(roomy.slowdown == 1.0);

  const Stage tiny = fit_stage(sampling_demand(), policy_context(dynamic_card(3 * GiB / 2)));
  CHECK(tiny.mode == StageMode::DoesNotFit);
  CHECK(tiny.required_bytes() > 3 * GiB / 2);
}

// comfy-aimdo 0.6.0 (PyPI wheel, g68088de9d; C sources Comfy-Org/comfy-aimdo@ce3c59e): the headroom
// (set_simple_vram_headroom, deficit = max(simple, delta) + extra_vram_headroom) is enforced only by
// vbar_fault refusing a weight page (model-vbar.c); torch and cast-buffer allocations call
// vbars_free(budget_deficit(size)) and are then made anyway (pyt-cu-plug-alloc-async.c, vrambuf.c).
// So the kept-free room moves the fits/streams boundary and the resident share, never the OOM line.
TEST_CASE("dynamic VRAM: what aimdo keeps free decides residency, not out of memory", "[runtime][dynamic]") {
  const double context = 450.0 * MiB_, activations = 1.2 * GiB, in_flight = 2 * 100 * MiB_;
  const double required = context + activations + in_flight;  // 1.84 GiB
  for (std::uint64_t reserve : {std::uint64_t{0}, 2 * GiB}) {
    Runtime rt = dynamic_card(8 * GiB);
    rt.reserve_bytes = reserve;  // --reserve-vram 2: aimdo keeps 2 GiB + --vram-headroom free
    const PolicyContext c = policy_context(rt);
    const Stage s = fit_stage(sampling_demand(), c);
    REQUIRE(s.mode == StageMode::Streams);
    CHECK(static_cast<double>(s.required_bytes()) == Approx(required).epsilon(1e-6));  // the same for both
    CHECK(static_cast<double>(s.resident_bytes.at("dit")) ==
          Approx(8.0 * GiB - required - c.keep_free_bytes).epsilon(1e-6));
  }
  // 2 GiB: the working set fits but not the kept-free room beside it. Every weight streams and the run
  // goes on; the card fills to its edge.
  const Stage edge = fit_stage(sampling_demand(), policy_context(dynamic_card(2 * GiB)));
  CHECK(edge.mode == StageMode::Streams);
  CHECK(edge.resident_bytes.at("dit") == 0);
  CHECK(edge.streamed_bytes.at("dit") == 10 * GiB);
  CHECK(edge.peak_bytes == 2 * GiB);
  // The fits/streams boundary still counts it: everything resident only with the kept-free room left.
  const PolicyContext wide = policy_context(dynamic_card(24 * GiB));
  const Stage full = fit_stage(sampling_demand(), wide);
  const std::uint64_t just_short = full.peak_bytes - 1;
  CHECK(fit_stage(sampling_demand(), policy_context(dynamic_card(just_short))).mode == StageMode::Streams);

  // A stage with no layer size to stream by (a VAE) needs all its weights at once; short only of the
  // kept-free room it runs, the room giving way, and is out of memory only past that.
  StageDemand vae = sampling_demand();
  vae.stream_layer_bytes = 0;
  const Stage whole = fit_stage(vae, wide);
  const std::uint64_t kf = whole.breakdown.at("dynamic_vram_headroom");
  const Stage squeezed = fit_stage(vae, policy_context(dynamic_card(whole.peak_bytes - kf / 2)));
  CHECK(squeezed.mode == StageMode::Full);
  CHECK(squeezed.peak_bytes == whole.peak_bytes - kf / 2);
  CHECK(squeezed.breakdown.at("dynamic_vram_headroom") == kf - kf / 2);
  CHECK(squeezed.required_bytes() == whole.peak_bytes - kf);
  CHECK(fit_stage(vae, policy_context(dynamic_card(whole.peak_bytes - kf - 1))).mode == StageMode::DoesNotFit);
}

TEST_CASE("the legacy loader on the same stage keeps its partial loading", "[runtime][legacy]") {
  Runtime rt = dynamic_card(8 * GiB);
  rt.loader = Runtime::Loader::Legacy;
  StageDemand d = sampling_demand();
  d.comfy_minimum_bytes = 2 * GiB;  // ComfyUI's own estimate covers the 1.2 GiB of real activations
  const Stage s = fit_stage(d, policy_context(rt));
  CHECK(s.loader == Runtime::Loader::Legacy);
  CHECK(s.mode == StageMode::Partial);
  CHECK(s.resident_bytes.at("dit") + s.streamed_bytes.at("dit") == 10 * GiB);
}

TEST_CASE("the legacy loader runs out when ComfyUI's own estimate is below the real activations",
          "[runtime][legacy]") {
  // ComfyUI keeps max(0.8 GiB, its estimate) + reserve free and fills the rest with weights; with an
  // estimate of 0 that is 8 - 0.44 (context) - 0.8 - 0.39 (reserve) GiB of weights, which leaves less
  // than the 1.2 GiB of activations and the offload buffer (the module and the next two, 300 MiB).
  Runtime rt = dynamic_card(8 * GiB);
  rt.loader = Runtime::Loader::Legacy;
  const PolicyContext c = policy_context(rt);
  const Stage s = fit_stage(sampling_demand(), c);
  CHECK(s.mode == StageMode::DoesNotFit);
  CHECK(s.peak_bytes > 8 * GiB);
  REQUIRE_FALSE(s.notes.empty());
  CHECK(s.notes.back().find("--reserve-vram") != std::string::npos);
  CHECK(s.required_bytes() <= 8 * GiB);  // with a larger reserve it runs: the least it needs fits
}

TEST_CASE("runs under dynamic VRAM: fits, streams, does not fit, host RAM", "[runtime][dynamic]") {
  Runtime big = dynamic_card(80 * GiB);
  const Estimate fits = estimate(flux_job("bf16", 1024), big);
  CHECK(fits.runtime == Runtime::Loader::Dynamic);
  CHECK(fits.verdict == Verdict::Fits);
  // On a roomy card the text encoders and the VAE stay cached while sampling: the card holds them.
  const Stage& sample = stage_named(fits, "sample");
  CHECK(sample.cached_bytes > 9 * GiB);  // T5-XXL fp16 (9.5 GB) at least
  CHECK(sample.peak_bytes - sample.cached_bytes == sample.full_load_bytes);

  const Estimate streams = estimate(flux_job("bf16", 1024), dynamic_card(16 * GiB));
  CHECK(streams.verdict == Verdict::Streams);
  CHECK(streams.slowdown > 1.0);
  CHECK(streams.required_bytes() < 16 * GiB);
  CHECK(stage_named(streams, "sample").streamed_bytes.at("flux1-dev") > 0);

}

// Dynamic VRAM's weights are file-backed: comfy-aimdo 0.6.0 (PyPI, g68088de9d) model_mmap.ModelMMAP and
// Comfy-Org/ComfyUI comfy/utils.py / model_patcher.py (TensorFileSlice, read_tensor_file_slice_into) read
// them from the model file, so RAM short of the weights means pages read again from disk, not a dead
// run. LoRA patches have no file behind them: ComfyUI keeps them in pinned host buffers
// (comfy/ops.py@0271a469 resolve_cast_module_with_vbar). GGUF models stay on the legacy loader.
TEST_CASE("host RAM under dynamic VRAM: file-backed weights slow the run, held memory ends it",
          "[runtime][dynamic]") {
  Runtime low_ram = dynamic_card(80 * GiB);
  low_ram.ram_bytes = 16 * GiB;  // Flux.1 dev bf16 alone is 23.8 GB
  const Estimate slow = estimate(flux_job("bf16", 1024), low_ram);
  CHECK(slow.verdict == Verdict::Streams);
  CHECK(slow.verdict_reason.find("reads weights from disk") != std::string::npos);
  CHECK(slow.host_ram_bytes > 23 * GiB);
  CHECK(slow.host_ram_held_bytes == 0);  // nothing but file-backed weights

  Job lora = flux_job("bf16", 1024);
  lora.lora_bytes = 20 * GiB;  // more patch memory than the 16 GiB of RAM
  const Estimate dies = estimate(lora, low_ram);
  CHECK(dies.verdict == Verdict::DoesNotFit);
  CHECK(dies.host_ram_held_bytes == 20 * GiB);
  CHECK(dies.verdict_reason.find("OOM killer") != std::string::npos);  // Linux unless told Windows
  low_ram.windows = true;
  CHECK(estimate(lora, low_ram).verdict_reason.find("page file") != std::string::npos);
  low_ram.windows = false;

  // A GGUF model is read whole to the CPU by its own (legacy) patcher: it is held.
  const Estimate gguf = estimate(flux_job("gguf-q8_0", 1024), low_ram);
  CHECK(gguf.host_ram_held_bytes > 10 * GiB);
  CHECK(gguf.host_ram_held_bytes < gguf.host_ram_bytes);  // the text encoders and the VAE are file-backed

  // The legacy loader keeps its rule: every weight is read to the CPU and stays there.
  Runtime legacy = low_ram;
  legacy.loader = Runtime::Loader::Legacy;
  const Estimate old_rule = estimate(flux_job("bf16", 1024), legacy);
  CHECK(old_rule.verdict == Verdict::DoesNotFit);
  CHECK(old_rule.host_ram_held_bytes == old_rule.host_ram_bytes);
  CHECK(old_rule.verdict_reason.find("runs out of host RAM") != std::string::npos);
}

TEST_CASE("GGUF models stay on the legacy loader under dynamic VRAM", "[runtime][dynamic]") {
  const Estimate e = estimate(flux_job("gguf-q4_1", 1024), dynamic_card(8 * GiB));
  CHECK(stage_named(e, "sample").loader == Runtime::Loader::Legacy);
  CHECK(stage_named(e, "text_encode").loader == Runtime::Loader::Dynamic);
}

TEST_CASE("legacy verdicts: tight only when partial loading or the tiled retry saves the run",
          "[runtime][legacy]") {
  Runtime rt;
  rt.vram_bytes = 8 * GiB;
  const Estimate e = estimate(flux_job("bf16", 1024), rt);
  REQUIRE(e.verdict == Verdict::Tight);
  CHECK(e.verdict_reason.find("partial loading") != std::string::npos);
  CHECK(e.required_bytes() <= e.peak_bytes);
}

TEST_CASE("nvfp4 computes natively only from compute capability 10.0; elsewhere each layer is dequantised",
          "[runtime][precision]") {
  // gpus.json: the RTX 4090 is sm_89, the RTX 5090 sm_120 (NVIDIA CUDA GPUs page); ComfyUI computes
  // nvfp4 only on sm_100 and later (comfy/model_management.py), so on the 4090 one layer at a time is
  // cast to 16 bit: the largest linear layer in bf16 is the transient.
  auto run = [&](const char* gpu) {
    return api::estimate({{"model", "flux2-klein-9b"}, {"precision", "nvfp4"}, {"gpu", gpu}});
  };
  const nlohmann::json ada = run("4090"), blackwell = run("5090");
  auto transient = [](const nlohmann::json& r) {
    for (const auto& s : r["stages"])
      if (s["name"] == "sample") return s["breakdown"].value("dequant_transient", std::uint64_t{0});
    return std::uint64_t{0};
  };
  const ModelInfo& m = resolve_model("flux2-klein-9b");
  CHECK(transient(ada) == static_cast<std::uint64_t>(m.diffusion->largest_linear_params * 2));  // bf16 compute
  CHECK(transient(blackwell) == 0);
  bool noted = false;
  for (const auto& n : ada["notes"]) noted = noted || n.get<std::string>().find("dequantised layer by layer") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("the dequantisation note is whole, however long the names in it", "[runtime][precision]") {
  // Issue 19, item 7: a 160-byte buffer cut it at "...which costs a" when the card's compute
  // capability is unknown (a card given by its memory only) and the names are long.
  const nlohmann::json r = api::estimate({{"model", "flux2-klein-base-9b"}, {"precision", "nvfp4"}, {"vram_bytes", 24ull << 30}});
  std::string note;
  for (const auto& n : r["notes"])
    if (n.get<std::string>().find("dequantised layer by layer") != std::string::npos) note = n.get<std::string>();
  INFO(note);
  CHECK(note.size() > 160);
  CHECK(note.find("nvfp4 weights of flux2-klein-base-9b") == 0);
  CHECK(note.find("compute capability 10.0; the card's is unknown)") != std::string::npos);
  const std::string end = "), which costs a transient and time";
  REQUIRE(note.size() > end.size());
  CHECK(note.compare(note.size() - end.size(), end.size(), end) == 0);
}
