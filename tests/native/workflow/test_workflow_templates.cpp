// The workflow parser on the official ComfyUI templates in ../shared/real-workflows/.
// Every expected value below is copied from that folder's INDEX.md ("Table": loaders -> model files,
// latent node -> width x height x length, batch; "byp." marks bypassed pipelines), not from the parser.
#include <filesystem>
#include <map>
#include <set>

#include "catch.hpp"
#include "support/shared_data.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using namespace headroom::workflow;
namespace fs = std::filesystem;

namespace {

struct Expected {
  std::vector<std::string> diffusion_files;  // active diffusion/checkpoint loaders (INDEX "Loaders")
  std::string model;                         // catalog name the file maps to ("" = not in the catalog)
  std::string precision;                     // from the file name ("" = none written)
  std::vector<std::string> text_encoder_files;
  int width, height, frames, batch;          // INDEX "Latent node" (0 = size follows an input image)
  int loras;                                 // active LoRA loaders
};

const std::map<std::string, Expected>& expected() {
  static const std::map<std::string, Expected> e = {
      {"flux_dev_checkpoint_example.json",
       {{"flux1-dev-fp8.safetensors"}, "flux1-dev", "fp8_e4m3fn", {}, 1024, 1024, 1, 1, 0}},
      {"flux_dev_full_text_to_image.json",
       {{"flux1-dev.safetensors"}, "flux1-dev", "", {"clip_l.safetensors", "t5xxl_fp16.safetensors"}, 1024, 1024, 1, 1, 0}},
      {"flux_schnell.json", {{"flux1-schnell-fp8.safetensors"}, "flux1-schnell", "fp8_e4m3fn", {}, 1024, 1024, 1, 1, 0}},
      {"flux_schnell_full_text_to_image.json",
       {{"flux1-schnell.safetensors"}, "flux1-schnell", "", {"clip_l.safetensors", "t5xxl_fp16.safetensors"}, 1024, 1024, 1, 1, 0}},
      {"flux_kontext_dev_basic.json",
       {{"flux1-dev-kontext_fp8_scaled.safetensors"}, "flux1-kontext-dev", "fp8_scaled",
        {"clip_l.safetensors", "t5xxl_fp8_e4m3fn_scaled.safetensors"}, 1328, 800, 1, 1, 0}},
      {"flux_fill_inpaint_example.json",
       {{"flux1-fill-dev.safetensors"}, "flux1-dev", "", {"clip_l.safetensors", "t5xxl_fp16.safetensors"}, 0, 0, 1, 1, 0}},
      {"flux_redux_model_example.json",
       {{"flux1-dev.safetensors"}, "flux1-dev", "", {"t5xxl_fp16.safetensors", "clip_l.safetensors"}, 1024, 1024, 1, 1, 0}},
      {"text_to_video_wan.json",
       {{"wan2.1_t2v_1.3B_fp16.safetensors"}, "wan2.1-t2v-1.3b", "fp16", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 832, 480, 33, 1, 0}},
      {"video_wan_vace_14B_t2v.json",
       {{"wan2.1_vace_14B_fp16.safetensors"}, "wan2.1-vace-14b", "fp16", {"umt5_xxl_fp16.safetensors"}, 1280, 720, 81, 1, 1}},
      {"image_to_video_wan.json",
       {{"wan2.1_i2v_480p_14B_fp16.safetensors"}, "wan2.1-i2v-14b", "fp16", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 512, 512, 33, 1, 0}},
      {"video_wan2_2_5B_ti2v.json",
       {{"wan2.2_ti2v_5B_fp16.safetensors"}, "wan2.2-ti2v-5b", "fp16", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 1280, 704, 121, 1, 0}},
      {"video_wan2_2_14B_t2v.json",
       {{"wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors"},
        "wan2.2-t2v-a14b", "fp8_scaled", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 640, 640, 81, 1, 2}},
      {"video_wan2_2_14B_i2v.json",
       {{"wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors", "wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors"},
        "wan2.2-i2v-a14b", "fp8_scaled", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 640, 640, 81, 1, 2}},
      {"sdxl_simple_example.json",
       {{"sd_xl_base_1.0.safetensors", "sd_xl_refiner_1.0.safetensors"}, "sdxl-base", "", {}, 1024, 1024, 1, 1, 0}},
      {"latest/flux_dev_checkpoint_example.json",
       {{"flux1-dev.safetensors"}, "flux1-dev", "", {"clip_l.safetensors", "t5xxl_fp16.safetensors"}, 1024, 1024, 1, 1, 0}},
      {"latest/03_video_wan2_2_14B_i2v_subgraphed.json",
       {{"wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors", "wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors"},
        "wan2.2-i2v-a14b", "fp8_scaled", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, 720, 720, 81, 1, 2}},
  };
  return e;
}

using support::templates_dir;

std::vector<std::string> files_of(const WorkflowInfo& info, const std::set<std::string>& roles) {
  std::vector<std::string> out;
  for (const auto& l : info.loaders)
    if (roles.count(l.role)) out.push_back(l.file);
  return out;
}

}  // namespace

