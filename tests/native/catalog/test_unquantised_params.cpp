// models.json "unquantised_params": the weights an official quantised release keeps in 16 bit (GPT-OSS-20B's nvfp4
// file keeps attention, routers and the embedding in bf16). A quantised precision prices them at 2 bytes and the rest
// at its own width; a 16-bit precision is unchanged; a figure not below params fails at load naming the key.
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/base/data_files.hpp"
#include "core/catalog/catalog.hpp"
#include "support/data_override.hpp"

using namespace headroom;
using nlohmann::json;

TEST_CASE("a quantised precision prices the unquantised weights at 2 bytes", "[catalog][data]") {
  const ModelInfo& m = resolve_model("gpt-oss-20b");
  const json* entry = nullptr;
  for (const auto& e : data_file("models.json")["models"])
    if (e["name"] == "gpt-oss-20b") entry = &e;
  REQUIRE(entry);
  const std::uint64_t keep = (*entry)["unquantised_params"].get<std::uint64_t>();
  REQUIRE(m.unquantised_params == keep);
  const PrecisionInfo& nvfp4 = *find_precision("nvfp4");
  const PrecisionInfo& bf16 = *find_precision("bf16");
  CHECK(weight_bytes(m, nvfp4) == nvfp4.bytes_for(m.params - keep) + 2 * keep);
  CHECK(weight_bytes(m, nvfp4) > nvfp4.bytes_for(m.params));
  CHECK(weight_bytes(m, bf16) == bf16.bytes_for(m.params));
  // A model without the figure takes its precision for every weight.
  const ModelInfo& lens = resolve_model("lens");
  CHECK(lens.unquantised_params == 0);
  CHECK(weight_bytes(lens, nvfp4) == nvfp4.bytes_for(lens.params));
}

TEST_CASE("unquantised_params not below params fails at load naming the key", "[catalog][data]") {
  support::DataOverride data;
  json models = support::source_data("models.json");
  for (auto& e : models["models"])
    if (e["name"] == "gpt-oss-20b") e["unquantised_params"] = e["params"];
  data.write("models.json", models);
  CliRun r = run_cli("estimate --model gpt-oss-20b --vram 24", /*with_stderr=*/true);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find("model gpt-oss-20b: 'unquantised_params' expected fewer weights than params") != std::string::npos);
}
