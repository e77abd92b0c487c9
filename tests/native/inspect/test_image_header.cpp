// The image header reader on bytes the tests write: each format's size field, frames, the EXIF quarter
// turn, and damaged or hostile headers (an error naming the file, never a crash or a long walk).
// tests/python/test_loaded_image_size.py checks the same reader against images Pillow writes.
#include <string>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/image_header.hpp"

using namespace headroom;

namespace {

std::string be32(std::uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
}
std::string be16(std::uint32_t v) { return {char((v >> 8) & 0xFF), char(v & 0xFF)}; }
std::string le16(std::uint32_t v) { return {char(v & 0xFF), char((v >> 8) & 0xFF)}; }
std::string le32(std::uint32_t v) { return le16(v & 0xFFFF) + le16(v >> 16); }
std::string le24(std::uint32_t v) { return {char(v & 0xFF), char((v >> 8) & 0xFF), char((v >> 16) & 0xFF)}; }

std::string chunk(const std::string& type, const std::string& data) { return be32(data.size()) + type + data + "CRC!"; }

std::string png(std::uint32_t w, std::uint32_t h, std::uint32_t frames = 0) {
  std::string s = "\x89PNG\r\n\x1a\n" + chunk("IHDR", be32(w) + be32(h) + std::string("\x08\x02\0\0\0", 5));
  if (frames) s += chunk("acTL", be32(frames) + be32(0));
  return s + chunk("IDAT", "xx") + chunk("IEND", "");
}

std::string segment(unsigned char marker, const std::string& data) {
  return std::string{char(0xFF), char(marker)} + be16(data.size() + 2) + data;
}

std::string jpeg(std::uint32_t w, std::uint32_t h, const std::string& before = "") {
  return std::string("\xFF\xD8", 2) + segment(0xE0, std::string("JFIF\0\1\1", 7)) + before +
         segment(0xC4, "huffman") + segment(0xC0, "\x08" + be16(h) + be16(w) + "\x03") + std::string("\xFF\xDA", 2);
}

std::string exif(std::uint16_t orientation) {
  const std::string tiff = "MM" + be16(42) + be32(8) + be16(1) + be16(0x0112) + be16(3) + be32(1) + be16(orientation) +
                           be16(0) + be32(0);
  return segment(0xE1, std::string("Exif\0\0", 6) + tiff);
}

std::string riff(const std::string& body) { return "RIFF" + le32(body.size() + 4) + "WEBP" + body; }

ImageHeader read(const std::string& bytes) {
  MemorySource src("image", bytes.data(), bytes.size());
  return read_image_header(src);
}

std::string error_of(const std::string& bytes) {
  try {
    read(bytes);
  } catch (const FileFormatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("each format's size field is read", "[inspect][image]") {
  const ImageHeader p = read(png(1536, 1024));
  CHECK(p.format == "png");
  CHECK(p.width == 1536);
  CHECK(p.height == 1024);
  CHECK(p.frames == 1);

  const ImageHeader j = read(jpeg(800, 1328));
  CHECK(j.format == "jpeg");
  CHECK(j.width == 800);
  CHECK(j.height == 1328);

  const std::string vp8 = std::string("\0\0\0\x9D\x01\x2A", 6) + le16(640) + le16(480);
  const ImageHeader w = read(riff("VP8 " + le32(vp8.size()) + vp8));
  CHECK((w.format == "webp" && w.width == 640 && w.height == 480));

  const std::uint32_t bits = (1023u) | (767u << 14);
  const ImageHeader l = read(riff("VP8L" + le32(5) + "\x2F" + le32(bits)));
  CHECK((l.width == 1024 && l.height == 768));

  const ImageHeader g = read("GIF89a" + le16(320) + le16(200) + std::string("\0\0\0", 3) + ";");
  CHECK((g.format == "gif" && g.width == 320 && g.height == 200 && g.frames == 1));

  const ImageHeader b = read("BM" + std::string(12, '\0') + le32(40) + le32(300) + le32(0xFFFFFF38u) + std::string(30, '\0'));
  CHECK((b.format == "bmp" && b.width == 300 && b.height == 200));  // a top-down BMP's height is negative
}

TEST_CASE("animated images say how many frames LoadImage makes a batch of", "[inspect][image]") {
  CHECK(read(png(512, 512, 12)).frames == 12);

  const std::string frame = std::string(16, '\0');
  const std::string vp8x = std::string("\x02\0\0\0", 4) + le24(255) + le24(127);
  const std::string body = "VP8X" + le32(10) + vp8x + "ANIM" + le32(6) + std::string(6, '\0') + "ANMF" + le32(16) +
                           frame + "ANMF" + le32(16) + frame + "ANMF" + le32(16) + frame;
  const ImageHeader w = read(riff(body));
  CHECK((w.width == 256 && w.height == 128 && w.frames == 3));

  // Two image descriptors (each: 9 bytes, code size, one sub-block, terminator) after a global table.
  const std::string image = "," + std::string(8, '\0') + std::string("\0", 1) + "\x02" + "\x01" + "x" + std::string("\0", 1);
  const std::string ext = std::string("!\xF9\x04", 3) + "abcd" + std::string("\0", 1);
  const std::string gif = "GIF89a" + le16(64) + le16(48) + "\x80" + std::string(2, '\0') + std::string(6, 'c') + ext +
                          image + ext + image + ";";
  const ImageHeader g = read(gif);
  CHECK((g.width == 64 && g.height == 48 && g.frames == 2));
}

TEST_CASE("a JPEG's EXIF quarter turn swaps its sides, as LoadImage's transpose does", "[inspect][image]") {
  const ImageHeader turned = read(jpeg(1600, 900, exif(6)));
  CHECK(turned.width == 900);
  CHECK(turned.height == 1600);
  const ImageHeader upside_down = read(jpeg(1600, 900, exif(3)));
  CHECK(upside_down.width == 1600);
}

TEST_CASE("damaged and hostile image headers are errors naming the file", "[inspect][image]") {
  CHECK_THAT(error_of("hello, not an image"), Catch::Contains("image: not an image Headroom reads"));
  CHECK_THAT(error_of(png(1536, 1024).substr(0, 20)), Catch::Contains("truncated"));
  CHECK_THAT(error_of(png(0, 1024)), Catch::Contains("expected each side from 1 to 65535"));
  CHECK_THAT(error_of(png(70000, 10)), Catch::Contains("70000x10"));
  CHECK_THAT(error_of(std::string("\xFF\xD8", 2) + segment(0xE0, "x") + std::string("\xFF\xDA", 2)),
             Catch::Contains("before any frame header"));
  CHECK_THAT(error_of(jpeg(0, 0)), Catch::Contains("DNL"));
  CHECK_THAT(error_of(std::string("\xFF\xD8", 2) + segment(0xE0, "x") + "garbage"),
             Catch::Contains("where a marker should be"));
  // A segment length below its own field would walk backwards forever.
  CHECK_THAT(error_of(std::string("\xFF\xD8\xFF\xE0\x00\x01", 6) + std::string(10, 'x')),
             Catch::Contains("shorter than its own length"));
  // A run of fill bytes without end is cut by the file's end.
  CHECK_THAT(error_of(std::string("\xFF\xD8", 2) + std::string(4096, '\xFF')), Catch::Contains("truncated"));
  CHECK_THAT(error_of(riff("VP8 " + le32(10) + std::string(10, '\0'))), Catch::Contains("start code"));
  CHECK_THAT(error_of("BM" + std::string(12, '\0') + le32(20) + std::string(30, '\0')),
             Catch::Contains("expected 12 or at least 40"));
  // A PNG chunk length that points past the end stops the chunk walk, not the read of the size.
  const std::string long_chunk = "\x89PNG\r\n\x1a\n" + chunk("IHDR", be32(64) + be32(64) + std::string(5, '\0')) +
                                 be32(0xFFFFFFF0u) + "tEXt";
  CHECK(read(long_chunk).width == 64);
}
