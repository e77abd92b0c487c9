// `headroom explain --app/--os/--loader` (issue 22): the flags become the caller's context line of
// oom_parse.hpp, and a value the parser would ignore is refused with what was expected.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"

using nlohmann::json;

TEST_CASE("oom: explain --app/--os/--loader add the context, and a wrong value is an error") {
  const std::string path = "/tmp/headroom-test-explain-app-" + std::to_string(::getpid()) + ".txt";
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  // A bare PyTorch message (its wording), as the toast would see it.
  const std::string text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                           "capacity of 12.00 GiB of which 120.00 MiB is free.";
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);

  CliRun comfy = run_cli("explain '" + path + "' --app comfyui --os linux --loader dynamic --json", false);
  CHECK(comfy.code == 0);
  json c = json::parse(comfy.out);
  CHECK(c["app"] == "comfyui");
  CHECK(c["os"] == "linux");
  CHECK(c["extra"]["comfy_dynamic_vram"] == true);
  CHECK(c == headroom::api::explain(text + "\nheadroom-context: app=comfyui os=linux loader=dynamic\n"));

  CliRun plain = run_cli("explain '" + path + "' --json", false);
  CHECK(plain.code == 0);
  CHECK(json::parse(plain.out)["app"].is_null());

  CliRun table = run_cli("explain '" + path + "' --app comfyui", false);
  CHECK(table.code == 0);
  CHECK(table.out.rfind("Memory failure: pytorch on cuda, GPU 0 (comfyui)", 0) == 0);

  CliRun bad = run_cli("explain '" + path + "' --app comfy", true);
  CHECK(bad.code == 2);
  CHECK(bad.out.find("--app") != std::string::npos);
  CHECK(bad.out.find("comfyui") != std::string::npos);  // what was expected
  CHECK(bad.out.find("'comfy'") != std::string::npos);  // and what came
  std::remove(path.c_str());
}
