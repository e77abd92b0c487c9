// Issue 20, "advice that holds together": one rule per test, each on a shared 2026 template where the
// planner broke it (scripts/check_plans.py counts them over all templates). Every claim is checked
// against an independent estimate of the changed job or runtime, not against the plan itself.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/plan/planner.hpp"
#include "core/workflow/workflow.hpp"
#include "support/shared_data.hpp"
#include "support/verdict_text.hpp"

using namespace headroom;
namespace fs = std::filesystem;

namespace {

// The job of a 2026 template, or nullopt (with a warning) when the shared data is absent.
std::optional<Job> template_job(const std::string& name) {
  const std::string path = support::templates_dir() + "/2026/" + name;
  if (!fs::exists(path)) {
    WARN("skipped: " << path << " is absent");
    return std::nullopt;
  }
  return workflow::analyse_workflow_file(path).job;
}

Runtime card(std::uint64_t gib, Runtime::Loader loader) {
  Runtime rt;
  rt.vram_bytes = gib * GiB;
  rt.loader = loader;
  return rt;
}

bool lists(const std::vector<PlanChange>& changes, const std::string& kind) {
  for (const auto& c : changes)
    if (c.kind == kind) return true;
  return false;
}

}  // namespace

TEST_CASE("plan: no block swap under dynamic VRAM, which streams the weights itself", "[plan][coherence]") {
  auto job = template_job("video_wan_vace_14B_t2v.json");
  if (!job) return;
  const Plan dynamic = make_plan(*job, card(8, Runtime::Loader::Dynamic));
  REQUIRE(dynamic.verdict != Verdict::Fits);
  CHECK_FALSE(lists(dynamic.changes, "block_swap"));
  CHECK_FALSE(lists(dynamic.cumulative, "block_swap"));
  // The legacy loader loads what fits and fails on the rest: there block swap is a real change on some
  // card (on 8 GiB the VACE job is past what block swap rescues; smaller changes come first).
  bool legacy_swaps = false;
  for (std::uint64_t gib : {8, 12, 16, 24}) {
    const Plan legacy = make_plan(*job, card(gib, Runtime::Loader::Legacy));
    legacy_swaps = legacy_swaps || lists(legacy.changes, "block_swap") || lists(legacy.cumulative, "block_swap");
  }
  CHECK(legacy_swaps);
}

TEST_CASE("plan: a listed change never makes the verdict worse", "[plan][coherence]") {
  auto job = template_job("image_flux2.json");
  if (!job) return;
  for (auto loader : {Runtime::Loader::Dynamic, Runtime::Loader::Legacy})
    for (std::uint64_t gib : {8, 12, 16, 24}) {
      const Runtime rt = card(gib, loader);
      const Plan plan = make_plan(*job, rt);
      INFO(loader_name(loader) << " " << gib << " GiB, verdict " << plan.verdict);
      for (const auto& c : plan.changes) {
        INFO(c.description);
        const Estimate e = estimate(c.job, rt);  // independent price of the changed job
        CHECK(verdict_rank(e.verdict) <= verdict_rank(plan.verdict));
        CHECK(improves(plan.estimate, e, need_basis(plan.estimate)));
      }
      std::optional<Verdict> prev = plan.verdict;
      for (const auto& c : plan.cumulative) {
        CHECK(verdict_rank(c.verdict) <= verdict_rank(prev));
        prev = c.verdict;
      }
    }
}

TEST_CASE("plan: the combined list takes one weight format of the diffusion model", "[plan][coherence]") {
  auto job = template_job("video_wan_vace_14B_t2v.json");
  if (!job) return;
  const std::set<std::string> formats = {"weights_fp8", "gguf_q8", "gguf_q5", "gguf_q4", "weights_nvfp4"};
  for (auto loader : {Runtime::Loader::Dynamic, Runtime::Loader::Legacy})
    for (std::uint64_t gib : {8, 12, 16}) {
      const Plan plan = make_plan(*job, card(gib, loader));
      INFO(loader_name(loader) << " " << gib << " GiB");
      int taken = 0;
      for (const auto& c : plan.cumulative) taken += formats.count(c.kind) ? 1 : 0;
      CHECK(taken <= 1);
      // The last step's job is the whole combination: one precision, that of the format taken.
      if (!plan.cumulative.empty()) CHECK(estimate(plan.cumulative.back().job, card(gib, loader)).verdict ==
                                          plan.cumulative.back().verdict);
    }
}

TEST_CASE("plan: the smallest cards never contradict the verdict on this card", "[plan][coherence]") {
  for (const char* name : {"image_flux2.json", "video_wan2_2_14B_t2v.json", "video_wan_vace_14B_t2v.json"}) {
    auto job = template_job(name);
    if (!job) return;
    for (auto loader : {Runtime::Loader::Dynamic, Runtime::Loader::Legacy})
      for (std::uint64_t gib : {8, 12, 16, 24}) {
        const Runtime rt = card(gib, loader);
        const Plan plan = make_plan(*job, rt);
        INFO(name << " " << loader_name(loader) << " " << gib << " GiB, verdict " << plan.verdict);
        if (plan.verdict != Verdict::DoesNotFit) {
          REQUIRE(plan.smallest_gpu_runs);
          CHECK(plan.smallest_gpu_runs->memory_bytes <= rt.vram_bytes);
        } else if (plan.smallest_gpu_runs) {
          CHECK(plan.smallest_gpu_runs->memory_bytes > rt.vram_bytes);
        }
        if (plan.verdict == Verdict::Fits) {
          REQUIRE(plan.smallest_gpu);
          CHECK(plan.smallest_gpu->memory_bytes <= rt.vram_bytes);
        }
        if (plan.smallest_gpu && plan.smallest_gpu_runs)
          CHECK(plan.smallest_gpu_runs->memory_bytes <= plan.smallest_gpu->memory_bytes);
        if (plan.smallest_gpu) CHECK(plan.smallest_gpu->verdict == Verdict::Fits);
      }
  }
}

