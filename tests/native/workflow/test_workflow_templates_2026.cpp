// Every 2026 template in ../shared/real-workflows/2026/ plans with the right model family, a peak per
// stage and a verdict, under both loaders. The expected values are INDEX.md's rows (loader files ->
// catalog entry, latent widgets, ReferenceLatent inputs of the active instance), except three sizes
// whose stored widget copies are stale because the widget is linked: the Animate extend (640x640 from
// the top "Width" PrimitiveInt), Fun Camera (720x720x81 from WanCameraEmbedding) and VACE first-last
// frame (960x960 from the Int node); there the value the link carries is expected.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "catch.hpp"
#include "support/shared_data.hpp"
#include "core/api/api.hpp"
#include "core/catalog/catalog.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Expected {
  std::string model, precision, vae;
  int width, height, frames, references;
};

const std::map<std::string, Expected>& expected() {
  static const std::map<std::string, Expected> e = {
      {"03_video_wan2_2_14B_i2v_subgraphed.json", {"wan2.2-i2v-a14b", "fp8_scaled", "wan2.1-vae", 720, 720, 81, 0}},
      {"flux1_krea_dev.json", {"flux1-krea-dev", "fp8_scaled", "flux-vae", 1024, 1024, 1, 0}},
      {"flux_dev_checkpoint_example.json", {"flux1-dev", "", "flux-vae", 1024, 1024, 1, 0}},
      // The Kontext rescale is sized at its largest resolution (comfy_nodes.json FluxKontextImageScale).
      {"flux_kontext_dev_basic.json", {"flux1-kontext-dev", "fp8_scaled", "flux-vae", 1328, 800, 1, 1}},
      // Its latent takes GetImageSize of ImageScaleToTotalPixels (1 MP) of a loaded image: without the image the
      // aspect is unknown and the job is the 1 MP square (the 1248x832 the latent node stores is not what runs).
      {"image_flux2.json", {"flux2-dev", "fp8mixed", "flux2-vae", 1024, 1024, 1, 1}},
      {"image_flux2_fp8.json", {"flux2-dev", "fp8mixed", "flux2-vae", 1024, 1024, 1, 2}},
      {"image_flux2_klein_image_edit_4b_base.json", {"flux2-klein-base-4b", "fp8_e4m3fn", "flux2-vae", 1024, 1024, 1, 1}},
      {"image_flux2_klein_image_edit_4b_distilled.json", {"flux2-klein-4b", "fp8_e4m3fn", "flux2-vae", 1024, 1024, 1, 2}},
      {"image_flux2_klein_image_edit_9b_base.json", {"flux2-klein-base-9b", "fp8_e4m3fn", "flux2-vae", 1024, 1024, 1, 2}},
      {"image_flux2_klein_image_edit_9b_distilled.json", {"flux2-klein-9b", "fp8_e4m3fn", "flux2-vae", 1024, 1024, 1, 1}},
      {"image_flux2_klein_text_to_image.json", {"flux2-klein-base-4b", "", "flux2-vae", 1024, 1024, 1, 0}},
      {"image_flux2_text_to_image.json", {"flux2-dev", "fp8mixed", "flux2-vae", 1024, 1024, 1, 0}},
      {"image_flux2_text_to_image_9b.json", {"flux2-klein-base-9b", "fp8_e4m3fn", "flux2-vae", 1024, 1024, 1, 0}},
      {"video_wan2_1_infinitetalk.json", {"wan2.1-i2v-14b", "fp8_scaled", "wan2.1-vae", 832, 480, 81, 0}},
      {"video_wan2_2_14B_animate.json", {"wan2.2-animate-14b", "fp8_scaled", "wan2.1-vae", 640, 640, 77, 0}},
      {"video_wan2_2_14B_flf2v.json", {"wan2.2-i2v-a14b", "fp8_scaled", "wan2.1-vae", 640, 640, 81, 0}},
      {"video_wan2_2_14B_fun_camera.json", {"wan2.2-t2v-a14b", "fp8_scaled", "wan2.1-vae", 720, 720, 81, 0}},
      {"video_wan2_2_14B_fun_control.json", {"wan2.2-fun-control-a14b", "fp8_scaled", "wan2.1-vae", 640, 640, 81, 0}},
      {"video_wan2_2_14B_fun_inpaint.json", {"wan2.2-fun-inpaint-a14b", "fp8_scaled", "wan2.1-vae", 640, 640, 81, 0}},
      {"video_wan2_2_14B_i2v.json", {"wan2.2-i2v-a14b", "fp8_scaled", "wan2.1-vae", 640, 640, 81, 0}},
      {"video_wan2_2_14B_s2v.json", {"wan2.2-s2v-14b", "fp8_scaled", "wan2.1-vae", 640, 640, 77, 0}},
      {"video_wan2_2_14B_t2v.json", {"wan2.2-t2v-a14b", "fp8_scaled", "wan2.1-vae", 640, 640, 81, 0}},
      {"video_wan2_2_5B_fun_control.json", {"wan2.2-ti2v-5b", "bf16", "wan2.2-vae", 704, 704, 121, 0}},
      {"video_wan2_2_5B_fun_inpaint.json", {"wan2.2-ti2v-5b", "bf16", "wan2.2-vae", 640, 640, 81, 0}},
      {"video_wan_ati.json", {"wan2.1-ati-14b", "fp8_e4m3fn", "wan2.1-vae", 720, 480, 81, 0}},
      {"video_wan_vace_14B_ref2v.json", {"wan2.1-vace-14b", "fp16", "wan2.1-vae", 768, 768, 81, 0}},
      {"video_wan_vace_14B_t2v.json", {"wan2.1-vace-14b", "fp16", "wan2.1-vae", 1280, 720, 81, 0}},
      {"video_wan_vace_14B_v2v.json", {"wan2.1-vace-14b", "fp16", "wan2.1-vae", 720, 720, 81, 0}},
      {"video_wan_vace_flf2v.json", {"wan2.1-vace-14b", "fp16", "wan2.1-vae", 960, 960, 81, 0}},
      {"video_wan_vace_inpainting.json", {"wan2.1-vace-14b", "fp8_e4m3fn", "wan2.1-vae", 720, 720, 81, 0}},
      {"video_wan_vace_outpainting.json", {"wan2.1-vace-14b", "fp16", "wan2.1-vae", 960, 960, 81, 0}},
  };
  return e;
}

