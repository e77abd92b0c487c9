// Workflow parser: API format, modes, unknown nodes and malformed input, on workflows written here.
#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/workflow/workflow.hpp"
#include "core/workflow/workflow_models_dir.hpp"

#include <filesystem>
#include <fstream>

using namespace headroom;
using namespace headroom::workflow;
using nlohmann::json;

namespace {

// ../shared/real-workflows/text_to_video_wan.json converted by hand to ComfyUI's API format
// (what "Export (API)" writes: linked inputs are [upstream id, output slot]), with one custom node
// ("SuperUpscale", not a ComfyUI core node) between the decode and the video.
json wan_t2v_api() {
  return json::parse(R"({
    "37": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.1_t2v_1.3B_fp16.safetensors", "weight_dtype": "default"}},
    "38": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan", "device": "default"}},
    "39": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
    "6":  {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox moving quickly", "clip": ["38", 0]}},
    "7":  {"class_type": "CLIPTextEncode", "inputs": {"text": "static, blurry", "clip": ["38", 0]}},
    "48": {"class_type": "ModelSamplingSD3", "inputs": {"shift": 8, "model": ["37", 0]}},
    "40": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 832, "height": 480, "length": 33, "batch_size": 1}},
    "3":  {"class_type": "KSampler", "inputs": {"seed": 82628696717253, "steps": 30, "cfg": 6, "sampler_name": "uni_pc",
           "scheduler": "simple", "denoise": 1, "model": ["48", 0], "positive": ["6", 0], "negative": ["7", 0],
           "latent_image": ["40", 0]}},
    "8":  {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["39", 0]}},
    "60": {"class_type": "SuperUpscale", "inputs": {"image": ["8", 0], "factor": 2}},
    "49": {"class_type": "CreateVideo", "inputs": {"fps": 16, "images": ["60", 0]}},
    "50": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/ComfyUI", "format": "auto", "codec": "auto", "video": ["49", 0]}}
  })");
}

// A minimal UI-format graph: loader -> sampler <- latent, sampler -> decode -> save.
json small_ui(int latent_mode, int second_latent_mode) {
  return json::parse(R"({
    "nodes": [
      {"id": 1, "type": "UNETLoader", "mode": 0, "inputs": [], "widgets_values": ["flux1-dev.safetensors", "fp8_e4m3fn"]},
      {"id": 2, "type": "EmptySD3LatentImage", "mode": )" + std::to_string(latent_mode) + R"(, "inputs": [], "widgets_values": [1024, 768, 2]},
      {"id": 7, "type": "EmptySD3LatentImage", "mode": )" + std::to_string(second_latent_mode) + R"(, "inputs": [], "widgets_values": [2048, 2048, 1]},
      {"id": 3, "type": "KSampler", "mode": 0, "inputs": [{"name": "model", "link": 1}, {"name": "latent_image", "link": 2}],
       "widgets_values": [1, "fixed", 20, 3.5, "euler", "simple", 1]},
      {"id": 4, "type": "VAEDecodeTiled", "mode": 0, "inputs": [{"name": "samples", "link": 3}], "widgets_values": [256, 64, 64, 8]},
      {"id": 5, "type": "SaveImage", "mode": 0, "inputs": [{"name": "images", "link": 4}], "widgets_values": ["x"]},
      {"id": 6, "type": "VAELoader", "mode": 0, "inputs": [], "widgets_values": ["ae.safetensors"]},
      {"id": 9, "type": "KSampler", "mode": 0, "inputs": [{"name": "model", "link": 6}, {"name": "latent_image", "link": 5}],
       "widgets_values": [1, "fixed", 20, 1, "euler", "simple", 1]},
      {"id": 10, "type": "SaveLatent", "mode": 0, "inputs": [{"name": "samples", "link": 7}], "widgets_values": ["x"]}
    ],
    "links": [[1, 1, 0, 3, 0, "MODEL"], [2, 2, 0, 3, 1, "LATENT"], [3, 3, 0, 4, 0, "LATENT"], [4, 4, 0, 5, 0, "IMAGE"],
              [5, 7, 0, 9, 1, "LATENT"], [6, 1, 0, 9, 0, "MODEL"], [7, 9, 0, 10, 0, "LATENT"]]
  })");
}

}  // namespace

