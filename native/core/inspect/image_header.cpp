#include "core/inspect/image_header.hpp"

#include <array>
#include <cstring>

#include "core/base/error.hpp"

namespace headroom {
namespace {

// A longer side is no image LoadImage opens (PIL refuses such decompression bombs).
constexpr std::uint32_t kMaxSide = 65535;
// Walks over chunks, markers, fill bytes and blocks share this many steps per file: a hostile file cannot
// make them run long (a real header needs a few hundred; a long GIF's sub-blocks some thousands).
constexpr int kMaxSteps = 1 << 20;

class Reader {
 public:
  explicit Reader(ByteSource& s) : s_(s) {}
  std::uint64_t size() const { return s_.size(); }
  std::uint8_t u8(std::uint64_t at, const char* what) {
    std::uint8_t b = 0;
    s_.read(at, &b, 1, what);
    return b;
  }
  std::uint32_t be(std::uint64_t at, int n, const char* what) { return fold(at, n, what, true); }
  std::uint32_t le(std::uint64_t at, int n, const char* what) { return fold(at, n, what, false); }
  bool tag(std::uint64_t at, const char* text) {
    const std::size_t n = std::strlen(text);
    if (at + n > size()) return false;
    std::array<char, 8> b{};
    s_.read(at, b.data(), n, "format tag");
    return std::memcmp(b.data(), text, n) == 0;
  }
  [[noreturn]] void fail(const std::string& why) const { throw FileFormatError(s_.name(), why); }
  // One step of a walk; false once the file's budget is spent (the walk then ends or fails).
  bool step() { return ++steps_ <= kMaxSteps; }