TEST_CASE("every real ComfyUI template parses to the models and sizes INDEX.md lists", "[workflow][templates]") {
  if (!fs::is_directory(templates_dir())) {
    WARN("skipped: " << templates_dir() << " is absent");
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : fs::recursive_directory_iterator(templates_dir())) {
    if (entry.path().extension() != ".json") continue;
    std::string rel = fs::relative(entry.path(), templates_dir()).generic_string();
    // 2026/ is the FLUX.2-era set with its own INDEX.md; its expectations come with the FLUX.2 catalog entries.
    if (rel.rfind("2026/", 0) == 0) continue;
    seen.insert(rel);
    DYNAMIC_SECTION(rel) {
      auto it = expected().find(rel);
      INFO("a template without an expectation: add its INDEX.md row to this test");
      REQUIRE(it != expected().end());
      const Expected& x = it->second;
      WorkflowInfo info = analyse_workflow_file(entry.path().string());
      INFO(info.to_json().dump(1));
      std::vector<std::string> diff = files_of(info, {"diffusion", "checkpoint"});
      std::sort(diff.begin(), diff.end());
      std::vector<std::string> want = x.diffusion_files;
      std::sort(want.begin(), want.end());
      // Bypassed duplicate pipelines (Wan 2.2 14B, VACE 1.3B) must not add loaders.
      CHECK(diff == want);
      CHECK(files_of(info, {"text_encoder"}) == x.text_encoder_files);
      CHECK(static_cast<int>(files_of(info, {"lora"}).size()) == x.loras);
      REQUIRE(info.job.diffusion.has_value());
      CHECK(info.job.diffusion->model == x.model);
      CHECK(info.job.diffusion->precision == x.precision);
      if (x.width) {
        CHECK(info.size_known);
        CHECK(info.job.width == x.width);
        CHECK(info.job.height == x.height);
      } else {
        CHECK_FALSE(info.size_known);
      }
      CHECK(info.job.frames == x.frames);
      CHECK(info.job.batch == x.batch);
      CHECK(info.unknown_nodes.empty());
      CHECK_FALSE(info.decoders.empty());
    }
  }
  CHECK(seen.size() == expected().size());
}

TEST_CASE("templates: details INDEX.md spells out", "[workflow][templates]") {
  if (!fs::is_directory(templates_dir())) {
    WARN("skipped: " << templates_dir() << " is absent");
    return;
  }
  auto load = [](const std::string& rel) { return analyse_workflow_file(templates_dir() + "/" + rel); };

  SECTION("Wan 2.2 14B: two experts become one diffusion component with a note") {
    WorkflowInfo info = load("video_wan2_2_14B_t2v.json");
    CHECK(info.weight_dtype.size() == 2);  // the two active UNETLoaders, not the bypassed pair
    bool noted = false;
    for (const auto& n : info.job.notes) noted = noted || n.find("one expert at a time") != std::string::npos;
    CHECK(noted);
    CHECK(info.job.text_encoders.size() == 1);
    CHECK(info.job.text_encoders[0].model == "umt5-xxl");
    CHECK(info.job.vae->model == "wan2.1-vae");
    CHECK(info.is_video);
  }
  SECTION("subgraph: 720x720x81 lives on the inner WanImageToVideo #128 (instance #130 has no values)") {
    WorkflowInfo info = load("latest/03_video_wan2_2_14B_i2v_subgraphed.json");
    REQUIRE(info.width.size() == 1);
    CHECK(info.width[0].node_id == "130:128");
    CHECK(info.width[0].where.size() == 1);
    CHECK(info.width[0].where[0].to_string() == "/definitions/subgraphs/0/nodes/10/widgets_values/0");
  }
  SECTION("subgraph: Flux width is promoted to instance #41 (widgets_values [prompt, 1024, 1024])") {
    WorkflowInfo info = load("latest/flux_dev_checkpoint_example.json");
    REQUIRE(info.width.size() == 1);
    std::set<std::string> where;
    for (const auto& p : info.width[0].where) where.insert(p.to_string());
    CHECK(where.count("/nodes/2/widgets_values/1") == 1);  // node #41 is the third top-level node
    CHECK(where.size() == 2);                               // and the inner EmptySD3LatentImage copy
    CHECK(info.job.text_encoders.size() == 2);
  }
  SECTION("Redux: width and height come from PrimitiveNodes; both copies are rewritable") {
    WorkflowInfo info = load("flux_redux_model_example.json");
    REQUIRE(info.width.size() == 1);
    CHECK(info.width[0].where.size() == 2);
    CHECK(info.job.width == 1024);
  }
  SECTION("Kontext: the bypassed EmptySD3LatentImage is ignored; one reference latent") {
    WorkflowInfo info = load("flux_kontext_dev_basic.json");
    // The sampled latent is the VAEEncode of the rescaled image: its size is the rescale's, not the latent node's.
    CHECK(info.latent_node == "VAEEncode");
    CHECK(info.job.width * info.job.height == 1328 * 800);
    CHECK(info.job.reference_images == 1);
    CHECK(info.job.text_encoders.size() == 2);
    CHECK(info.job.text_encoders[1].precision == "fp8_scaled");
  }
  SECTION("cfg: Wan 2.1 T2V samples with cfg 6, Flux dev with 1") {
    CHECK(load("text_to_video_wan.json").job.cfg == 6.0);
    CHECK(load("flux_dev_full_text_to_image.json").job.cfg == 1.0);
  }
  SECTION("checkpoint: flux1-dev-fp8 brings CLIP-L, fp8 T5-XXL and the Flux VAE") {
    WorkflowInfo info = load("flux_dev_checkpoint_example.json");
    REQUIRE(info.job.text_encoders.size() == 2);
    CHECK(info.job.text_encoders[1].model == "t5-xxl");
    CHECK(info.job.vae->model == "flux-vae");
  }
}