TEST_CASE("plan: a saving is measured on the stage the change acts on", "[plan][coherence]") {
  auto job = template_job("image_flux2.json");
  if (!job) return;
  const Runtime rt = card(12, Runtime::Loader::Dynamic);
  const Plan plan = make_plan(*job, rt);
  const NeedBasis basis = need_basis(plan.estimate);
  REQUIRE_FALSE(plan.changes.empty());
  std::set<std::uint64_t> savings;
  for (const auto& c : plan.changes) {
    INFO(c.description);
    const Estimate e = estimate(c.job, rt);
    std::uint64_t before = 0, after = 0;
    for (const auto& s : plan.estimate.stages)
      if (s.name == c.saving_stage) before = stage_need_bytes(s, basis);
    for (const auto& s : e.stages)
      if (s.name == c.saving_stage) after = stage_need_bytes(s, basis);
    CHECK(c.saving_bytes == before - after);
    CHECK(c.saving_bytes > 0);
    savings.insert(c.saving_bytes);
    // The weights of the diffusion model are used in sampling, the text encoder's in text encoding.
    if (c.kind == "weights_fp8" || c.kind.rfind("gguf_", 0) == 0) CHECK(c.saving_stage == "sample");
    if (c.kind.rfind("text_encoder_", 0) == 0) CHECK(c.saving_stage == "text_encode");
  }
  CHECK(savings.size() == plan.changes.size());  // different changes, different savings
}

TEST_CASE("plan: a text encoder that limits the run gets its own changes", "[plan][coherence]") {
  auto job = template_job("image_flux2.json");  // Mistral Small 3.2 24B in bf16
  if (!job) return;
  for (auto loader : {Runtime::Loader::Dynamic, Runtime::Loader::Legacy}) {
    const Runtime rt = card(16, loader);
    const Plan plan = make_plan(*job, rt);
    INFO(loader_name(loader));
    const Stage* te = nullptr;
    for (const auto& s : plan.estimate.stages)
      if (s.name == "text_encode") te = &s;
    REQUIRE(te);
    REQUIRE(te->mode != StageMode::Full);  // the 24B encoder does not fit 16 GiB whole
    bool fp8 = false, on_cpu = false;
    for (const auto& c : plan.changes) {
      if (c.kind == "text_encoder_fp8") {
        fp8 = true;
        CHECK(c.saving_stage == "text_encode");
        // The catalog's fp8 release, as ComfyUI's FLUX.2 fp8 template links it.
        CHECK(c.description.find("mistral_3_small_flux2_fp8.safetensors") != std::string::npos);
      }
      on_cpu = on_cpu || c.kind == "text_encoder_cpu";
    }
    // Under dynamic VRAM the fp8 file halves what streams; the legacy loader, which cannot hold even the
    // 24 GB fp8 file on 16 GiB, gets the encoder moved to the CPU instead (what ComfyUI users do there).
    if (loader == Runtime::Loader::Dynamic) CHECK(fp8);
    else CHECK((fp8 || on_cpu));
  }
}

TEST_CASE("plan: the --reserve-vram asked for is enough when it is given", "[plan][coherence][legacy]") {
  auto job = template_job("image_flux2.json");
  if (!job) return;
  // The largest reserve any stage asks for: the one that makes the whole run load (as check_plans.py reads it).
  auto asked = [](const Estimate& e) -> std::optional<double> {
    std::optional<double> most;
    for (const auto& s : e.stages)
      for (const auto& n : s.notes) {
        const auto at = n.find("--reserve-vram ");
        if (at != std::string::npos) most = std::max(most.value_or(0.0), std::stod(n.substr(at + 15)));
      }
    return most;
  };
  Runtime rt = card(12, Runtime::Loader::Legacy);
  const Estimate as_is = estimate(*job, rt);
  const auto x = asked(as_is);
  REQUIRE(x);
  for (double extra : {0.0, 1.0}) {
    rt.reserve_bytes = static_cast<std::uint64_t>((*x + extra) * GiB);
    INFO("--reserve-vram " << *x + extra);
    const Estimate given = estimate(*job, rt);
    CHECK_FALSE(asked(given));
  }
  // --reserve-vram replaces ComfyUI's default reserve, so the value asked for is the same whatever
  // smaller reserve the run starts from, and above what was given.
  for (double given : {0.1, 0.3}) {
    rt.reserve_bytes = static_cast<std::uint64_t>(given * GiB);
    const auto again = asked(estimate(*job, rt));
    REQUIRE(again);
    CHECK(*again > given);
    CHECK(std::abs(*again - *x) <= 0.1 + 1e-9);
  }
}
