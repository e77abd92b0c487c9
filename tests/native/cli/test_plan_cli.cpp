// `headroom plan` and `headroom estimate` output as people and scripts read it (issue 19, items 5 and 7):
// one exit status per meaning, the JSON naming what is not covered, the precision on the job line,
// tables whose columns line up whatever the length of a stage or model name.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "model_file_builders.hpp"
#include "support/shared_data.hpp"
#include <nlohmann/json.hpp>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A Flux-style API workflow whose diffusion loader names `unet`.
json api_workflow(const std::string& unet) {
  return json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": ")" + unet + R"(", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
          "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["2", 0]}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1.0, "sampler_name": "euler",
          "scheduler": "simple", "denoise": 1.0}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}})");
}

std::string write_workflow(const testfiles::TempDir& dir, const std::string& name, const json& wf) {
  const std::string path = dir.file(name);
  testfiles::write_file(path, wf.dump(2));
  return path;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The lines of the table whose header line starts with `header` (up to the first blank line).
std::vector<std::string> table(const std::string& text, const std::string& header) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : lines_of(text)) {
    if (!in && l.rfind(header, 0) == 0) in = true;
    if (!in) continue;
    if (l.empty()) break;
    out.push_back(l);
  }
  return out;
}

// Where the cells of a table line start: after the indent, and after every run of two or more blanks
// (cells hold single blanks only: "24.00 GiB", "clip-l, t5-xxl").
std::vector<std::size_t> cell_starts(const std::string& line) {
  std::vector<std::size_t> out;
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos) return out;
  out.push_back(i);
  while (true) {
    std::size_t gap = line.find("  ", i);
    if (gap == std::string::npos) break;
    std::size_t next = line.find_first_not_of(' ', gap);
    if (next == std::string::npos) break;
    out.push_back(next);
    i = next;
  }
  return out;
}

// Every row's cells start where the header's do (a row may end early when its last cells are empty).
void check_aligned(const std::vector<std::string>& rows) {
  REQUIRE(rows.size() >= 2);
  const auto header = cell_starts(rows[0]);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    INFO("header: " << rows[0] << "\nrow:    " << rows[r]);
    const auto starts = cell_starts(rows[r]);
    REQUIRE(starts.size() + 1 >= header.size());
    REQUIRE(starts.size() <= header.size());
    for (std::size_t c = 0; c < starts.size(); ++c) CHECK(starts[c] == header[c]);
  }
}

}  // namespace

TEST_CASE("plan: a diffusion model the catalog lacks is not covered: exit 3, the node named", "[cli][plan]") {
  // Issue 19, item 5: a latent upscaler whose name only shares "flux1" with the catalog was sized as
  // flux1-dev and called "fits" (exit 0).
  testfiles::TempDir dir;
  const std::string wf = write_workflow(dir, "upscaler.json", api_workflow("latent_upscaler_flux1_2x.safetensors"));
  CliRun j = run_cli("plan '" + wf + "' --vram 24 --json", /*with_stderr=*/false);
  CHECK(j.code == 3);
  json r = json::parse(j.out);
  CHECK(r["verdict"] == "unknown");
  CHECK(r["peak_bytes"].is_null());
  CHECK(r["not_covered"]["kind"] == "model");
  CHECK(r["not_covered"]["node_id"] == "1");
  CHECK(r["not_covered"]["node_type"] == "UNETLoader");
  CHECK(r["not_covered"]["role"] == "diffusion");
  CHECK(r["not_covered"]["file"] == "latent_upscaler_flux1_2x.safetensors");
  CHECK(r["reason"].get<std::string>().find("(UNETLoader #1) is not in the catalog") != std::string::npos);

  CliRun text = run_cli("plan '" + wf + "' --vram 24", /*with_stderr=*/true);
  CHECK(text.code == 3);
  CHECK(text.out.find("Not covered: diffusion model 'latent_upscaler_flux1_2x.safetensors' (UNETLoader #1)") !=
        std::string::npos);
}

