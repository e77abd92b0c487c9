// The safetensors header reader on files the tests write: good ones, and each kind of damage.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/safetensors_header.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

SafetensorsHeader parse_bytes(const std::string& bytes) {
  MemorySource src("mem.safetensors", bytes.data(), bytes.size());
  return read_safetensors_header(src);
}

// Whole file in memory: prefix + header + zero data.
std::string st_file(const json& header, std::uint64_t data_bytes) {
  std::string s = st_prefix(header.dump());
  s.append(static_cast<std::size_t>(data_bytes), '\0');
  return s;
}

std::string error_of(const std::string& bytes) {
  try {
    parse_bytes(bytes);
  } catch (const FileFormatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("safetensors: a bf16 file reads dtype, shape, offsets and metadata", "[safetensors]") {
  TempDir dir;
  auto path = dir.file("m.safetensors");
  write_safetensors(path, {{"a.weight", "BF16", {4, 8}}, {"a.bias", "F32", {4}}}, json{{"format", "pt"}});
  FileSource src(path);
  auto h = read_safetensors_header(src);
  REQUIRE(h.tensors.size() == 2);
  // Sorted by name: a.bias then a.weight.
  CHECK(h.tensors[0].name == "a.bias");
  CHECK(h.tensors[0].dtype == "F32");
  CHECK(h.tensors[1].shape == std::vector<std::uint64_t>{4, 8});
  CHECK(h.tensors[1].elements == 32);
  // 4*8 bf16 = 64 bytes, 4 fp32 = 16 bytes: 80 bytes of data in all (computed by hand).
  CHECK(h.data_bytes == 80);
  CHECK(h.metadata["format"] == "pt");
}

TEST_CASE("safetensors: zero-size tensors and padded headers are accepted", "[safetensors]") {
  auto [h, data] = st_header({{"empty", "F16", {0, 3}}, {"x", "U8", {5}}});
  std::string text = h.dump() + "        ";  // writers pad with spaces for alignment
  std::string bytes = st_prefix(text) + std::string(static_cast<std::size_t>(data), '\0');
  auto parsed = parse_bytes(bytes);
  CHECK(parsed.tensors.size() == 2);
  CHECK(parsed.tensors[0].elements == 0);
}

TEST_CASE("safetensors: every damaged file gets a FileFormatError naming the problem", "[safetensors][malformed]") {
  auto [good, data] = st_header({{"w", "BF16", {2, 2}}});
  SECTION("file shorter than the length prefix") { CHECK_THAT(error_of("abc"), Catch::Contains("truncated")); }
  SECTION("header length past the end") {
    std::string s;
    put_le(s, 1000, 8);
    s += "{}";
    CHECK_THAT(error_of(s), Catch::Contains("past the end"));
  }
  SECTION("header length over the cap is refused before allocating") {
    std::string s;
    put_le(s, 0xFFFFFFFFFFFFull, 8);
    CHECK_THAT(error_of(s), Catch::Contains("limit"));
  }
  SECTION("truncated data section") {
    std::string s = st_file(good, data - 1);
    CHECK_THAT(error_of(s), Catch::Contains("data section holds only 7 bytes"));
  }
  SECTION("invalid JSON") { CHECK_THAT(error_of(st_prefix("{\"w\": {")), Catch::Contains("not valid JSON")); }
  SECTION("a number too large for JSON (found by fuzzing)") {
    CHECK_THAT(error_of(st_prefix("{\"w\": {\"shape\": [33333333333333333e333]}}")), Catch::Contains("not valid JSON"));
  }
  SECTION("header is not an object") { CHECK_THAT(error_of(st_prefix("[1,2]")), Catch::Contains("expected a JSON object")); }
  SECTION("absurd nesting") {
    std::string deep(100, '[');
    CHECK_THAT(error_of(st_prefix("{\"w\": " + deep + std::string(100, ']') + "}")), Catch::Contains("nests deeper"));
  }
  SECTION("a name twice") {
    // Before, the second entry silently replaced the first.
    const std::string text = "{\"w\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]},"
                             " \"w\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [2, 6]}}";
    CHECK_THAT(error_of(st_prefix(text) + std::string(6, '\0')), Catch::Contains("tensor 'w' appears twice"));
  }
  SECTION("tensor entry not an object") {
    CHECK_THAT(error_of(st_file(json{{"w", 5}}, 0)), Catch::Contains("tensor 'w': expected an object"));
  }
  SECTION("missing dtype") {
    json h = good;
    h["w"].erase("dtype");
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("\"dtype\""));
  }
  SECTION("dtype of the wrong type") {
    json h = good;
    h["w"]["dtype"] = 7;
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("\"dtype\""));
  }
  SECTION("unknown dtype") {
    json h = good;
    h["w"]["dtype"] = "F12";
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("unknown dtype 'F12'"));
  }
  SECTION("missing shape") {
    json h = good;
    h["w"].erase("shape");
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("\"shape\""));
  }
  SECTION("negative dimension") {
    json h = good;
    h["w"]["shape"] = {-2, 2};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("non-negative whole number"));
  }
  SECTION("shape that overflows 64 bits") {
    json h = good;
    h["w"]["shape"] = {1ull << 40, 1ull << 40};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("overflows"));
  }
  SECTION("data_offsets missing or ill-typed") {
    json h = good;
    h["w"]["data_offsets"] = {0};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("data_offsets"));
    h["w"]["data_offsets"] = {"0", "8"};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("data_offsets"));
  }
  SECTION("offsets that end before they begin") {
    json h = good;
    h["w"]["data_offsets"] = {8, 0};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("end before they begin"));
  }
  SECTION("offsets out of range") {
    json h = good;
    h["w"]["data_offsets"] = {0, 800};
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("data section holds only 8 bytes"));
  }
  SECTION("offsets that disagree with shape x dtype") {
    json h = good;
    h["w"]["shape"] = {2, 3};  // 12 bytes of bf16, offsets span 8
    CHECK_THAT(error_of(st_file(h, 16)), Catch::Contains("needs 12 bytes, but data_offsets span 8"));
  }
  SECTION("overlapping tensors") {
    json h = {{"a", {{"dtype", "U8"}, {"shape", {8}}, {"data_offsets", {0, 8}}}},
              {"b", {{"dtype", "U8"}, {"shape", {8}}, {"data_offsets", {4, 12}}}}};
    CHECK_THAT(error_of(st_file(h, 12)), Catch::Contains("overlap"));
  }
  SECTION("metadata that is not an object") {
    json h = good;
    h["__metadata__"] = "x";
    CHECK_THAT(error_of(st_file(h, data)), Catch::Contains("__metadata__"));
  }
}

TEST_CASE("safetensors: error messages name the file", "[safetensors][malformed]") {
  TempDir dir;
  auto path = dir.file("broken.safetensors");
  write_file(path, "xy");
  FileSource src(path);
  try {
    read_safetensors_header(src);
    FAIL("no error");
  } catch (const FileFormatError& e) {
    CHECK(e.path() == path);
    CHECK_THAT(std::string(e.what()), Catch::StartsWith(path + ": truncated"));
  }
}
