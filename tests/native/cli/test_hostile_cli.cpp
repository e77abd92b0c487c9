// CLI messages for out-of-range input (issue 13, item 17): each names the flag the user typed,
// the value and the fix, and exits 2. Before: `--vram 10000000000GiB` planned against a 2^63-byte
// card (llround overflowed) or reported the request field vram_bytes; `--free 0` said "expected a
// whole number from 1 to 1125899906842624"; `--cfg 0x10` ran with cfg 16; 1e400 in a workflow
// exited 3 "internal error"; a bad literal width was "computed by other nodes".
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"
#include "hostile.hpp"

using namespace headroom;

namespace {

const std::string kFlux = std::string(HEADROOM_SHARED_DIR) + "/real-workflows/flux_schnell.json";

}  // namespace

TEST_CASE("sizes past 1 PiB are refused, never rounded through an overflow", "[hostile][cli]") {
  for (const char* cmd : {"plan '%W' --vram 10000000000GiB", "estimate --model flux1-dev --vram 10000000000GiB",
                          "plan '%W' --vram 2000TiB", "estimate --model flux1-dev --free 99999999999999999999"}) {
    std::string args = cmd;
    if (auto at = args.find("%W"); at != std::string::npos) args.replace(at, 2, kFlux);
    INFO(args);
    CliRun r = hostile::run_limited(args, 10, 256);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("more than 1 PiB"));
    CHECK_THAT(r.out, Catch::Contains("--vram") || Catch::Contains("--free"));
    CHECK_THAT(r.out, !Catch::Contains("vram_bytes") && !Catch::Contains("9223372036854775808"));
  }
  CHECK(parse_size("1024TiB", "x") == kMaxMemoryBytes);
  CHECK_THROWS_WITH(parse_size("1025TiB", "x"), Catch::Contains("more than 1 PiB"));
  CHECK_THROWS_AS(parse_size("1e30", "x"), InputError);
}

TEST_CASE("a zero size names the flag and a size to give", "[hostile][cli]") {
  for (const char* args : {"estimate --model flux1-dev --free 0", "plan '%W' --free 0", "plan '%W' --vram 0",
                           "llm --model llama-3.1-8b --context 1000 --vram 0"}) {
    std::string a = args;
    if (auto at = a.find("%W"); at != std::string::npos) a.replace(at, 2, kFlux);
    INFO(a);
    CliRun r = hostile::run_limited(a, 10, 256);
    INFO(r.out);
    CHECK(r.code == 2);
    // The flag's own words (the table's range as a size), not the request field's bytes.
    CHECK_THAT(r.out, Catch::Contains("must be more than 0") || Catch::Contains("expected a size from"));
    CHECK_THAT(r.out, !Catch::Contains("whole number from 1") && !Catch::Contains("free_bytes"));
  }
}

TEST_CASE("request fields in plan errors are named by their flags", "[hostile][cli]") {
  CliRun r = hostile::run_limited("plan '" + kFlux + "' --vram 8 --free 20", 10, 256);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--free: is more than the card's memory"));
}

TEST_CASE("decimal numbers only: hex, inf and nan are refused", "[hostile][cli]") {
  for (const char* v : {"0x10", "inf", "nan", "1e400", "-", "", "1.5.5", "0x1p4"}) {
    INFO(v);
    CliRun r = hostile::run_limited(std::string("estimate --model flux1-dev --cfg '") + v + "'", 10, 256);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("--cfg: expected a decimal number"));
  }
  for (const char* v : {"0x10", "inf", "nan", " 8"}) {  // numbers the llm and train requests take as text
    INFO(v);
    CliRun r = hostile::run_limited(std::string("llm --params '") + v + "' --layers 32 --kv-heads 8 --head-dim 128 --context 1000", 10, 256);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("--params: expected a decimal number") || Catch::Contains("--params: must be from"));
  }
  CliRun ok = hostile::run_limited("estimate --model flux1-dev --cfg 3.5 --json", 10, 256);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("\"cfg\": 3.5"));
}

TEST_CASE("a bad literal width is reported as bad, not as computed", "[hostile][cli]") {
  hostile::Dir dir;
  const std::pair<const char*, const char*> cases[] = {
      {R"("abc")", R"(width is "abc")"}, {"-64", "width is -64"}, {"0", "width is 0"}, {"512.5", "width is 512.5"}};
  for (const auto& [value, message] : cases) {
    INFO(value);
    hostile::write_file(dir.file("w.json"),
                        std::string(R"({"nodes":[{"id":1,"type":"UNETLoader","widgets_values":["flux1-dev.safetensors","default"]},)"
                                    R"({"id":2,"type":"EmptyLatentImage","widgets_values":[)") +
                            value + R"(,1024,1]}]})");
    CliRun r = hostile::run_limited("plan '" + dir.file("w.json") + "' --gpu 4090", 10, 256);
    INFO(r.out);
    CHECK_THAT(r.out, Catch::Contains(std::string("EmptyLatentImage #2: ") + message +
                                      ", expected a whole number of pixels from 16 to 16384"));
    CHECK_THAT(r.out, !Catch::Contains("computed by other nodes"));
  }
  // A width that really is computed (linked in API format) keeps its own message.
  hostile::write_file(dir.file("linked.json"),
                      R"({"1":{"class_type":"UNETLoader","inputs":{"unet_name":"flux1-dev.safetensors","weight_dtype":"default"}},
                          "2":{"class_type":"EmptyLatentImage","inputs":{"width":["3",0],"height":1024,"batch_size":1}},
                          "3":{"class_type":"SimpleMath+","inputs":{"value":"a*2","a":512}}})");
  CliRun r = hostile::run_limited("plan '" + dir.file("linked.json") + "' --gpu 4090", 10, 256);
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("width/height are computed by other nodes"));
  // A PrimitiveInt passes its value on: that value is the width that runs.
  hostile::write_file(dir.file("primitive.json"),
                      R"({"1":{"class_type":"UNETLoader","inputs":{"unet_name":"flux1-dev.safetensors","weight_dtype":"default"}},
                          "2":{"class_type":"EmptyLatentImage","inputs":{"width":["3",0],"height":1024,"batch_size":1}},
                          "3":{"class_type":"PrimitiveInt","inputs":{"value":768}}})");
  CliRun p = hostile::run_limited("plan '" + dir.file("primitive.json") + "' --gpu 4090", 10, 256);
  INFO(p.out);
  CHECK_THAT(p.out, Catch::Contains("768x1024"));
}

TEST_CASE("1e400 in a workflow is bad input (2), not an internal error", "[hostile][cli]") {
  hostile::Dir dir;
  hostile::write_file(dir.file("n.json"), R"({"nodes":[{"id":1,"type":"KSampler","widgets_values":[1,"fixed",20,1e400]}]})");
  CliRun r = hostile::run_limited("plan '" + dir.file("n.json") + "'", 10, 256);
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("n.json: not valid JSON") && Catch::Contains("1e400"));
}