TEST_CASE("plan: a workflow where no diffusion loader runs is not covered, with the nodes it could not read",
          "[cli][plan]") {
  testfiles::TempDir dir;
  json wf = json::parse(R"({
    "1": {"class_type": "SomePackModelLoader", "inputs": {"model": "x.safetensors"}},
    "2": {"class_type": "SomePackSampler", "inputs": {"model": ["1", 0]}},
    "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0], "filename_prefix": "x"}}})");
  CliRun j = run_cli("plan '" + write_workflow(dir, "custom.json", wf) + "' --vram 24 --json", /*with_stderr=*/false);
  CHECK(j.code == 3);
  json r = json::parse(j.out);
  CHECK(r["not_covered"]["kind"] == "no_diffusion_loader");
  REQUIRE(r["not_covered"]["nodes"].size() == 2);
  CHECK(r["reason"].get<std::string>().find("SomePackModelLoader #1") != std::string::npos);
  // Bad input keeps its own status.
  CHECK(run_cli("plan '" + dir.file("missing.json") + "'", true).code == 2);
}

TEST_CASE("plan: the job line shows the precision the estimate assumes", "[cli][plan]") {
  // flux1-dev.safetensors says no precision: the catalog default is estimated, and shown.
  const std::string wf = support::templates_dir() + "/flux_dev_full_text_to_image.json";
  if (!fs::exists(wf)) {
    WARN("skipped: " << wf << " is absent");
    return;
  }
  CliRun r = run_cli("plan '" + wf + "' --vram 24", /*with_stderr=*/true);
  REQUIRE(r.code == 0);
  std::string job;
  for (const auto& l : lines_of(r.out))
    if (l.rfind("Job ", 0) == 0) job = l;
  INFO(job);
  CHECK(job.find("flux1-dev bf16 (assumed: the catalog default), 1024x1024") != std::string::npos);
  CHECK(job.find(" ,") == std::string::npos);
}

TEST_CASE("plan and estimate tables: every column starts where its header does", "[cli][plan][estimate]") {
  // image_to_video_wan has a clip_vision_encode stage, longer than the old 16-character column.
  const std::string wf = support::templates_dir() + "/image_to_video_wan.json";
  if (fs::exists(wf)) {
    CliRun r = run_cli("plan '" + wf + "' --vram 24", /*with_stderr=*/true);
    REQUIRE(r.code == 0);
    auto rows = table(r.out, "  stage");
    CHECK(rows.size() == 6);
    check_aligned(rows);
  } else {
    WARN("skipped the plan table: " << wf << " is absent");
  }
  // A long model name in the breakdown ("weights:wan2.2-fun-control-a14b") and in the catalog list.
  CliRun e = run_cli("estimate --model wan2.2-fun-control-a14b --vram 24", /*with_stderr=*/true);
  REQUIRE(e.code <= 1);
  // Stage rows start at the margin; each is followed by its indented breakdown and notes.
  std::vector<std::string> stages, parts;
  for (const auto& l : table(e.out, "stage")) {
    if (l.rfind("    - ", 0) == 0) continue;
    (l.rfind("    ", 0) == 0 ? parts : stages).push_back(l);
  }
  check_aligned(stages);
  REQUIRE(parts.size() >= 3);
  const std::size_t value = cell_starts(parts[0]).at(1);
  for (const auto& p : parts) {
    INFO(p);
    CHECK(cell_starts(p).at(1) == value);
  }
  CliRun m = run_cli("models", /*with_stderr=*/true);
  REQUIRE(m.code == 0);
  check_aligned(table(m.out, "model "));
  check_aligned(table(m.out, "gpu "));
}

TEST_CASE("--help states every exit status", "[cli]") {
  CHECK(run_cli("plan --help", true).out.find("3 not covered") != std::string::npos);
  CHECK(run_cli("estimate --help", true).out.find("3 not covered") != std::string::npos);
  CHECK(run_cli("--help", true).out.find("4 internal error") != std::string::npos);
}
