// The process-wide header cache (issue 27, item 5): a file is read once whatever its path spelling, again
// only when it changes, and the cache stays bounded and consistent under concurrent callers.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/inspect/header_cache.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;
namespace fs = std::filesystem;

namespace {

// A file the cache may keep: modified long enough ago (kHeaderCacheSettleNs).
void settle(const std::string& path, int hours_ago = 1) {
  fs::last_write_time(fs::u8path(path), fs::file_time_type::clock::now() - std::chrono::hours(hours_ago));
}

std::uint64_t reads() { return header_cache_counts().reads; }

}  // namespace

TEST_CASE("header cache: one read for every spelling of one file, each answer naming its own spelling",
          "[inspect][header_cache]") {
  clear_header_cache();
  TempDir dir;
  const std::string path = dir.file("unet.safetensors");
  write_safetensors(path, {{"a.weight", "BF16", {64, 32}}, {"a.bias", "BF16", {64}}});
  settle(path);
  const std::vector<std::string> spellings = {path, dir.path() + "/./unet.safetensors", dir.path() + "//unet.safetensors",
                                              dir.path() + "/.//./unet.safetensors"};
  for (const auto& p : spellings) {
    const Inspection i = inspect_file_cached(p);
    CHECK(i.path == p);
    CHECK(i.whole.tensors == 2);
    CHECK(i.whole.parameters == 64u * 32u + 64u);
  }
  CHECK(reads() == 1);
  CHECK(header_cache_counts().hits == spellings.size() - 1);
}

TEST_CASE("header cache: a rewritten file is read again, a freshly written one is never kept", "[inspect][header_cache]") {
  clear_header_cache();
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  // Same header length and file size before and after: only the time stamp changes with the content.
  write_safetensors(path, {{"w", "BF16", {8, 4}}});
  settle(path, 2);
  CHECK(inspect_file_cached(path).whole.dtype_mix.count("bf16") == 1);
  CHECK(inspect_file_cached(path).whole.dtype_mix.count("bf16") == 1);
  CHECK(reads() == 1);

  write_safetensors(path, {{"w", "F16", {8, 4}}});
  settle(path, 1);
  CHECK(inspect_file_cached(path).whole.dtype_mix.count("fp16") == 1);
  CHECK(reads() == 2);

  // Modified just now: it may still change within the time stamp's granularity, so every call reads.
  write_safetensors(path, {{"w", "BF16", {8, 4}}});
  CHECK(inspect_file_cached(path).whole.dtype_mix.count("bf16") == 1);
  CHECK(inspect_file_cached(path).whole.dtype_mix.count("bf16") == 1);
  CHECK(reads() == 4);
}

TEST_CASE("header cache: a malformed header is remembered and named by the spelling asked", "[inspect][header_cache]") {
  clear_header_cache();
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_file(path, st_prefix("{\"w\": {\"dtype\": \"BF16\", \"shape\": [4], \"data_offsets\": [0, 8]}}"));
  settle(path);
  const std::string other = dir.path() + "/./bad.safetensors";
  CHECK_THROWS_WITH(inspect_file_cached(path), Catch::StartsWith(path + ": ") && Catch::Contains("data section"));
  CHECK_THROWS_WITH(inspect_file_cached(other), Catch::StartsWith(other + ": ") && Catch::Contains("data section"));
  CHECK(reads() == 1);
  // A file that cannot be opened is no answer to keep.
  CHECK_THROWS_AS(inspect_file_cached(dir.file("missing.safetensors")), Error);
  CHECK_THROWS_AS(inspect_file_cached(dir.file("missing.safetensors")), Error);
  CHECK(header_cache_counts().entries == 1);
}

TEST_CASE("header cache: bounded, the least recently used goes first", "[inspect][header_cache]") {
  clear_header_cache();
  TempDir dir;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i <= kHeaderCacheEntries; ++i) {
    paths.push_back(dir.file("f" + std::to_string(i) + ".safetensors"));
    write_safetensors(paths.back(), {{"w", "U8", {i + 1}}});
    settle(paths.back());
  }
  for (std::size_t i = 0; i < kHeaderCacheEntries; ++i) inspect_file_cached(paths[i]);
  inspect_file_cached(paths[0]);  // now the most recently used; f1 is the least
  inspect_file_cached(paths[kHeaderCacheEntries]);
  CHECK(header_cache_counts().entries == kHeaderCacheEntries);
  const std::uint64_t before = reads();
  CHECK(inspect_file_cached(paths[0]).whole.parameters == 1);
  CHECK(reads() == before);
  CHECK(inspect_file_cached(paths[1]).whole.parameters == 2);
  CHECK(reads() == before + 1);
}

TEST_CASE("header cache: callers on several threads get the right answers", "[inspect][header_cache]") {
  clear_header_cache();
  TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 4; ++i) {
    paths.push_back(dir.file("t" + std::to_string(i) + ".safetensors"));
    write_safetensors(paths.back(), {{"w", "U8", {static_cast<std::uint64_t>(i + 1) * 10}}});
    settle(paths.back());
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        const std::size_t i = static_cast<std::size_t>(t + k) % paths.size();
        if (inspect_file_cached(paths[i]).whole.parameters != (i + 1) * 10) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  const HeaderCacheCounts c = header_cache_counts();
  CHECK(c.reads + c.hits == 400);
  CHECK(c.reads >= 4);
  CHECK(c.reads <= 4 * 8);  // at worst every thread read each file once before the first answer was kept
  CHECK(c.entries == 4);
}
