// A broken models.json, gpus.json or presets.json fails when the catalog loads, and the message
// names the file, the entry, the key and what was expected (run through the CLI with
// HEADROOM_DATA_DIR, since this process's catalog is parsed once).
#include <functional>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "support/data_override.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/decode_plan.hpp"
#include "core/plan/changes.hpp"

using nlohmann::json;

namespace {

json& model_entry(json& data, const std::string& name) {
  for (auto& m : data["models"])
    if (m["name"] == name) return m;
  FAIL("no model " << name);
  throw;
}

// `headroom estimate` on a models.json changed by `edit`: its exit code and what it printed.
CliRun estimate_with(const std::function<void(json&)>& edit, const std::string& model = "flux1-dev") {
  support::DataOverride data;
  json models = support::source_data("models.json");
  edit(models);
  data.write("models.json", models);
  CliRun r = run_cli("estimate --model " + model + " --vram 24", /*with_stderr=*/true);
  // Every message names the file as read: the override's path.
  CHECK(r.out.find(data.path("models.json")) != std::string::npos);
  return r;
}

}  // namespace

TEST_CASE("a missing architecture figure fails at load naming file, model, key and type", "[catalog][data]") {
  CliRun r = estimate_with([](json& d) { model_entry(d, "flux1-dev")["arch"].erase("hidden"); });
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("model flux1-dev: 'arch.hidden' is missing (expected an integer)") != std::string::npos);
}

TEST_CASE("a wrong-typed architecture figure fails at load naming what came instead", "[catalog][data]") {
  SECTION("a string for an integer") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "umt5-xxl")["arch"]["tokens"] = "long"; });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model umt5-xxl: 'arch.tokens' expected an integer, got a string \"long\"") != std::string::npos);
  }
  SECTION("two strides where three are needed") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "wan2.2-vae")["arch"]["stride"] = json::array({4, 16}); });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model wan2.2-vae: 'arch.stride' expected three positive integers [T, H, W]") != std::string::npos);
  }
  SECTION("a native decoder no code implements") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "sdxl-vae")["arch"]["decoder"] = "kl3d"; });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model sdxl-vae: 'arch.decoder' expected kl, flux2, wan2.1 or wan2.2 (a native decoder), got 'kl3d'") !=
          std::string::npos);
  }
  SECTION("a decode figure of the wrong kind, inside its section") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "wan2.1-vae")["decode"]["output_copies"] = true; });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model wan2.1-vae: 'decode.output_copies' expected a number, got a boolean true") != std::string::npos);
  }
  SECTION("a ComfyUI hint of the wrong type") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "flux1-schnell")["comfy"] = {{"config_class", 7}}; });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model flux1-schnell: 'comfy.config_class' expected a string, got a number 7") != std::string::npos);
  }
  SECTION("an activation phase without its ffn multiple") {
    CliRun r = estimate_with([](json& d) { model_entry(d, "wan2.1-t2v-14b")["activation"]["phases"][1].erase("ffn_multiple"); });
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find("model wan2.1-t2v-14b: 'activation.phases[1].ffn_multiple' is missing (expected a number)") !=
          std::string::npos);
  }
}

TEST_CASE("an optional GPU figure of the wrong type fails at load naming the GPU", "[catalog][data]") {
  support::DataOverride data;
  json gpus = support::source_data("gpus.json");
  const std::string name = gpus["gpus"][0]["name"];
  gpus["gpus"][0]["pcie_gen"] = "four";
  data.write("gpus.json", gpus);
  CliRun r = run_cli("estimate --model flux1-dev --vram 24", /*with_stderr=*/true);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find(data.path("gpus.json") + ": gpu " + name + ": 'pcie_gen' expected an integer, got a string \"four\"") !=
        std::string::npos);
}

TEST_CASE("a presets.json change kind without a planner function fails loudly", "[plan][data]") {
  support::DataOverride data;
  json presets = support::source_data("presets.json");
  presets["changes"].push_back({{"kind", "sharpen_less"}, {"cost", 12}, {"widget", false}, {"effect", "x"}});
  data.write("presets.json", presets);
  data.write("wf.json", json::parse(R"({"1": {"class_type": "UNETLoader",
      "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}}})"));
  CliRun r = run_cli("plan '" + data.path("wf.json") + "' --vram 8", /*with_stderr=*/true);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("presets.json: change kind 'sharpen_less' has no planner function") != std::string::npos);
}

TEST_CASE("every change kind of presets.json has a planner function, and only those", "[plan][data]") {
  const auto& kinds = headroom::change_kinds();
  const headroom::PresetData& data = headroom::planner_preset_data();
  CHECK(data.changes.size() == kinds.size());
  for (const auto& c : data.changes) CHECK(kinds.count(c.kind) == 1);
}

TEST_CASE("the native decode plans count the VAE decoders' published parameters", "[catalog][decode]") {
  // decoder_params in models.json come from the released checkpoints (facts §1.4); the plans count
  // weights from the arch figures alone, so near-equal counts check every width and block (one wrong
  // width is millions off). They differ by at most the 1x1 z -> z latent conv before the decoder
  // (post_quant_conv / conv2), which the plan always counts: Flux's VAE has none, and the Wan
  // counts leave it out as it sits outside the decoder module.
  int checked = 0;
  for (const auto& m : headroom::catalog_data().models) {
    if (!m.vae || m.vae->decoder == headroom::DecoderKind::None) continue;
    headroom::DecodeRequest r;
    r.family = headroom::decoder_kind_name(m.vae->decoder);
    r.arch = &*m.vae;
    r.latent_channels = m.vae->z_channels;
    r.latent_height = r.latent_width = 8;
    r.dtype_bytes = 4;
    INFO(m.name);
    const std::uint64_t planned = headroom::plan_decode(r).weights_bytes / 4;
    const std::uint64_t z = static_cast<std::uint64_t>(m.vae->z_channels);
    CHECK(planned >= m.vae->decoder_params);
    CHECK(planned - m.vae->decoder_params <= z * z + z);
    ++checked;
  }
  CHECK(checked == 7);  // the KL VAEs (Flux, FLUX.2, SD, SDXL, SD3) and both Wan VAEs
}

TEST_CASE("the optional GPU figures load when typed as documented", "[catalog][data]") {
  support::DataOverride data;
  json gpus = support::source_data("gpus.json");
  gpus["gpus"][0].update({{"pcie_gen", 4}, {"pcie_lanes", 16}, {"bf16_tflops", 82.6}, {"vendor", "nvidia"},
                          {"compute_capability", "8.6"}});
  data.write("gpus.json", gpus);
  CliRun ok = run_cli("estimate --model flux1-dev --vram 24", /*with_stderr=*/true);
  INFO(ok.out);
  CHECK(ok.code == 0);
  gpus["gpus"][0]["vendor"] = "intel";
  data.write("gpus.json", gpus);
  CliRun bad = run_cli("estimate --model flux1-dev --vram 24", /*with_stderr=*/true);
  INFO(bad.out);
  CHECK(bad.code == 2);
  CHECK(bad.out.find("'vendor' expected nvidia or amd, got 'intel'") != std::string::npos);
}
