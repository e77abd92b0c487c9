// FileIdentity: what a header cache is keyed by. Two spellings of one file and a hard link are one file;
// a copy, or the same file after a rewrite, is another. Part of the MinGW test binary (Wine), where the
// identity comes from GetFileInformationByHandle.
#include <chrono>
#include <filesystem>

#include "catch.hpp"
#include "core/base/file_reader.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
namespace fs = std::filesystem;

TEST_CASE("file identity: spellings and hard links of one file agree, a copy and a rewrite differ", "[base][identity]") {
  testfiles::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  testfiles::write_file(path, std::string(100, 'a'));
  // One clock reading for both stamps: two readings drift apart by whatever the run in between took
  // (over a second under Wine on a loaded CI machine), which is not what the identity is tested for.
  const auto base = fs::file_time_type::clock::now();
  fs::last_write_time(fs::u8path(path), base - std::chrono::hours(2));
  const FileIdentity id = FileSource(path).identity();
  CHECK(id.size == 100);

  CHECK(FileSource(dir.path() + "/./m.safetensors").identity() == id);
  CHECK(FileSource(dir.path() + "//m.safetensors").identity() == id);
  fs::create_hard_link(fs::u8path(path), fs::u8path(dir.file("link.safetensors")));
  CHECK(FileSource(dir.file("link.safetensors")).identity() == id);
  CHECK(file_identity(path) == id);

  fs::copy_file(fs::u8path(path), fs::u8path(dir.file("copy.safetensors")));
  CHECK(FileSource(dir.file("copy.safetensors")).identity() != id);

  // Rewritten in place with the same size: only the modification time tells.
  testfiles::write_file(path, std::string(100, 'b'));
  fs::last_write_time(fs::u8path(path), base - std::chrono::hours(1));
  const FileIdentity rewritten = FileSource(path).identity();
  CHECK(rewritten.inode == id.inode);
  CHECK(rewritten.size == id.size);
  CHECK(rewritten != id);
  // The hour between the two time stamps in the identity's nanoseconds, to the file system's resolution
  // (100 ns on NTFS, 1 ns on ext4; both stamps come from one reading, so they round alike).
  const long long hour_ns = 3600LL * 1000000000LL;
  CHECK(rewritten.mtime_ns - id.mtime_ns >= hour_ns - 1000);
  CHECK(rewritten.mtime_ns - id.mtime_ns <= hour_ns + 1000);
}

TEST_CASE("file identity: nothing for a folder or a missing file", "[base][identity]") {
  testfiles::TempDir dir;
  CHECK_FALSE(file_identity(dir.path()).has_value());
  CHECK_FALSE(file_identity(dir.file("missing.safetensors")).has_value());
}
