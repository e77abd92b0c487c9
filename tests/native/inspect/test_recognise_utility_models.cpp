// The one-pass utility models of the official templates (issue 26): Lotus depth, SDPose, SAM 3.1 and
// RT-DETRv4 are named by their official files, their headers are told apart from SD 1.5/2 UNets and from
// each other, and near names (Lotus' normal and generative releases, SAM 2, other RT-DETR scales) stay unknown.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"
#include "support/recognise_headers.hpp"

using namespace headroom;

namespace {

ModelFile header_of(const char* model) { return support::header_of({model}, "/m/model.safetensors", "fp16"); }

}  // namespace

TEST_CASE("Utility models: the official file names name their model and format", "[recognise][families][utility]") {
  const std::tuple<const char*, const char*, const char*, const char*> official[] = {
      {"lotus-depth-d-v1-1.safetensors", "diffusion", "lotus-depth-d-v1-1", ""},
      {"sdpose_wholebody_fp16.safetensors", "checkpoint", "sdpose-wholebody", "fp16"},
      {"sam3.1_multiplex_fp16.safetensors", "checkpoint", "sam3.1-multiplex", "fp16"},
      {"rt_detr_v4-x-hgnet_fp16.safetensors", "diffusion", "rt-detr-v4-x", "fp16"},
      {"rt_detr_v4-x-hgnet_fp32.safetensors", "diffusion", "rt-detr-v4-x", "fp32"},
  };
  for (const auto& [file, role, model, precision] : official) {
    INFO(file << " as " << role);
    NameRecognition r = recognise_file_name(file, role);
    CHECK(r.model == model);
    if (*precision) CHECK(r.precision == precision);
  }
}

TEST_CASE("Utility models: near names stay unknown", "[recognise][families][utility]") {
  const std::set<std::string> added = {"lotus-depth-d-v1-1", "sdpose-wholebody", "sam3.1-multiplex", "rt-detr-v4-x"};
  const std::pair<const char*, const char*> near[] = {
      {"lotus-normal-d-v1-0.safetensors", "diffusion"},   // Lotus' normal estimator
      {"lotus-depth-g-v1-0.safetensors", "diffusion"},    // the generative Lotus
      {"sam_vit_h_4b8939.pth", "checkpoint"},             // SAM 1
      {"sam2.1_hiera_large.safetensors", "checkpoint"},   // SAM 2.1
      {"sam_3d_body_dinov3_bf16.safetensors", "checkpoint"},
      {"rt_detr_v4-l-hgnet_fp16.safetensors", "diffusion"},  // another RT-DETRv4 scale
      {"sdpose_body_fp16.safetensors", "checkpoint"},     // the 17-keypoint body model
      {"v2-1_768-ema-pruned.safetensors", "checkpoint"},  // SD 2.1 itself
  };
  for (const auto& [file, role] : near) {
    INFO(file << " as " << role);
    CHECK(!added.count(recognise_file_name(file, role).model));
  }
}

TEST_CASE("Utility models: headers are told apart by their tensors", "[recognise][families][utility]") {
  for (const char* m : {"lotus-depth-d-v1-1", "sdpose-wholebody", "sam3.1-multiplex", "rt-detr-v4-x"}) {
    INFO(m);
    CHECK(recognise_tensors(header_of(m)).whole.model == m);
  }
  // An SD 1.5 UNet (768-wide context, no class embedding or heatmap head) is neither Lotus nor SDPose.
  CHECK(recognise_tensors(header_of("sd15")).whole.model == "sd15");
}