// Custom preprocessing nodes of the Animate template (controlnet_aux, SAM2, KJNodes): they run before
// any model Headroom estimates and load nothing it counts; everything else must be known.
const std::set<std::string>& custom_preprocessors() {
  static const std::set<std::string> s = {"DWPreprocessor", "Sam2Segmentation", "DownloadAndLoadSAM2Model",
                                          "PixelPerfectResolution", "PointsEditor", "DrawMaskOnImage", "BlockifyMask"};
  return s;
}

}  // namespace

TEST_CASE("plan: every 2026 template plans with the right family, a peak per stage and a verdict",
          "[plan][templates][2026]") {
  const fs::path dir = fs::path(support::templates_dir()) / "2026";
  if (!fs::is_directory(dir)) {
    WARN("skipped: " << dir << " is absent");
    return;
  }
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    DYNAMIC_SECTION(name) {
      auto it = expected().find(name);
      INFO("a 2026 template without an expectation: add its INDEX.md row to this test");
      REQUIRE(it != expected().end());
      const Expected& x = it->second;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const json wf = workflow::parse_workflow_text(text, name);
      for (const char* runtime : {"dynamic", "legacy"}) {
        const json r = api::plan({{"workflow", wf}, {"gpu", "4090"}, {"runtime", runtime}});
        INFO(runtime << ": " << r.dump().substr(0, 2000));
        const json& job = r["job"];
        CHECK(job["diffusion"]["model"] == x.model);
        CHECK(job["diffusion"]["precision"] == x.precision);
        CHECK(job["vae"]["model"] == x.vae);
        CHECK(job["width"] == x.width);
        CHECK(job["height"] == x.height);
        CHECK(job["frames"] == x.frames);
        CHECK(job["reference_images"] == x.references);
        CHECK(r["runtime"] == runtime);
        const std::string verdict = r["verdict"];
        CHECK((verdict == "fits" || verdict == "tight" || verdict == "streams" || verdict == "does not fit"));
        REQUIRE(r["stages"].size() >= 3);
        for (const auto& s : r["stages"]) CHECK(s["peak_bytes"].get<std::uint64_t>() > 0);
        for (const auto& u : r["unknown_nodes"]) CHECK(custom_preprocessors().count(u["type"].get<std::string>()) == 1);
        // A FLUX.2 file is never estimated as FLUX.1: the family follows the catalog entry.
        CHECK(resolve_model(job["diffusion"]["model"]).family == resolve_model(x.model).family);
      }
    }
  }
  CHECK(files == expected().size());
}

TEST_CASE("plan: a sampler's cfg linked to a PrimitiveFloat is the primitive's value, not the stale copy",
          "[plan][templates][2026]") {
  // video_wan2_2_14B_s2v.json: the running KSampler (#3) takes cfg from PrimitiveFloat #105 (1, the
  // 4-step LoRA's setting) while its own widget copy still says 6; cfg 6 would batch cond and uncond.
  const fs::path path = fs::path(support::templates_dir()) / "2026" / "video_wan2_2_14B_s2v.json";
  if (!fs::is_regular_file(path)) {
    WARN("skipped: " << path << " is absent");
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json r = api::plan({{"workflow", workflow::parse_workflow_text(text, path.filename().string())},
                            {"gpu", "4090"}, {"runtime", "legacy"}});
  CHECK(r["job"]["cfg"] == 1.0);
  for (const auto& s : r["stages"])
    for (const auto& note : s["notes"]) CHECK(note.get<std::string>().find("cond and uncond") == std::string::npos);
}
