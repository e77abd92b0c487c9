// A deterministic miniature of the fuzzers (tests/fuzz/) for the normal test run: every prefix of
// a valid file, and the valid file with each byte overwritten, must either parse or throw
// FileFormatError; never another exception, never a crash (the sanitizer builds catch the rest).
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/inspector.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

// Returns "ok", "format" or the unexpected exception's text.
std::string outcome(const std::string& name, const std::string& bytes) {
  MemorySource src(name, bytes.data(), bytes.size());
  try {
    ModelFile f = read_model_file(src);
    summarise(f, json::object()).to_json().dump();
    return "ok";
  } catch (const FileFormatError&) {
    return "format";
  } catch (const std::exception& e) {
    return std::string("unexpected: ") + e.what();
  }
}

void damage_everywhere(const std::string& name, const std::string& good) {
  REQUIRE(outcome(name, good) == "ok");
  std::size_t rejected = 0;
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::string r = outcome(name, good.substr(0, n));
    INFO("prefix of " << n << " bytes");
    REQUIRE(r != "ok");  // every truncation of a file with data is detected
    REQUIRE(r == "format");
    ++rejected;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (unsigned char v : {0x00, 0xFF, 0x7F}) {
      std::string bad = good;
      bad[i] = static_cast<char>(v);
      std::string r = outcome(name, bad);
      INFO("byte " << i << " set to " << int(v));
      REQUIRE((r == "ok" || r == "format"));
    }
  }
  CHECK(rejected == good.size());
}

}  // namespace

TEST_CASE("damage: every truncation and byte overwrite of a safetensors file is handled", "[safetensors][malformed][damage]") {
  auto [h, data] = st_header({{"a.weight", "BF16", {2, 3}}, {"a.scale_weight", "F32", {1}}, {"b", "F8_E4M3", {4}}},
                             json{{"format", "pt"}});
  std::string good = st_prefix(h.dump()) + std::string(static_cast<std::size_t>(data), '\0');
  damage_everywhere("d.safetensors", good);
}

TEST_CASE("damage: every truncation and byte overwrite of a GGUF file is handled", "[gguf][malformed][damage]") {
  Gguf g;
  g.kv_string("general.architecture", "flux").kv_u32("general.alignment", 32).kv_string_array("t", {"x", "yy"});
  g.tensor("q", {32, 2}, Q8_0, 68).tensor("k", {256}, Q4_K, 144).tensor("n", {4}, F32, 16);
  auto [head, total] = g.build();
  std::string good = head + std::string(static_cast<std::size_t>(total - head.size()), '\0');
  damage_everywhere("d.gguf", good);
}