TEST_CASE("API format: the hand-converted Wan 2.1 T2V template gives INDEX.md's values", "[workflow][api]") {
  WorkflowInfo info = analyse_workflow(wan_t2v_api(), "wan_api.json");
  CHECK(info.api_format);
  REQUIRE(info.job.diffusion);
  CHECK(info.job.diffusion->model == "wan2.1-t2v-1.3b");
  CHECK(info.job.diffusion->precision == "fp16");
  CHECK(info.job.width == 832);
  CHECK(info.job.height == 480);
  CHECK(info.job.frames == 33);
  CHECK(info.job.cfg == 6.0);
  CHECK(info.job.vae->model == "wan2.1-vae");
  // A literal's location is its inputs entry, ready for a preset to rewrite.
  REQUIRE(info.width.size() == 1);
  CHECK(info.width[0].where.at(0).to_string() == "/40/inputs/width");
  SECTION("an unknown node is listed with its id, not fatal") {
    REQUIRE(info.unknown_nodes.size() == 1);
    CHECK(info.unknown_nodes[0].id == "60");
    CHECK(info.unknown_nodes[0].type == "SuperUpscale");
  }
  SECTION("the POST /prompt body ({prompt: ...}) is accepted too") {
    json body = {{"prompt", wan_t2v_api()}, {"client_id", "x"}};
    CHECK(analyse_workflow(body, "body").job.frames == 33);
  }
}

TEST_CASE("API format: a node exported without class_type is not covered, the prompt still read", "[workflow][api]") {
  // The frontend exports a node its backend does not know with inputs and _meta only (issue 23 #8).
  json wf = wan_t2v_api();
  wf["60"] = {{"inputs", {{"image", {"8", 0}}, {"factor", 2}}}, {"_meta", {{"title", "Super Upscale"}}}};
  WorkflowInfo info = analyse_workflow(wf, "wan_api.json");
  CHECK(info.api_format);
  CHECK(info.job.frames == 33);
  REQUIRE(info.unknown_nodes.size() == 1);
  CHECK(info.unknown_nodes[0].id == "60");
  CHECK(info.unknown_nodes[0].type == kNoClassType);
  SECTION("a class_type that is not a string is still refused by name") {
    wf["60"]["class_type"] = 7;
    CHECK_THROWS_WITH(analyse_workflow(wf, "wan_api.json"), Catch::Contains("/60/class_type: expected a string"));
  }
  SECTION("an object of objects none of which has a class_type is no prompt") {
    CHECK_THROWS_WITH(analyse_workflow(json::parse(R"({"1": {"inputs": {}}})"), "x"),
                      Catch::Contains("not a ComfyUI workflow"));
  }
}

TEST_CASE("UI format: modes, widget order and decoders", "[workflow][ui]") {
  SECTION("weight_dtype fp8_e4m3fn overrides the file's 16 bits; VAEDecodeTiled keeps its tile size") {
    WorkflowInfo info = analyse_workflow(small_ui(0, 4), "small");
    CHECK(info.job.diffusion->precision == "fp8_e4m3fn");
    CHECK(info.job.decode_mode == DecodeMode::Tiled);
    CHECK(info.job.decode_tile_px == 256);
    CHECK(info.job.width == 1024);
    CHECK(info.job.height == 768);
    CHECK(info.job.batch == 2);
    CHECK(info.job.cfg == 3.5);  // KSampler widgets: seed, control, steps, cfg
  }
  SECTION("a bypassed latent node does not set the size; the active one does") {
    WorkflowInfo info = analyse_workflow(small_ui(4, 0), "small");
    CHECK(info.job.width == 2048);
  }
  SECTION("a muted node does not run, and neither do nodes only it needs") {
    json wf = small_ui(0, 4);
    wf["nodes"][5]["mode"] = 2;  // mute both outputs: nothing runs any more
    wf["nodes"][8]["mode"] = 2;
    WorkflowInfo info = analyse_workflow(wf, "small");
    CHECK_FALSE(info.job.diffusion.has_value());
  }
  SECTION("nodes not connected to an output do not run") {
    WorkflowInfo info = analyse_workflow(small_ui(0, 4), "small");
    CHECK_FALSE(info.job.vae.has_value());  // VAELoader #6 feeds nothing
  }
}

