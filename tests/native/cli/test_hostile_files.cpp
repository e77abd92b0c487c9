// Hostile files (issue 13, items 6 and 7): devices, FIFOs and folders given as workflows, error
// texts or model files, over-long inputs, and a 100 MB safetensors header that is a JSON array.
// Each run has a time and an address-space limit (hostile.hpp). Before the fixes: `plan /dev/zero`
// and `explain /dev/zero` read until memory ran out, /dev/urandom hung, `explain DIR` read "" as the
// text, `inspect FIFO` blocked in open() forever, and the array header took 1.7 GB and 20 s.
#include <sys/stat.h>

#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/json_reader.hpp"
#include "core/inspect/safetensors_header.hpp"
#include "hostile.hpp"

using namespace headroom;

namespace {

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

}  // namespace

TEST_CASE("special files are refused before anything is read", "[hostile][files]") {
  hostile::Dir dir;
  const std::string fifo = dir.file("pipe");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const std::pair<const char*, const char*> commands[] = {
      {"plan", ""}, {"explain", ""}, {"inspect", ""}, {"plan", " --gpu 4090"}};
  const std::pair<const char*, std::string> files[] = {
      {"/dev/zero", "/dev/zero"}, {"/dev/urandom", "/dev/urandom"}, {"a FIFO", fifo}, {"a folder", dir.path()}};
  // No sections: the folder's name changes on every run of the test case.
  for (const auto& [cmd, extra] : commands) {
    for (const auto& [label, path] : files) {
      INFO(cmd << extra << " on " << label);
      CliRun r = hostile::run_limited(std::string(cmd) + " '" + path + "'" + extra, 5, 256);
      INFO(r.out);
      CHECK(r.code == 2);
      CHECK_THAT(r.out, Catch::Contains("expected a regular file"));
    }
  }
}

TEST_CASE("over-long text inputs are refused at their limit", "[hostile][files]") {
  hostile::Dir dir;
  SECTION("a workflow over the route's 16 MiB") {
    std::string big = R"({"nodes":[],"pad":")" + std::string(17u << 20, 'x') + "\"}";
    hostile::write_file(dir.file("big.json"), big);
    CliRun r = hostile::run_limited("plan '" + dir.file("big.json") + "'", 5, 256);
    INFO(r.out.substr(0, 300));
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("longer than 16777216 bytes"));
  }
  SECTION("stdin is read up to the limit, not until memory runs out") {
    CliRun r = hostile::run_limited("explain - < /dev/zero", 10, 256);
    INFO(r.out.substr(0, 300));
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("stdin: longer than"));
  }
  SECTION("the readers themselves") {
    CHECK_THROWS_WITH(read_text_file("/dev/zero", 100), Catch::Contains("expected a regular file"));
    hostile::write_file(dir.file("t.txt"), std::string(101, 'a'));
    CHECK_THROWS_WITH(read_text_file(dir.file("t.txt"), 100), Catch::Contains("longer than 100 bytes"));
    CHECK(read_text_file(dir.file("t.txt"), 101).size() == 101);
  }
}

TEST_CASE("a 100 MB safetensors header that is a JSON array is refused at its first token", "[hostile][files]") {
  hostile::Dir dir;
  std::string body = "[";
  body.reserve(kMaxSafetensorsHeaderBytes);
  while (body.size() + 2 < kMaxSafetensorsHeaderBytes - 8) body += "0,";
  body += "0]";
  hostile::write_file(dir.file("array.safetensors"), le64(body.size()) + body);
  body.clear();
  body.shrink_to_fit();
  // The 100 MB header is read (as the format requires) but never parsed into 1.7 GB of values.
  CliRun r = hostile::run_limited("inspect '" + dir.file("array.safetensors") + "'", 5, 400);
  INFO(r.out.substr(0, 400));
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("expected a JSON object"));
  CHECK(r.out.size() < 2000);
}

TEST_CASE("error messages show a bounded preview of a value", "[hostile][files]") {
  // describe() used to dump the whole value to keep 80 characters of it.
  nlohmann::json huge = nlohmann::json::array();
  for (int i = 0; i < 1000000; ++i) huge.push_back(i);
  auto r = hostile::run_in_child([&] {
    for (int i = 0; i < 1000; ++i)
      if (json_preview(huge).size() > 80) return false;  // 1,000 full dumps would be 7 GB of text
    return true;
  }, 5, 1024);
  CHECK(r.finished);
  CHECK(r.code == 0);
  CHECK_THAT(json_preview(huge), Catch::StartsWith("[0,1,2,3,") && Catch::EndsWith("..."));
  CHECK(json_preview(huge).size() == 80);
  CHECK(json_preview(std::string(1000, 'x')).size() == 80);
  CHECK(json_preview(nlohmann::json{{"a", 1}}) == R"({"a":1})");
  // A tensor entry that is a huge value: the message stays short.
  std::string h = R"({"w": )" + huge.dump() + "}";
  std::string file = le64(h.size()) + h;
  MemorySource src("m.safetensors", file.data(), file.size());
  try {
    read_safetensors_header(src);
    FAIL("no error");
  } catch (const FileFormatError& e) {
    CHECK(std::string(e.what()).size() < 300);
    CHECK_THAT(e.what(), Catch::Contains("expected an object"));
  }
}
