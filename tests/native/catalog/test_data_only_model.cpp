// A model added only to models.json (HEADROOM_DATA_DIR, no rebuild) is estimated and planned like
// the entry it was copied from: nothing about a diffusion model lives in code.
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "support/data_override.hpp"

using nlohmann::json;

namespace {

// wan2.1-t2v-1.3b's entry under a new name, alias and file pattern. Its "recognise" section goes:
// two entries with one tensor signature would make the inspector call a real file ambiguous.
json catalog_with_copy() {
  json data = support::source_data("models.json");
  json copy;
  for (const auto& m : data["models"])
    if (m["name"] == "wan2.1-t2v-1.3b") copy = m;
  REQUIRE(copy.is_object());
  copy["name"] = "acme-video-1.3b";
  copy["aliases"] = json::array({"acme-video"});
  copy["file_patterns"] = json::array({json::array({"acmevideo"})});
  copy.erase("recognise");
  data["models"].push_back(copy);
  return data;
}

// An API-format text-to-video workflow whose UNETLoader loads `unet`.
json workflow(const std::string& unet) {
  return json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": ")" + unet + R"(", "weight_dtype": "default"}},
    "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan", "device": "default"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox", "clip": ["2", 0]}},
    "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
    "6": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 1280, "height": 720, "length": 81, "batch_size": 1}},
    "7": {"class_type": "KSampler", "inputs": {"seed": 1, "steps": 30, "cfg": 6, "sampler_name": "uni_pc", "scheduler": "simple",
          "denoise": 1, "model": ["1", 0], "positive": ["4", 0], "negative": ["5", 0], "latent_image": ["6", 0]}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["3", 0]}}
  })");
}

// Every figure of a result, with the names that must differ put back to the original's.
std::string as_original(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

json run_json(const std::string& args) {
  CliRun r = run_cli(args, /*with_stderr=*/false);
  INFO(args << "\n" << r.out);
  REQUIRE(r.code <= 1);  // 0 fits, 1 does not fit
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("a model added only to models.json estimates like the entry it copies", "[catalog][cli][data]") {
  support::DataOverride data;
  data.write("models.json", catalog_with_copy());
  for (const std::string card : {"--vram 8", "--vram 24", "--vram 12 --decode headroom"}) {
    json added = run_json("estimate --model acme-video " + card + " --json");
    json original = run_json("estimate --model wan2.1-t2v-1.3b " + card + " --json");
    CHECK(added["job"]["diffusion"]["model"] == "acme-video-1.3b");
    CHECK(added["peak_bytes"] == original["peak_bytes"]);
    CHECK(added["verdict"] == original["verdict"]);
    CHECK(as_original(added.dump(), "acme-video-1.3b", "wan2.1-t2v-1.3b") == original.dump());
  }
}

TEST_CASE("a workflow loading a file of the data-only model plans like the original's", "[catalog][cli][data][plan]") {
  support::DataOverride data;
  data.write("models.json", catalog_with_copy());
  data.write("added.json", workflow("acmevideo_fp16.safetensors"));
  data.write("original.json", workflow("wan2.1_t2v_1.3B_fp16.safetensors"));
  json added = run_json("plan '" + data.path("added.json") + "' --vram 8 --runtime legacy --json");
  json original = run_json("plan '" + data.path("original.json") + "' --vram 8 --runtime legacy --json");
  // How the name was matched is the workflow reader's note (its own spelling rules for the known
  // model, the catalog's file patterns for the added one); the figures must not differ.
  CHECK(added["job"]["notes"][0] == "'acmevideo_fp16.safetensors' taken for acme-video-1.3b from its file name "
                                    "(catalog file patterns)");
  for (json* j : {&added, &original}) {
    j->erase("notes");
    (*j)["job"].erase("notes");
    (*j)["workflow"].erase("notes");
  }
  CHECK(added["job"]["diffusion"]["model"] == "acme-video-1.3b");
  CHECK(added["job"]["diffusion"]["file"] == "acmevideo_fp16.safetensors");
  REQUIRE(added["changes"].size() == original["changes"].size());
  CHECK(added["changes"].size() >= 3);  // 720p x 81 frames is tight on 8 GB: the planner had work to do
  CHECK(added["peak_bytes"] == original["peak_bytes"]);
  for (std::size_t i = 0; i < added["changes"].size(); ++i) {
    CHECK(added["changes"][i]["kind"] == original["changes"][i]["kind"]);
    CHECK(added["changes"][i]["new_peak_bytes"] == original["changes"][i]["new_peak_bytes"]);
  }
  std::string a = as_original(added.dump(), "acme-video-1.3b", "wan2.1-t2v-1.3b");
  a = as_original(a, "acmevideo_fp16.safetensors", "wan2.1_t2v_1.3B_fp16.safetensors");
  a = as_original(a, data.path("added.json"), data.path("original.json"));
  CHECK(a == original.dump());
}
