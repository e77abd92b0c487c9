// Hostile data, round 2 (issue 27, item 4): a value no real model, card or constant can have is refused
// when the data loads, naming the file, the key path, the value and the range, instead of flowing into
// the estimate (a duplicate name, zero GPU memory, negative reserves, a rank of 1e308, peaks of 1e19).
#include <filesystem>
#include <functional>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "support/data_override.hpp"

using nlohmann::json;

namespace {

json& entry_named(json& list, const std::string& name) {
  for (auto& m : list)
    if (m["name"] == name) return m;
  FAIL("no entry " << name);
  throw;
}

// `command` run with the data file `file` changed by `edit`; checks the file's path is named.
CliRun run_with(const std::string& file, const std::function<void(json&)>& edit,
                const std::string& command = "estimate --model flux1-dev --vram 24") {
  support::DataOverride data;
  json j = support::source_data(file);
  edit(j);
  data.write(file, j);
  CliRun r = run_cli(command, /*with_stderr=*/true);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find(data.path(file)) != std::string::npos);
  return r;
}

bool says(const CliRun& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("a second entry with a name the catalog has is refused, not first-wins", "[catalog][data][hostile]") {
  SECTION("a copy of a model with other figures") {
    CliRun r = run_with("models.json", [](json& d) {
      json copy = entry_named(d["models"], "flux1-dev");
      copy["params"] = 1;
      copy["aliases"] = json::array();
      d["models"].push_back(copy);
    });
    INFO(r.out);
    CHECK(says(r, "model 'flux1-dev': the spelling 'flux1-dev' already names model 'flux1-dev'"));
  }
  SECTION("an alias another model already has, spelt differently") {
    CliRun r = run_with("models.json", [](json& d) { entry_named(d["models"], "flux1-schnell")["aliases"].push_back("Flux_Dev"); });
    INFO(r.out);
    CHECK(says(r, "model 'flux1-schnell': the spelling 'Flux_Dev' already names model 'flux1-dev'"));
  }
  SECTION("a GPU listed twice") {
    CliRun r = run_with("gpus.json", [](json& d) { d["gpus"].push_back(d["gpus"][0]); });
    INFO(r.out);
    CHECK(says(r, "already names gpu"));
  }
}

TEST_CASE("figures outside what a real model or card can have are refused with the range", "[catalog][data][hostile]") {
  SECTION("zero GPU memory") {
    CliRun r = run_with("gpus.json", [](json& d) { d["gpus"][0]["memory_bytes"] = 0; });
    INFO(r.out);
    CHECK(says(r, "'memory_bytes' is 0"));
    CHECK(says(r, "outside the range"));
  }
  SECTION("a parameter count of 1e19") {
    CliRun r = run_with("models.json", [](json& d) { entry_named(d["models"], "flux1-dev")["params"] = 1e19; });
    INFO(r.out);
    CHECK(says(r, "model flux1-dev: 'params'"));
  }
  SECTION("a huge activation multiple") {
    CliRun r = run_with("models.json", [](json& d) {
      entry_named(d["models"], "flux1-dev")["activation"]["phases"][0]["hidden_multiple"] = 1e15;
    });
    INFO(r.out);
    CHECK(says(r, "model flux1-dev: 'activation.phases[0].hidden_multiple' is 1e+15, outside the range 0 to 1000"));
  }
  SECTION("a huge ComfyUI memory factor") {
    CliRun r = run_with("models.json", [](json& d) {
      entry_named(d["models"], "flux1-dev")["comfy_memory_usage_factor"]["value"] = 1e12;
    });
    INFO(r.out);
    CHECK(says(r, "'comfy_memory_usage_factor.value' is 1e+12"));
  }
  SECTION("a stride of a million") {
    CliRun r = run_with("models.json", [](json& d) { entry_named(d["models"], "flux-vae")["arch"]["stride"] = {1, 1000000, 8}; });
    INFO(r.out);
    CHECK(says(r, "model flux-vae: 'arch.stride'"));
  }
  SECTION("a precision of a hundredth of a bit") {
    CliRun r = run_with("models.json", [](json& d) { entry_named(d["precisions"], "bf16")["elems_per_block"] = 2000; });
    INFO(r.out);
    CHECK(says(r, "precision bf16: 'bytes_per_block' gives"));
  }
  SECTION("a recognise section with a key list of numbers") {
    CliRun r = run_with("models.json", [](json& d) { entry_named(d["models"], "flux1-dev")["recognise"]["all_keys"] = {1, 2}; });
    INFO(r.out);
    CHECK(says(r, "model flux1-dev: 'recognise.all_keys' expected an array of strings"));
  }
}

TEST_CASE("every runtime constant is checked at load: negative, wrong-typed, missing or unknown", "[catalog][data][hostile]") {
  for (const char* key : {"cuda_context_bytes", "comfy_reserve_bytes_linux", "comfy_reserve_bytes_windows",
                          "allocator_overhead_fraction", "min_lowvram_weights_bytes", "aimdo_headroom_bytes"}) {
    DYNAMIC_SECTION("negative " << key) {
      CliRun r = run_with("models.json", [&](json& d) { d["runtime"][key]["value"] = -1; });
      INFO(r.out);
      CHECK(says(r, std::string("'runtime.") + key + ".value' is -1"));
    }
  }
  SECTION("a string where the value goes") {
    CliRun r = run_with("models.json", [](json& d) { d["runtime"]["tight_margin_fraction"]["value"] = "5%"; });
    INFO(r.out);
    CHECK(says(r, "'runtime.tight_margin_fraction.value' expected a number, got a string \"5%\""));
  }
  SECTION("a fractional stream count") {
    CliRun r = run_with("models.json", [](json& d) { d["runtime"]["offload_streams"]["value"] = 1.5; });
    INFO(r.out);
    CHECK(says(r, "'runtime.offload_streams' is 1.5; expected a whole number"));
  }
  SECTION("a constant left out") {
    CliRun r = run_with("models.json", [](json& d) { d["runtime"].erase("pcie_bytes_per_s"); });
    INFO(r.out);
    CHECK(says(r, "'runtime.pcie_bytes_per_s' is missing"));
  }
  SECTION("a misspelt constant, which would be ignored") {
    CliRun r = run_with("models.json", [](json& d) { d["runtime"]["cuda_contxt_bytes"] = d["runtime"]["cuda_context_bytes"]; });
    INFO(r.out);
    CHECK(says(r, "'runtime.cuda_contxt_bytes' is not a runtime constant Headroom reads"));
  }
}

TEST_CASE("presets.json and llms.json figures are typed and in range", "[plan][llm][data][hostile]") {
  SECTION("a planner frame step of 0") {
    CliRun r = run_with("presets.json", [](json& d) { d["search"]["frames_step"] = 0; }, "models");
    INFO(r.out);
    CHECK(says(r, "'search.frames_step' is 0"));
  }
  SECTION("a resolution scale above 1") {
    CliRun r = run_with("presets.json", [](json& d) { d["search"]["resolution_scales"].push_back(4); }, "models");
    INFO(r.out);
    CHECK(says(r, "'search.resolution_scales' holds 4"));
  }
  SECTION("a preset setting nobody reads") {
    CliRun r = run_with("presets.json", [](json& d) { d["presets"][0]["set"]["decode"] = "sideways"; }, "models");
    INFO(r.out);
    CHECK(says(r, "'presets[0].set.decode' is 'sideways'; expected full or tiled"));
  }
  SECTION("a default LoRA rank of 1e308") {
    CliRun r = run_with("llms.json", [](json& d) { d["training"]["lora_default_rank"] = 1e308; },
                        "train --model llama-3.1-8b --method lora --vram 24");
    INFO(r.out);
    CHECK(says(r, "'training.lora_default_rank' expected an integer"));
  }
  SECTION("an LLM without its layer count") {
    CliRun r = run_with("llms.json", [](json& d) { d["models"][0].erase("layers"); }, "llm --model llama-3.1-8b --context 8192 --vram 24");
    INFO(r.out);
    CHECK(says(r, "'models[0].layers' is missing"));
  }
  SECTION("a negative optimizer state") {
    CliRun r = run_with("llms.json", [](json& d) { d["training"]["optimizer_state_bytes"]["adamw"]["bytes"] = -8; },
                        "train --model llama-3.1-8b --method full --vram 24");
    INFO(r.out);
    CHECK(says(r, "'training.optimizer_state_bytes.adamw.bytes' is -8"));
  }
}

TEST_CASE("a data override that cannot be read is an error, never the built-in copy", "[catalog][data][hostile]") {
  SECTION("a dangling link") {
    support::DataOverride data;
    std::filesystem::create_symlink(data.path("gone.json"), data.path("models.json"));
    CliRun r = run_cli("estimate --model flux1-dev --vram 24", /*with_stderr=*/true);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(says(r, data.path("models.json")));
  }
  SECTION("a folder that does not exist") {
    support::DataOverride data;
    setenv("HEADROOM_DATA_DIR", (data.path("no-such-folder")).c_str(), 1);
    CliRun r = run_cli("estimate --model flux1-dev --vram 24", /*with_stderr=*/true);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(says(r, "HEADROOM_DATA_DIR is '" + data.path("no-such-folder") + "', which is not a folder"));
  }
}
