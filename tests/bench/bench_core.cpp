// Median time per call of the estimator and the planner (issue #2 target: well under 1 ms).
// Workflows are read and parsed once, outside the timed loop: the figures exclude file reading.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "core/api/api.hpp"
#include "core/estimate/estimator.hpp"
#include "core/plan/planner.hpp"
#include "core/workflow/workflow.hpp"

namespace {

using nlohmann::json;

json load(const std::string& rel) {
  std::ifstream in(std::string(HEADROOM_SHARED_DIR) + "/real-workflows/" + rel);
  if (!in) throw std::runtime_error("missing ../shared/real-workflows/" + rel);
  return json::parse(in);
}

headroom::Runtime card(std::uint64_t bytes) {
  headroom::Runtime rt;
  rt.vram_bytes = bytes;
  return rt;
}

constexpr std::uint64_t k24GB = 25757220864ull;  // RTX 4090 in gpus.json
constexpr std::uint64_t k12GB = 12884901888ull;  // RTX 3060 12GB in gpus.json

void BM_estimate_flux_dev(benchmark::State& state) {
  headroom::Job job = headroom::default_job("flux1-dev");
  auto rt = card(k24GB);
  for (auto _ : state) benchmark::DoNotOptimize(headroom::estimate(job, rt));
}
BENCHMARK(BM_estimate_flux_dev);

void BM_estimate_wan22_i2v(benchmark::State& state) {
  headroom::Job job = headroom::default_job("wan2.2-i2v-a14b");
  auto rt = card(k24GB);
  for (auto _ : state) benchmark::DoNotOptimize(headroom::estimate(job, rt));
}
BENCHMARK(BM_estimate_wan22_i2v);

// api::plan on a parsed workflow: graph flattening, job extraction, estimate, planner, smallest card, JSON.
void plan_workflow(benchmark::State& state, const std::string& rel, std::uint64_t vram) {
  json request = {{"workflow", load(rel)}, {"vram_bytes", vram}};
  for (auto _ : state) benchmark::DoNotOptimize(headroom::api::plan(request));
}
BENCHMARK_CAPTURE(plan_workflow, flux_dev_full_24GB, "flux_dev_full_text_to_image.json", k24GB);
BENCHMARK_CAPTURE(plan_workflow, flux_dev_full_12GB, "flux_dev_full_text_to_image.json", k12GB);
BENCHMARK_CAPTURE(plan_workflow, wan22_14B_t2v_24GB_fits, "video_wan2_2_14B_t2v.json", k24GB);
BENCHMARK_CAPTURE(plan_workflow, wan22_14B_t2v_12GB, "video_wan2_2_14B_t2v.json", k12GB);
BENCHMARK_CAPTURE(plan_workflow, wan22_i2v_subgraph_12GB, "latest/03_video_wan2_2_14B_i2v_subgraphed.json", k12GB);
BENCHMARK_CAPTURE(plan_workflow, wan_vace_14B_12GB, "video_wan_vace_14B_t2v.json", k12GB);

// The workflow parser alone.
void parse_workflow(benchmark::State& state, const std::string& rel) {
  json wf = load(rel);
  for (auto _ : state) benchmark::DoNotOptimize(headroom::workflow::analyse_workflow(wf, rel));
}
BENCHMARK_CAPTURE(parse_workflow, wan22_14B_t2v, "video_wan2_2_14B_t2v.json");

}  // namespace

BENCHMARK_MAIN();