 private:
  std::uint32_t fold(std::uint64_t at, int n, const char* what, bool big_endian) {
    std::array<std::uint8_t, 4> b{};
    s_.read(at, b.data(), static_cast<std::size_t>(n), what);
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint32_t>(b[big_endian ? i : n - 1 - i]) << (8 * (n - 1 - i));
    return v;
  }
  ByteSource& s_;
  int steps_ = 0;
};

ImageHeader checked(Reader& r, ImageHeader h) {
  if (h.width < 1 || h.height < 1 || h.width > kMaxSide || h.height > kMaxSide)
    r.fail("a " + h.format + " image of " + std::to_string(h.width) + "x" + std::to_string(h.height) +
           " px: expected each side from 1 to 65535 px");
  return h;
}

// IHDR first; an acTL chunk before the image data makes it an animated PNG with that many frames.
ImageHeader png(Reader& r) {
  if (!r.tag(12, "IHDR")) r.fail("a PNG whose first chunk is not IHDR");
  ImageHeader h{"png", r.be(16, 4, "PNG width"), r.be(20, 4, "PNG height"), 1};
  std::uint64_t at = 8;
  while (at + 8 <= r.size() && r.step()) {
    const std::uint32_t length = r.be(at, 4, "PNG chunk length");
    if (r.tag(at + 4, "acTL")) h.frames = std::max<std::uint32_t>(1, r.be(at + 8, 4, "PNG frame count"));
    if (r.tag(at + 4, "IDAT") || r.tag(at + 4, "IEND")) break;
    at += 12ull + length;
  }
  return checked(r, h);
}

bool is_jpeg_frame(std::uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

// ComfyUI's LoadImage applies the EXIF orientation (ImageOps.exif_transpose): 5 to 8 turn the image a
// quarter, so its width and height swap. Reads IFD0's Orientation tag from an APP1 "Exif" segment.
bool exif_turns_quarter(Reader& r, std::uint64_t seg, std::uint32_t length) {
  if (length < 16 || !r.tag(seg + 4, "Exif")) return false;
  const std::uint64_t tiff = seg + 10;
  const bool big = r.tag(tiff, "MM");
  if (!big && !r.tag(tiff, "II")) return false;
  auto num = [&](std::uint64_t at, int n) { return big ? r.be(at, n, "EXIF field") : r.le(at, n, "EXIF field"); };
  const std::uint64_t end = seg + 2 + length;
  const std::uint64_t ifd = tiff + num(tiff + 4, 4);
  if (ifd + 2 > end) return false;
  const std::uint32_t entries = num(ifd, 2);
  for (std::uint32_t i = 0; i < entries && ifd + 2 + 12ull * (i + 1) <= end; ++i) {
    const std::uint64_t e = ifd + 2 + 12ull * i;
    if (num(e, 2) == 0x0112) {
      const std::uint32_t orientation = num(e + 8, 2);
      return orientation >= 5 && orientation <= 8;
    }
  }
  return false;
}

// Markers from SOI to the first frame header (SOFn), each with its length; the scan (SOS) or the end
// (EOI) before any frame header leaves the size unknown.
ImageHeader jpeg(Reader& r) {
  std::uint64_t at = 2;
  bool quarter = false;
  while (r.step()) {
    if (r.u8(at, "JPEG marker") != 0xFF) r.fail("a JPEG with bytes where a marker should be");
    std::uint8_t m = 0xFF;
    while (m == 0xFF && r.step()) m = r.u8(++at, "JPEG marker");
    if (m == 0xFF) break;
    ++at;
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // markers without a length
    if (m == 0xD9 || m == 0xDA) r.fail("a JPEG whose image data starts before any frame header");
    const std::uint32_t length = r.be(at, 2, "JPEG segment length");
    if (length < 2) r.fail("a JPEG segment shorter than its own length field");
    if (m == 0xE1) quarter = quarter || exif_turns_quarter(r, at - 2, length);
    if (is_jpeg_frame(m)) {
      ImageHeader h{"jpeg", r.be(at + 5, 2, "JPEG width"), r.be(at + 3, 2, "JPEG height"), 1};
      if (h.height == 0) r.fail("a JPEG whose height comes after the image data (DNL): not read");
      if (quarter) std::swap(h.width, h.height);
      return checked(r, h);
    }
    at += length;
  }
  r.fail("a JPEG with more markers than any image has");
}

// VP8 (lossy), VP8L (lossless) or VP8X (extended: its canvas, and one ANMF chunk per frame when animated).
ImageHeader webp(Reader& r) {
  const std::uint64_t data = 20;
  if (r.tag(12, "VP8 ")) {
    if (r.u8(data + 3, "VP8 start code") != 0x9D || r.u8(data + 4, "VP8 start code") != 0x01 ||
        r.u8(data + 5, "VP8 start code") != 0x2A)
      r.fail("a lossy WebP without the VP8 start code");
    return checked(r, {"webp", r.le(data + 6, 2, "VP8 width") & 0x3FFF, r.le(data + 8, 2, "VP8 height") & 0x3FFF, 1});
  }
  if (r.tag(12, "VP8L")) {
    if (r.u8(data, "VP8L signature") != 0x2F) r.fail("a lossless WebP without the VP8L signature");
    const std::uint32_t bits = r.le(data + 1, 4, "VP8L size");
    return checked(r, {"webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, 1});
  }
  if (!r.tag(12, "VP8X")) r.fail("a WebP whose first chunk is not VP8, VP8L or VP8X");
  ImageHeader h{"webp", r.le(data + 4, 3, "VP8X width") + 1, r.le(data + 7, 3, "VP8X height") + 1, 1};
  if (r.u8(data, "VP8X flags") & 0x02) {
    std::uint32_t frames = 0;
    std::uint64_t at = 12;
    while (at + 8 <= r.size() && r.step()) {
      if (r.tag(at, "ANMF")) ++frames;
      at += 8ull + ((r.le(at + 4, 4, "WebP chunk size") + 1ull) & ~1ull);
    }
    h.frames = std::max<std::uint32_t>(1, frames);
  }
  return checked(r, h);
}

// Skips a run of GIF sub-blocks (each a length byte and that many bytes, ended by a 0 length).
std::uint64_t gif_sub_blocks(Reader& r, std::uint64_t at) {
  while (r.step()) {
    const std::uint8_t n = r.u8(at, "GIF sub-block");
    at += 1ull + n;
    if (n == 0) return at;
  }
  r.fail("a GIF with more sub-blocks than any image has");
}

// The logical screen's size, and the frames: one image descriptor each.
ImageHeader gif(Reader& r) {
  ImageHeader h{"gif", r.le(6, 2, "GIF width"), r.le(8, 2, "GIF height"), 0};
  const std::uint8_t flags = r.u8(10, "GIF flags");
  std::uint64_t at = 13 + ((flags & 0x80) ? 3ull << ((flags & 7) + 1) : 0);
  while (at < r.size() && r.step()) {
    const std::uint8_t block = r.u8(at, "GIF block");
    if (block == 0x3B) break;  // the trailer
    if (block == 0x21) {
      at = gif_sub_blocks(r, at + 2);
    } else if (block == 0x2C) {
      ++h.frames;
      const std::uint8_t local = r.u8(at + 9, "GIF image flags");
      at += 10 + ((local & 0x80) ? 3ull << ((local & 7) + 1) : 0);
      at = gif_sub_blocks(r, at + 1);  // after the LZW code size
    } else {
      break;  // what follows is not a block PIL reads either
    }
  }
  h.frames = std::max<std::uint32_t>(1, h.frames);
  return checked(r, h);
}

// BITMAPCOREHEADER (12 bytes, 16-bit sides) or a later header (signed 32-bit sides; a negative height
// stores the rows top-down).
ImageHeader bmp(Reader& r) {
  const std::uint32_t dib = r.le(14, 4, "BMP header size");
  if (dib == 12) return checked(r, {"bmp", r.le(18, 2, "BMP width"), r.le(20, 2, "BMP height"), 1});
  if (dib < 40) r.fail("a BMP header of " + std::to_string(dib) + " bytes: expected 12 or at least 40");
  const auto w = static_cast<std::int32_t>(r.le(18, 4, "BMP width"));
  const auto hh = static_cast<std::int32_t>(r.le(22, 4, "BMP height"));
  const auto mag = [](std::int32_t v) { return v < 0 ? 0u - static_cast<std::uint32_t>(v) : static_cast<std::uint32_t>(v); };
  return checked(r, {"bmp", mag(w), mag(hh), 1});
}

}  // namespace

ImageHeader read_image_header(ByteSource& source) {
  Reader r(source);
  if (r.tag(0, "\x89PNG\r\n\x1a\n")) return png(r);
  if (r.size() >= 3 && r.u8(0, "JPEG start") == 0xFF && r.u8(1, "JPEG start") == 0xD8) return jpeg(r);
  if (r.tag(0, "RIFF") && r.tag(8, "WEBP")) return webp(r);
  if (r.tag(0, "GIF87a") || r.tag(0, "GIF89a")) return gif(r);
  if (r.tag(0, "BM")) return bmp(r);
  r.fail("not an image Headroom reads the size of: expected PNG, JPEG, WebP, GIF or BMP");
}

}  // namespace headroom
