#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

using namespace headroom;

TEST_CASE("parse_size accepts decimal and binary units") {
  CHECK(parse_size("6GiB", "budget") == 6ull * 1024 * 1024 * 1024);
  CHECK(parse_size("6000MB", "budget") == 6000000000ull);
  CHECK(parse_size("24", "vram") == 24ull * GiB);
  CHECK(parse_size("1.5 gib", "vram") == 3ull * GiB / 2);
  CHECK(parse_size("512", "x", 1) == 512);
}

TEST_CASE("parse_size rejects garbage and names the field") {
  CHECK_THROWS_AS(parse_size("", "budget"), InputError);
  CHECK_THROWS_AS(parse_size("-3GB", "budget"), InputError);
  CHECK_THROWS_AS(parse_size("12 parsecs", "budget"), InputError);
  CHECK_THROWS_AS(parse_size("1e30GB", "budget"), InputError);
  try {
    parse_size("lots", "--budget");
    FAIL("no throw");
  } catch (const InputError& e) {
    CHECK(e.field() == "--budget");
    CHECK(std::string(e.what()).find("lots") != std::string::npos);
  }
}

TEST_CASE("format_bytes picks a readable unit") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(3 * MiB / 2) == "1.5 MiB");
  CHECK(format_bytes(24 * GiB) == "24.00 GiB");
}

TEST_CASE("embedded data files parse") {
  for (const char* name : {"models.json", "gpus.json", "presets.json"}) {
    INFO(name);
    CHECK(data_file(name).is_object());
  }
  CHECK_THROWS_AS(data_file("no-such-file.json"), Error);
}
