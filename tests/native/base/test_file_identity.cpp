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
  fs::last_write_time(fs::u8path(path), fs::file_time_type::clock::now() - std::chrono::hours(2));
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
  fs::last_write_time(fs::u8path(path), fs::file_time_type::clock::now() - std::chrono::hours(1));
  const FileIdentity rewritten = FileSource(path).identity();
  CHECK(rewritten.inode == id.inode);
  CHECK(rewritten.size == id.size);
  CHECK(rewritten != id);
  // The hour between the two time stamps, to the second, in the identity's nanoseconds.
  CHECK((rewritten.mtime_ns - id.mtime_ns) / 1000000000 == 3600);
}

TEST_CASE("file identity: nothing for a folder or a missing file", "[base][identity]") {
  testfiles::TempDir dir;
  CHECK_FALSE(file_identity(dir.path()).has_value());
  CHECK_FALSE(file_identity(dir.file("missing.safetensors")).has_value());
}
