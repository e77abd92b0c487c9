// The planner on the real Flux and Wan templates at 24 GB and 12 GB. Each claim of the plan is
// checked against an independent call of the estimator on the changed job, not against the plan itself.
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "support/shared_data.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include "core/catalog/catalog.hpp"
#include "core/base/error.hpp"
#include "core/plan/planner.hpp"
#include "core/workflow/workflow.hpp"
#include "support/verdict_text.hpp"

using namespace headroom;
namespace fs = std::filesystem;

namespace {

using support::templates_dir;

// Flux and Wan templates (INDEX.md "Family" column); SDXL is not a catalog model.
std::vector<std::string> flux_and_wan_templates() {
  std::vector<std::string> out;
  if (!fs::is_directory(templates_dir())) return out;
  for (const auto& e : fs::recursive_directory_iterator(templates_dir())) {
    std::string name = e.path().filename().string();
    // 2026/ holds the FLUX.2-era templates, planned by their own test with their own expectations.
    if (fs::relative(e.path(), templates_dir()).generic_string().rfind("2026/", 0) == 0) continue;
    if (e.path().extension() == ".json" && (name.find("flux") != std::string::npos || name.find("wan") != std::string::npos))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The cards of gpus.json the issue names: RTX 4090 24 GB and RTX 3060 12 GB.
std::uint64_t card(const std::string& name) { return resolve_gpu(name).memory_bytes; }

}  // namespace

TEST_CASE("plan: every Flux and Wan template gets a peak and a verdict at 24 GB and 12 GB", "[plan][templates]") {
  auto files = flux_and_wan_templates();
  if (files.empty()) {
    WARN("skipped: " << templates_dir() << " is absent");
    return;
  }
  CHECK(files.size() == 15);  // INDEX.md: 16 templates, one of them SDXL
  for (const auto& f : files) {
    for (const char* gpu : {"4090", "3060"}) {
      DYNAMIC_SECTION(fs::path(f).filename().string() << " on " << gpu) {
        workflow::WorkflowInfo info = workflow::analyse_workflow_file(f);
        Runtime rt;
        rt.vram_bytes = card(gpu);
        Plan plan = make_plan(info.job, rt);
        INFO(plan.to_json().dump(1));
        CHECK(plan.estimate.peak_bytes > 0);
        CHECK((plan.verdict == Verdict::Fits || plan.verdict == Verdict::Tight || plan.verdict == Verdict::DoesNotFit));
        const Estimate before = estimate(info.job, rt);
        const NeedBasis basis = need_basis(before);
        const std::uint64_t need = need_bytes(before, basis);
        auto rank = [](std::optional<Verdict> v) { return v == Verdict::Fits ? 0 : v == Verdict::DoesNotFit ? 2 : 1; };
        // A listed change gives a better verdict, or the same one without raising the need measured
        // as for the unchanged run (then it lowers a stage that limits the run: change_gain.hpp).
        auto helps = [&](const Estimate& e, std::uint64_t than, std::optional<Verdict> was) {
          return rank(e.verdict) < rank(was) || (rank(e.verdict) == rank(was) && need_bytes(e, basis) <= than);
        };
        for (const auto& c : plan.changes) {
          Estimate e = estimate(c.job, rt);  // independent price of the changed job
          CHECK(e.peak_bytes == c.new_peak_bytes);
          CHECK(helps(e, need, before.verdict));
          CHECK(c.fits == (e.verdict == Verdict::Fits));
          CHECK_FALSE(c.description.empty());
        }
        if (plan.verdict != Verdict::Fits) {
          REQUIRE_FALSE(plan.cumulative.empty());
          // Each step helps the run as the previous step left it.
          std::uint64_t prev = need;
          std::optional<Verdict> prev_verdict = before.verdict;
          for (const auto& c : plan.cumulative) {
            Estimate e = estimate(c.job, rt);
            CHECK(helps(e, prev, prev_verdict));
            prev = need_bytes(e, basis);
            prev_verdict = e.verdict;
          }
          if (plan.cumulative_fits) CHECK(estimate(plan.cumulative.back().job, rt).verdict == Verdict::Fits);
          // What fits first, then what runs, then the rest; by cost inside each group.
          auto group = [](const PlanChange& c) { return c.fits ? 0 : (c.verdict != Verdict::DoesNotFit ? 1 : 2); };
          for (std::size_t i = 1; i < plan.changes.size(); ++i) {
            const PlanChange& a = plan.changes[i - 1];
            const PlanChange& b = plan.changes[i];
            CHECK(group(a) <= group(b));
            if (group(a) == group(b)) CHECK(a.cost <= b.cost);
          }
        } else {
          CHECK(plan.changes.empty());
        }
      }
    }
  }
}

TEST_CASE("plan: the smallest card runs the job unchanged and the next smaller one does not", "[plan]") {
  Job job = default_job("flux1-dev");  // 16-bit Flux.1 dev at 1024x1024
  Plan plan = make_plan(job, Runtime{});
  REQUIRE(plan.smallest_gpu);
  Runtime on;
  on.vram_bytes = plan.smallest_gpu->memory_bytes;
  CHECK(estimate(job, on).verdict == Verdict::Fits);
  for (const auto& g : catalog_data().gpus) {
    if (g.memory_bytes >= plan.smallest_gpu->memory_bytes) continue;
    Runtime smaller;
    smaller.vram_bytes = g.memory_bytes;
    CHECK(estimate(job, smaller).verdict != Verdict::Fits);
  }
  // Published: Flux.1 dev needs about 24 GB of weights in 16 bit (issue #2 tests), so no 24 GB card
  // runs it with room for activations; the smallest card is a 32 GB one or larger.
  CHECK(plan.smallest_gpu->memory_bytes > 30'000'000'000ull);
}

TEST_CASE("plan: a job that fits gets no changes; an over-budget one gets fp8 first among weight changes",
          "[plan]") {
  Job job = default_job("flux1-dev");
  Runtime big;
  big.vram_bytes = resolve_gpu("H200").memory_bytes;
  Plan fits = make_plan(job, big);
  CHECK(fits.verdict == Verdict::Fits);
  CHECK(fits.changes.empty());
  Runtime small;
  small.vram_bytes = resolve_gpu("4090").memory_bytes;
  Plan p = make_plan(job, small);
  REQUIRE(p.verdict != Verdict::Fits);
  auto pos = [&](const std::string& k) {
    for (std::size_t i = 0; i < p.changes.size(); ++i)
      if (p.changes[i].kind == k) return static_cast<int>(i);
    return -1;
  };
  REQUIRE(pos("weights_fp8") >= 0);
  CHECK(pos("weights_fp8") < pos("gguf_q4"));
  // fp8 halves 16-bit weights: the saving is at least 40% of Flux.1 dev's ~24 GB (issue #2: ~24 GB
  // in 16 bit, ~12 GB in fp8).
  CHECK(p.changes[pos("weights_fp8")].saving_bytes > 9'600'000'000ull);
}

TEST_CASE("api::plan: request validation and the unknown verdict", "[plan][api]") {
  using api::json;
  CHECK_THROWS_AS(api::plan(json{{"gpu", "4090"}}), InputError);
  CHECK_THROWS_AS(api::plan(json{{"workflow", json::object()}, {"gpu", "4090"}, {"vram_bytes", 5}}), InputError);
  CHECK_THROWS_AS(api::plan(json{{"workflow", json::object()}, {"bogus", 1}}), InputError);
  CHECK_THROWS_AS(api::plan(json{{"workflow", "{not json"}}), FileFormatError);
  json sd = json::parse(R"({"1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "my_private_merge_v3.safetensors"}},
                            "2": {"class_type": "SaveImage", "inputs": {"images": ["1", 2]}}})");
  json r = api::plan(json{{"workflow", sd}, {"vram_bytes", 12000000000ull}});
  CHECK(r["verdict"] == "unknown");
  CHECK(r["reason"].get<std::string>().find("my_private_merge_v3") != std::string::npos);
}

TEST_CASE("cli: headroom plan exit codes and JSON", "[plan][cli]") {
  std::string wf = templates_dir() + "/text_to_video_wan.json";
  if (!fs::exists(wf)) {
    WARN("skipped: " << wf << " is absent");
    return;
  }
  auto run = [](const std::string& args, std::string* out = nullptr) {
    CliRun r = run_cli("plan " + args, /*with_stderr=*/true);
    if (out) *out = r.out;
    return r.code;
  };
  std::string out;
  CHECK(run(wf + " --gpu H200 --json", &out) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["verdict"] == "fits");
  CHECK(j.contains("peak_bytes"));
  CHECK(j.contains("unknown_nodes"));
  CHECK(j.contains("smallest_gpu"));
  CHECK(j["job"].is_object());
  // Exit 1 exactly when the plan says "does not fit" (0.6 GiB is one such card for this template).
  CHECK(run(wf + " --vram 0.6 --json", &out) == 1);
  CHECK(nlohmann::json::parse(out)["verdict"] == "does not fit");
  fs::path bad = fs::temp_directory_path() / "headroom-plan-bad.json";
  std::ofstream(bad) << "{\"nodes\": [\n  {\"id\": 1,,}\n]}";
  CHECK(run(bad.string(), &out) == 2);
  CHECK(out.find("line 2") != std::string::npos);
  CHECK(run("/nonexistent/x.json") == 2);
  fs::remove(bad);
}

TEST_CASE("plan: the example workflows in workflows/ (README's main command) at 24 GB and 12 GB", "[plan][examples]") {
  fs::path dir = fs::path(HEADROOM_SOURCE_DIR) / "workflows";
  if (!fs::is_directory(dir)) {
    WARN("skipped: " << dir << " is absent");
    return;
  }
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++n;
    for (const char* gpu : {"4090", "3060"}) {
      std::ifstream in(e.path());
      api::json r = api::plan({{"workflow", api::json::parse(in)}, {"gpu", gpu}});
      INFO(e.path().filename().string() << " on " << gpu);
      CHECK(r["peak_bytes"].is_number());
      CHECK(r["verdict"].is_string());
      CHECK(r["verdict"] != "unknown");
      // Issue #4: the examples use only ComfyUI core and Headroom nodes, with Headroom's decode.
      CHECK(r["unknown_nodes"].empty());
      CHECK(r["job"]["decode_mode"] == "headroom");
    }
  }
  CHECK(n >= 5);  // issue #4 names five example workflows
}