TEST_CASE("malformed workflows get FileFormatError with the file and position", "[workflow][errors]") {
  try {
    parse_workflow_text("{\n  \"nodes\": [\n    {\"id\": 1,, }\n  ]\n}", "bad.json");
    FAIL("no error");
  } catch (const FileFormatError& e) {
    std::string msg = e.what();
    CHECK(e.path() == "bad.json");
    CHECK(msg.find("line 3") != std::string::npos);
    CHECK(msg.find("column") != std::string::npos);
  }
  CHECK_THROWS_AS(analyse_workflow(json::array({1, 2}), "x.json"), FileFormatError);
  CHECK_THROWS_AS(analyse_workflow(json{{"nodes", 3}}, "x.json"), FileFormatError);
  CHECK_THROWS_AS(analyse_workflow(json::parse(R"({"nodes": [{"id": 1}]})"), "x.json"), FileFormatError);
  CHECK_THROWS_AS(analyse_workflow(json::parse(R"({"nodes": [], "links": [[1, 2]]})"), "x.json"), FileFormatError);
  CHECK_THROWS_WITH(analyse_workflow(json{{"foo", 1}}, "x.json"), Catch::Contains("not a ComfyUI workflow"));
  SECTION("a subgraph that instantiates itself is refused, not a stack overflow") {
    json wf = json::parse(R"({"nodes": [{"id": 1, "type": "sg"}],
      "definitions": {"subgraphs": [{"id": "sg", "nodes": [{"id": 2, "type": "sg"}], "links": []}]}})");
    CHECK_THROWS_AS(analyse_workflow(wf, "loop.json"), FileFormatError);
  }
}

TEST_CASE("--models: files are looked up under the folder, never outside it", "[workflow][models_dir]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "headroom-models-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "diffusion_models" / "wan");
  fs::create_directories(dir / "vae");
  std::ofstream(dir / "diffusion_models" / "wan" / "wan2.1_t2v_1.3B_fp16.safetensors") << "not a safetensors file";
  std::ofstream(dir / "vae" / "wan_2.1_vae.safetensors") << "x";
  CHECK(find_model_file(dir.string(), "wan_2.1_vae.safetensors", "vae") == (dir / "vae" / "wan_2.1_vae.safetensors").string());
  CHECK(find_model_file(dir.string(), "wan2.1_t2v_1.3B_fp16.safetensors", "diffusion").has_value());  // in a subfolder
  CHECK_FALSE(find_model_file(dir.string(), "../etc/passwd", "vae").has_value());
  CHECK_FALSE(find_model_file(dir.string(), "/etc/passwd", "vae").has_value());
  CHECK_FALSE(find_model_file(dir.string(), "missing.safetensors", "vae").has_value());

  // A header that cannot be read falls back to the name, with a note; the plan still works.
  ParseOptions opt;
  opt.models_dir = dir.string();
  WorkflowInfo info = analyse_workflow(wan_t2v_api(), "wan_api.json", opt);
  CHECK(info.job.diffusion->model == "wan2.1-t2v-1.3b");
  CHECK_FALSE(info.job.diffusion->weight_bytes.has_value());
  bool header_note = false, missing_note = false;
  for (const auto& n : info.job.notes) {
    header_note = header_note || n.find("wan2.1_t2v_1.3B_fp16.safetensors") != std::string::npos &&
                                     n.find("estimated from its name") != std::string::npos;
    missing_note = missing_note || n.find("umt5_xxl_fp8_e4m3fn_scaled.safetensors' not found") != std::string::npos;
  }
  CHECK(header_note);
  CHECK(missing_note);
  fs::remove_all(dir);
}
