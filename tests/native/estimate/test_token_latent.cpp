// Hunyuan3D (models.json arch.token_latent): the latent is a set of shape tokens sized by EmptyLatentHunyuan3Dv2's
// resolution, not by pixels, and the ShapeVAE's decode (decode kind latent_tokens) grows with those tokens. The
// figures are worked out by hand from the data, never read from the output.
#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "support/input_errors.hpp"
#include "support/stage_json.hpp"
#include "core/workflow/workflow.hpp"

using namespace headroom;
using nlohmann::json;
using support::notes_have;
using support::stage_json;

namespace {

std::string field_of(const json& req) {
  return support::input_error_field([&] { api::estimate(req); });
}

json image_to_model(const std::string& checkpoint, int tokens) {
  json wf = json::parse(R"({
    "1": {"class_type": "ImageOnlyCheckpointLoader", "inputs": {"ckpt_name": ""}},
    "2": {"class_type": "LoadImage", "inputs": {"image": "in.png"}},
    "3": {"class_type": "CLIPVisionEncode", "inputs": {"clip_vision": ["1", 1], "image": ["2", 0], "crop": "center"}},
    "4": {"class_type": "Hunyuan3Dv2Conditioning", "inputs": {"clip_vision_output": ["3", 0]}},
    "5": {"class_type": "EmptyLatentHunyuan3Dv2", "inputs": {"resolution": 0, "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 1],
          "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 5.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1}},
    "7": {"class_type": "VAEDecodeHunyuan3D", "inputs": {"samples": ["6", 0], "vae": ["1", 2], "num_chunks": 8000, "octree_resolution": 256}},
    "8": {"class_type": "VoxelToMesh", "inputs": {"voxel": ["7", 0], "algorithm": "surface net", "threshold": 0.6}},
    "9": {"class_type": "SaveGLB", "inputs": {"mesh": ["8", 0], "filename_prefix": "3d/x"}}
  })");
  wf["1"]["inputs"]["ckpt_name"] = checkpoint;
  wf["5"]["inputs"]["resolution"] = tokens;
  return wf;
}

}  // namespace

TEST_CASE("a Hunyuan3D 2.0 sequence is its shape tokens and the image tokens", "[estimate][tokens]") {
  // 3072 shape tokens + 1370 DINOv2-giant tokens (37 x 37 patches + class) in the joint sequence.
  CHECK(notes_have(stage_json(api::estimate({{"model", "hunyuan3d-dit-v2"}, {"tokens", 3072}, {"vram", 24}}), "sample"),
                   "4442 tokens per sequence"));
  CHECK(notes_have(stage_json(api::estimate({{"model", "hunyuan3d-dit-v2"}, {"tokens", 1024}, {"vram", 24}}), "sample"),
                   "2394 tokens per sequence"));
  // 2.1 attends to the image tokens by cross-attention: only the shape tokens are the sequence.
  CHECK(notes_have(stage_json(api::estimate({{"model", "hunyuan3d-dit-v2.1"}, {"tokens", 4096}, {"vram", 24}}), "sample"),
                   "4096 tokens per sequence"));
}

TEST_CASE("the ShapeVAE decode grows with the shape tokens beside a fixed query grid", "[estimate][tokens]") {
  const json a = stage_json(api::estimate({{"model", "hunyuan3d-shape-vae"}, {"tokens", 3072}, {"vram", 24}}), "vae_decode");
  // 33,792 elements per token (ComfyUI's own 33 x 1024) x 3072 tokens x 2 bytes (fp16).
  CHECK(a["breakdown"]["activations"].get<std::uint64_t>() == 33792ull * 3072 * 2);
  CHECK(a["breakdown"]["query_grid"].get<std::uint64_t>() == 403000000ull);
  const json b = stage_json(api::estimate({{"model", "hunyuan3d-shape-vae"}, {"tokens", 6144}, {"vram", 24}}), "vae_decode");
  CHECK(b["breakdown"]["activations"].get<std::uint64_t>() == 2 * a["breakdown"]["activations"].get<std::uint64_t>());
}

TEST_CASE("tokens are checked against the kind of model", "[estimate][tokens]") {
  CHECK(field_of({{"model", "flux1-dev"}, {"tokens", 3072}}) == "tokens");
  CHECK(field_of({{"model", "hunyuan3d-dit-v2"}, {"tokens", 70000}}) == "tokens");
  // No tokens given: the model's default (EmptyLatentHunyuan3Dv2's 3072) is estimated, not an error.
  CHECK(field_of({{"model", "hunyuan3d-dit-v2"}}) == "(no InputError)");
}

TEST_CASE("an image-to-3D workflow reads its checkpoint's three models and the token latent", "[workflow][tokens]") {
  const workflow::WorkflowInfo info = workflow::analyse_workflow(image_to_model("hunyuan3d-dit-v2_fp16.safetensors", 3072), "h3d");
  CHECK(info.size_known);
  CHECK(info.job.tokens == 3072);
  REQUIRE(info.job.diffusion);
  CHECK(info.job.diffusion->model == "hunyuan3d-dit-v2");
  REQUIRE(info.job.vae);
  CHECK(info.job.vae->model == "hunyuan3d-shape-vae");
  REQUIRE(info.job.clip_vision);
  CHECK(info.job.clip_vision->model == "dinov2-giant");
  CHECK(info.unknown_nodes.empty());
  const json out = api::plan({{"workflow", image_to_model("hunyuan_3d_v2.1.safetensors", 4096)}, {"vram", "24GB"}});
  CHECK(out["verdict"] != "unknown");
  CHECK(out["job"]["tokens"] == 4096);
  CHECK(out["job"]["diffusion"]["model"] == "hunyuan3d-dit-v2.1");
  CHECK(out["job"]["clip_vision"]["model"] == "dinov2-large");
}

TEST_CASE("a plain checkpoint loader brings no CLIP vision model", "[workflow][tokens]") {
  json wf = image_to_model("hunyuan3d-dit-v2_fp16.safetensors", 3072);
  wf["1"]["class_type"] = "CheckpointLoaderSimple";
  const workflow::WorkflowInfo info = workflow::analyse_workflow(wf, "h3d-plain");
  CHECK(!info.job.clip_vision);
}
