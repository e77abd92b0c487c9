// The GGUF header reader on files the tests write: good v2/v3 files, block sizes, and damage.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/gguf_header.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

GgufHeader parse(const Gguf& g) {
  auto [head, total] = g.build();
  std::string bytes = head + std::string(static_cast<std::size_t>(total - head.size()), '\0');
  MemorySource src("mem.gguf", bytes.data(), bytes.size());
  return read_gguf_header(src);
}

std::string error_of_bytes(const std::string& bytes) {
  MemorySource src("mem.gguf", bytes.data(), bytes.size());
  try {
    read_gguf_header(src);
  } catch (const FileFormatError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of(const Gguf& g) {
  auto [head, total] = g.build();
  return error_of_bytes(head + std::string(static_cast<std::size_t>(total - head.size()), '\0'));
}

}  // namespace

TEST_CASE("gguf: block layouts match ggml's published sizes", "[gguf]") {
  // Bytes per block / weights per block from the block_* structs of ggml/src/ggml-common.h:
  // Q8_0 = fp16 d + 32 int8 (34/32); Q4_0 = fp16 d + 16 bytes of nibbles (18/32); Q4_1 adds fp16 m (20/32);
  // Q5_0 = d + 4 bytes high bits + 16 (22/32); Q5_1 adds m (24/32); Q2_K 84/256, Q3_K 110/256,
  // Q4_K 144/256, Q5_K 176/256, Q6_K 210/256 (QK_K = 256 super-blocks).
  struct Golden { std::uint32_t id; std::uint32_t block; std::uint32_t bytes; const char* name; };
  const Golden golden[] = {{F32, 1, 4, "f32"},      {F16, 1, 2, "f16"},      {BF16, 1, 2, "bf16"},
                           {Q8_0, 32, 34, "q8_0"},  {Q4_0, 32, 18, "q4_0"},  {Q4_1, 32, 20, "q4_1"},
                           {Q5_0, 32, 22, "q5_0"},  {Q5_1, 32, 24, "q5_1"},  {Q2_K, 256, 84, "q2_k"},
                           {Q3_K, 256, 110, "q3_k"}, {Q4_K, 256, 144, "q4_k"}, {Q5_K, 256, 176, "q5_k"},
                           {Q6_K, 256, 210, "q6_k"}};
  for (const auto& g : golden) {
    INFO(g.name);
    const GgmlType* t = ggml_type(g.id);
    REQUIRE(t != nullptr);
    CHECK(t->block_elements == g.block);
    CHECK(t->block_bytes == g.bytes);
    CHECK(std::string(t->name) == g.name);
  }
  CHECK(ggml_type(4) == nullptr);   // Q4_2, retired from ggml
  CHECK(ggml_type(999) == nullptr);
}

TEST_CASE("gguf: a v3 file with Q8_0, Q4_K and F16 tensors and metadata", "[gguf]") {
  Gguf g(3);
  g.kv_string("general.architecture", "flux")
      .kv_u32("general.quantization_version", 2)
      .kv_f32("test.scale", 0.5f)
      .kv_string_array("tokenizer.tokens", {"a", "bb", "ccc"});
  // Sizes computed by hand from the layouts above.
  g.tensor("blk.q8", {64, 4}, Q8_0, 64 * 4 / 32 * 34)    // 272 bytes
      .tensor("blk.q4k", {512, 3}, Q4_K, 512 * 3 / 256 * 144)  // 864 bytes
      .tensor("norm", {8, 4}, F16, 8 * 4 * 2);                // 64 bytes
  auto h = parse(g);
  CHECK(h.version == 3);
  CHECK(h.alignment == 32);
  REQUIRE(h.tensors.size() == 3);
  CHECK(h.tensors[0].bytes == 272);
  CHECK(h.tensors[0].elements == 256);
  CHECK(h.tensors[1].bytes == 864);
  CHECK(h.tensors[1].shape() == std::vector<std::uint64_t>{3, 512});  // PyTorch order
  CHECK(h.tensors[2].bytes == 64);
  CHECK(std::string(h.tensors[2].type->name) == "f16");
  CHECK(h.metadata["general.architecture"] == "flux");
  CHECK(h.metadata["general.quantization_version"] == 2);
  CHECK(h.metadata["test.scale"].get<double>() == 0.5);
  CHECK(h.metadata["tokenizer.tokens"]["length"] == 3);
  CHECK(h.metadata["tokenizer.tokens"]["values"][2] == "ccc");
  CHECK(h.data_offset % 32 == 0);
}

TEST_CASE("gguf: v2 files and a custom general.alignment", "[gguf]") {
  Gguf g(2, 64);
  g.kv_u32("general.alignment", 64).tensor("w", {32}, Q8_0, 34).tensor("v", {32}, Q8_0, 34);
  auto h = parse(g);
  CHECK(h.version == 2);
  CHECK(h.alignment == 64);
  CHECK(h.tensors[1].offset == 64);
  CHECK(h.data_offset % 64 == 0);
}

TEST_CASE("gguf: every damaged file gets a FileFormatError naming the problem", "[gguf][malformed]") {
  SECTION("wrong magic") { CHECK_THAT(error_of_bytes("GGML\3\0\0\0"), Catch::Contains("expected the magic 'GGUF'")); }
  SECTION("too short for the magic") { CHECK_THAT(error_of_bytes("GG"), Catch::Contains("truncated")); }
  SECTION("unsupported versions") {
    CHECK_THAT(error_of(Gguf(1)), Catch::Contains("version 1 is not supported"));
    CHECK_THAT(error_of(Gguf(4)), Catch::Contains("unsupported GGUF version 4"));
    CHECK_THAT(error_of(Gguf(0x03000000)), Catch::Contains("big-endian"));
  }
  SECTION("truncated inside the counts") { CHECK_THAT(error_of_bytes(std::string("GGUF\3\0\0\0\1\0", 10)), Catch::Contains("truncated")); }
  SECTION("absurd tensor count") {
    Gguf g;
    auto [head, total] = g.build(1ull << 40);
    CHECK_THAT(error_of_bytes(head), Catch::Contains("tensor count 1099511627776 is absurd"));
  }
  SECTION("absurd metadata count") {
    std::string s = "GGUF";
    put_le(s, 3, 4);
    put_le(s, 0, 8);
    put_le(s, 1ull << 50, 8);
    CHECK_THAT(error_of_bytes(s), Catch::Contains("metadata count"));
  }
  SECTION("string length past the end") {
    std::string s = "GGUF";
    put_le(s, 3, 4);
    put_le(s, 0, 8);
    put_le(s, 1, 8);
    put_le(s, 1000, 8);  // key length
    s += "short";
    CHECK_THAT(error_of_bytes(s), Catch::Contains("goes past the end"));
  }
  SECTION("string length over the cap") {
    std::string value;
    put_le(value, 1ull << 62, 8);
    Gguf g;
    g.kv_raw("k", 8, value);
    CHECK_THAT(error_of(g), Catch::Contains("over the limit"));
  }
  SECTION("array longer than the file") {
    std::string value;
    put_le(value, 4, 4);  // uint32 elements
    put_le(value, 1ull << 40, 8);
    Gguf g;
    g.kv_raw("k", 9, value);
    CHECK_THAT(error_of(g), Catch::Contains("cannot fit"));
  }
  SECTION("unknown value type") {
    Gguf g;
    g.kv_raw("k", 77, "");
    CHECK_THAT(error_of(g), Catch::Contains("unknown value type 77"));
  }
  SECTION("duplicate key") {
    Gguf g;
    g.kv_u32("k", 1).kv_u32("k", 2);
    CHECK_THAT(error_of(g), Catch::Contains("appears twice"));
  }
  SECTION("bad alignment") {
    Gguf g;
    g.kv_u32("general.alignment", 48);
    CHECK_THAT(error_of(g), Catch::Contains("power of two"));
  }
  SECTION("too many dimensions") {
    Gguf g;
    g.tensor("w", {1, 1, 1, 1, 1}, F32, 4);
    CHECK_THAT(error_of(g), Catch::Contains("5 dimensions"));
  }
  SECTION("dimensions that overflow") {
    Gguf g;
    g.tensor("w", {1ull << 40, 1ull << 40}, F32, 4);
    CHECK_THAT(error_of(g), Catch::Contains("overflow"));
  }
  SECTION("unknown ggml type names the tensor") {
    Gguf g;
    g.tensor("blk.0.w", {32}, 31, 18);
    CHECK_THAT(error_of(g), Catch::Contains("tensor 'blk.0.w': unknown ggml type 31"));
  }
  SECTION("first dimension not a whole number of blocks") {
    Gguf g;
    g.tensor("w", {100}, Q4_K, 144);
    CHECK_THAT(error_of(g), Catch::Contains("not a multiple of the q4_k block of 256"));
  }
  SECTION("misaligned offset") {
    Gguf g;
    g.tensor("w", {32}, Q8_0, 34);
    g.infos()[0].offset = 3;
    CHECK_THAT(error_of(g), Catch::Contains("not a multiple of the 32-byte alignment"));
  }
  SECTION("tensor data past the end (truncated download)") {
    Gguf g;
    g.tensor("w", {64, 64}, F16, 8192);
    auto [head, total] = g.build();
    std::string bytes = head + std::string(100, '\0');
    CHECK_THAT(error_of_bytes(bytes), Catch::Contains("go past the end of the file"));
  }
  SECTION("overlapping tensors") {
    Gguf g;
    g.tensor("a", {64}, F32, 256).tensor("b", {64}, F32, 256);
    g.infos()[1].offset = 128;
    CHECK_THAT(error_of(g), Catch::Contains("overlap"));
  }
  SECTION("duplicate tensor name") {
    Gguf g;
    g.tensor("a", {8}, F32, 32).tensor("a", {8}, F32, 32);
    CHECK_THAT(error_of(g), Catch::Contains("appears twice"));
  }
  SECTION("arrays nested too deep") {
    std::string v;
    for (int i = 0; i < 6; ++i) {
      put_le(v, 9, 4);
      put_le(v, 1, 8);
    }
    Gguf g;
    g.kv_raw("k", 9, v);
    CHECK_THAT(error_of(g), Catch::Contains("nested deeper"));
  }
}

TEST_CASE("gguf: invalid UTF-8 in names becomes printable JSON", "[gguf]") {
  Gguf g;
  g.kv_string("bad\xff" "key", "val\xc3");
  auto h = parse(g);
  CHECK(h.metadata.contains("bad?key"));
  CHECK(h.metadata["bad?key"] == "val?");
  CHECK_NOTHROW(h.metadata.dump());
}
