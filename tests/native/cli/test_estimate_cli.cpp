// `headroom estimate` and `headroom models` as a user runs them (the built CLI, HEADROOM_CLI).

#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

using Run = CliRun;

Run cli(const std::string& args) { return run_cli(args, /*with_stderr=*/true); }

// Exit status 2 with `text` in the message.
bool bad_input_saying(const std::string& args, const std::string& text) {
  Run r = cli(args);
  INFO(args << ": " << r.out);
  return r.code == 2 && r.out.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("estimate --json prints one object with the promised keys", "[cli][estimate]") {
  Run r = cli("estimate --model flux-dev --precision fp8_e4m3fn --width 1024 --height 1024 --gpu 4090 --json");
  REQUIRE(r.code == 0);
  json j = json::parse(r.out);
  CHECK(j["peak_bytes"].get<std::uint64_t>() > 10'000'000'000ull);
  CHECK(j["peak_stage"] == "sample");
  CHECK(j["verdict"] == "fits");
  REQUIRE(j["stages"].is_array());
  for (const auto& s : j["stages"]) {
    CHECK(s.contains("name"));
    CHECK(s["peak_bytes"].is_number_unsigned());
    CHECK(s["breakdown"].is_object());
  }
  CHECK(j["job"]["diffusion"]["model"] == "flux1-dev");
  CHECK(j["job"]["diffusion"]["precision"] == "fp8_e4m3fn");
}

TEST_CASE("estimate exit codes: 1 does not fit, 2 bad input naming the flag, 3 a model not covered", "[cli][estimate]") {
  Run too_big = cli("estimate --model flux1-dev --width 4096 --height 4096 --vram 8 --json");
  CHECK(too_big.code == 1);
  CHECK(json::parse(too_big.out)["verdict"] == "does not fit");

  Run bad = cli("estimate --model flux1-dev --width 0");
  CHECK(bad.code == 2);
  CHECK(bad.out.find("--width") != std::string::npos);

  Run gguf_vae = cli("estimate --model flux-vae --precision gguf-q8_0");
  CHECK(gguf_vae.code == 2);
  CHECK(gguf_vae.out.find("--precision") != std::string::npos);

  // A model the catalog does not have is valid input Headroom does not cover (3), not bad input: a
  // script can tell it from a typo in a flag. The message still lists the close names.
  Run unknown = cli("estimate --model flux3-pro");
  CHECK(unknown.code == 3);
  CHECK(unknown.out.find("flux1-") != std::string::npos);  // lists close names
  Run unknown_json = run_cli("estimate --model flux3-pro --json", /*with_stderr=*/false);
  CHECK(unknown_json.code == 3);
  json uj = json::parse(unknown_json.out);
  CHECK(uj["verdict"] == "unknown");
  CHECK(uj["not_covered"]["kind"] == "model");
  CHECK(uj["not_covered"]["model"] == "flux3-pro");
  CHECK(uj["reason"].get<std::string>().find("unknown model 'flux3-pro'") != std::string::npos);
  // A part of several names and a blank name are still bad input.
  Run ambiguous = cli("estimate --model klein");
  CHECK(ambiguous.code == 2);
  CHECK(ambiguous.out.find("matches several models") != std::string::npos);
  CHECK(cli("estimate --model ' '").code == 2);

  Run both = cli("estimate --model flux1-dev --gpu 4090 --vram 24");
  CHECK(both.code == 2);
}

TEST_CASE("estimate prints a table without --json; models lists the catalog", "[cli][estimate]") {
  Run t = cli("estimate --model wan2.2-t2v-a14b --precision fp8_scaled --gpu 4090");
  CHECK(t.code == 0);
  CHECK(t.out.find("vae_decode") != std::string::npos);
  CHECK(t.out.find("verdict:") != std::string::npos);

  Run m = cli("models");
  CHECK(m.code == 0);
  CHECK(m.out.find("wan2.2-ti2v-5b") != std::string::npos);
  CHECK(m.out.find("gguf-q4_k") != std::string::npos);
  CHECK(m.out.find("H100 80GB") != std::string::npos);

  Run mj = cli("models --json");
  REQUIRE(mj.code == 0);
  // Every catalog entry, as many as models.json holds.
  CHECK(json::parse(mj.out)["models"].size() == headroom::data_file("models.json")["models"].size());
}

// The help is generated from the field table: every command-line form of every field is in it.
TEST_CASE("estimate --help lists every flag of the estimate table", "[cli][estimate][schema]") {
  Run h = cli("estimate --help");
  REQUIRE(h.code == 0);
  for (const auto& f : headroom::api::estimate_fields()) {
    std::string_view forms = f.flags;
    while (!forms.empty()) {
      const std::size_t bar = forms.find('|');
      std::string_view form = forms.substr(0, bar);
      form = form.substr(0, std::min(form.find(':'), form.find('=')));
      INFO(f.key << " --" << form);
      CHECK(h.out.find("  --" + std::string(form) + " ") != std::string::npos);
      if (bar == std::string_view::npos) break;
      forms.remove_prefix(bar + 1);
    }
  }
}

// The CLI and the core take one range: the core's 0 (choose the tile) is a valid --tile too, and a
// value the core refuses is refused naming the flag.
TEST_CASE("estimate takes the core's ranges: --tile 0 chooses, --tile 32 is refused naming --tile", "[cli][estimate]") {
  Run zero = run_cli("estimate --model flux1-dev --vram 12 --decode tiled --tile 0 --json", /*with_stderr=*/false);
  CHECK(zero.code != 2);
  CHECK(bad_input_saying("estimate --model flux1-dev --tile 32", "--tile"));
  // Two spellings of one setting that agree are one setting; that disagree are bad input naming both.
  CHECK(cli("estimate --model flux1-dev --vram 24 --windows --os windows").code == 0);
  CHECK(bad_input_saying("estimate --model flux1-dev --vram 24 --windows --os linux", "--os linux"));
}
