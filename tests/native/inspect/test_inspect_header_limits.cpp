// What one header may cost (issue 27, item 5): a safetensors header of a million tiny tensors took
// 5.5 s and 875 MB (the whole header as one JSON document, then copies of it); one past the tensor
// limit is now refused when the parser reaches it, and a file that splits into more checkpoint parts
// than any bundle has is refused before each part is summarised. Linux-only (forked children under
// rlimits, hostile.hpp).
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/inspect/inspector.hpp"
#include "core/inspect/safetensors_header.hpp"
#include "hostile.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

// `n` one-element F32 tensors named prefix0.w, prefix1.w, ... with consecutive offsets, as file bytes.
void write_tiny_tensors(const std::string& path, std::uint64_t n, const std::string& prefix = "t") {
  std::string text = "{";
  text.reserve(static_cast<std::size_t>(n) * 64);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (i) text += ',';
    text += "\"" + prefix + std::to_string(i) + ".w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
            std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  }
  text += "}";
  const std::string head = st_prefix(text);
  write_file(path, head, head.size() + 4 * n);
}

}  // namespace

TEST_CASE("a header of a million tensors is refused at the limit, in bounded time and memory", "[inspect][hostile][limits]") {
  TempDir dir;
  const std::string path = dir.file("million.safetensors");
  write_tiny_tensors(path, 1000000);
  // Before: about 850 MB resident while the whole header existed as JSON: over this limit, bad_alloc.
  auto r = hostile::run_in_child(
      [&] {
        try {
          read_model_file(path);
        } catch (const FileFormatError& e) {
          const std::string what = e.what();
          return what.find(path) == 0 && what.find(std::to_string(kMaxSafetensorsTensors)) != std::string::npos &&
                 what.find("size are left unknown") != std::string::npos;
        }
        return false;
      },
      /*seconds=*/20, /*memory_mb=*/400);
  CHECK(r.finished);
  CHECK(r.code == 0);
}

TEST_CASE("a header at the tensor limit is read whole", "[inspect][limits]") {
  TempDir dir;
  const std::string path = dir.file("limit.safetensors");
  write_tiny_tensors(path, kMaxSafetensorsTensors);
  FileSource source(path);
  const SafetensorsHeader h = read_safetensors_header(source);
  REQUIRE(h.tensors.size() == kMaxSafetensorsTensors);
  CHECK(h.tensors.front().name == "t0.w");  // sorted by name: t0, t1, t10, t100, ...
  CHECK(h.tensors[1].name == "t1.w");
  CHECK(h.tensors[2].name == "t10.w");
  CHECK(h.data_bytes == 4 * kMaxSafetensorsTensors);
}

TEST_CASE("a file of more checkpoint parts than any bundle has is refused, not summarised part by part", "[inspect][limits]") {
  TempDir dir;
  const std::string path = dir.file("parts.safetensors");
  // "text_encoders.<name>." makes one part per name; kMaxBundleComponents + 1 names, plus a diffusion model.
  write_tiny_tensors(path, kMaxBundleComponents, "text_encoders.e");
  CHECK_NOTHROW(summarise(read_model_file(path), json::array()));  // 64 text encoders: still read
  write_tiny_tensors(path, kMaxBundleComponents + 1, "text_encoders.e");
  CHECK_THROWS_WITH(summarise(read_model_file(path), json::array()),
                    Catch::StartsWith(path + ": ") && Catch::Contains("65 checkpoint prefixes") &&
                        Catch::Contains("more than the 64 parts") && Catch::Contains("size are left unknown"));
}
