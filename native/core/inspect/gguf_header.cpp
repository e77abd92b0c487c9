#include "core/inspect/gguf_header.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace headroom {
namespace {

using nlohmann::json;

// Block layouts of ggml/src/ggml.c `type_traits` and the block_* structs of ggml/src/ggml-common.h
// (each guarded there by a static_assert on its size). Ids are enum ggml_type; retired ids
// (4, 5, 31-33, 36-38) are absent on purpose.
constexpr GgmlType kTypes[] = {
    {0, "f32", 1, 4},          {1, "f16", 1, 2},          {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},       {7, "q5_1", 32, 24},       {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
    {10, "q2_k", 256, 84},     {11, "q3_k", 256, 110},    {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
    {14, "q6_k", 256, 210},    {15, "q8_k", 256, 292},    {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98},  {19, "iq1_s", 256, 50},    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},    {23, "iq4_xs", 256, 136},  {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},         {27, "i64", 1, 8},         {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},        {34, "tq1_0", 256, 54},    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
};

enum ValueType : std::uint32_t {
  kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64, kValueTypeCount
};
const char* const kValueTypeNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32", "float32",
                                       "bool",  "string", "array",  "uint64", "int64",  "float64"};
// Smallest encoding of one value of each type: bounds array lengths by the bytes left.
constexpr std::uint64_t kMinValueBytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};

constexpr std::size_t kKeepStringBytes = 1024;  // longer metadata strings are cut in the report
constexpr std::uint64_t kKeepArrayValues = 16;

std::string clip(const std::string& s, std::size_t n = 200) { return s.size() > n ? s.substr(0, n) + "..." : s; }

// Keys and names become JSON strings, which must be valid UTF-8.
std::string sanitize_utf8(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t i = 0, n = in.size();
  while (i < n) {
    unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;
    if (ok && len == 3) {
      unsigned cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      unsigned cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (ok) {
      out.append(in, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

// Sequential reads through a 64 KiB window, so a header of many small fields costs few syscalls.
class Cursor {
 public:
  explicit Cursor(ByteSource& src)
      : src_(src), buf_(static_cast<std::size_t>(std::min<std::uint64_t>(64 * 1024, std::max<std::uint64_t>(src.size(), 1)))) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return src_.size() - pos_; }
  const std::string& path() const { return src_.name(); }

  void read(void* dst, std::size_t n, const std::string& what) {
    if (n > left())
      throw FileFormatError(path(), "truncated: expected " + std::to_string(n) + " bytes of " + what + " at offset " +
                                        std::to_string(pos_) + ", but the file ends at byte " +
                                        std::to_string(src_.size()));
    auto* out = static_cast<unsigned char*>(dst);
    while (n > 0) {
      if (pos_ < buf_start_ || pos_ >= buf_start_ + buf_len_) {
        if (n >= buf_.size()) {  // large reads bypass the window
          src_.read(pos_, out, n, what);
          pos_ += n;
          return;
        }
        buf_start_ = pos_;
        buf_len_ = static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size(), left()));
        src_.read(buf_start_, buf_.data(), buf_len_, what);
      }
      std::size_t off = static_cast<std::size_t>(pos_ - buf_start_);
      std::size_t take = std::min(n, buf_len_ - off);
      std::memcpy(out, buf_.data() + off, take);
      out += take;
      n -= take;
      pos_ += take;
    }
  }

  void skip(std::uint64_t n, const std::string& what) {
    if (n > left())
      throw FileFormatError(path(), "truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                                        std::to_string(pos_) + ", but the file ends at byte " +
                                        std::to_string(src_.size()));
    pos_ += n;
  }

  template <typename T>
  T scalar(const std::string& what) {
    unsigned char b[sizeof(T)];
    read(b, sizeof(T), what);
    // GGUF is little-endian; assemble explicitly so the host's byte order does not matter.
    std::uint64_t v = 0;
    for (int i = static_cast<int>(sizeof(T)) - 1; i >= 0; --i) v = (v << 8) | b[i];
    T out;
    if constexpr (sizeof(T) == 1) {
      std::uint8_t x = static_cast<std::uint8_t>(v);
      std::memcpy(&out, &x, 1);
    } else if constexpr (sizeof(T) == 2) {
      std::uint16_t x = static_cast<std::uint16_t>(v);
      std::memcpy(&out, &x, 2);
    } else if constexpr (sizeof(T) == 4) {
      std::uint32_t x = static_cast<std::uint32_t>(v);
      std::memcpy(&out, &x, 4);
    } else {
      std::memcpy(&out, &v, 8);
    }
    return out;
  }

  // A gguf_string: u64 length then bytes (no terminator). Lengths are checked before allocating.
  std::string string(const std::string& what, std::uint64_t cap) {
    const std::uint64_t len = scalar<std::uint64_t>(what + " length");
    if (len > cap)
      throw FileFormatError(path(), what + ": length " + std::to_string(len) + " bytes is over the limit of " +
                                        std::to_string(cap) + " (corrupt file)");
    if (len > left())
      throw FileFormatError(path(), what + ": length " + std::to_string(len) + " bytes at offset " +
                                        std::to_string(pos_) + " goes past the end of the file (byte " +
                                        std::to_string(src_.size()) + ")");
    std::string s(static_cast<std::size_t>(len), '\0');
    read(s.data(), s.size(), what);
    return s;
  }

  // Skips a string's bytes but keeps at most `keep` of them.
  std::string string_prefix(const std::string& what, std::size_t keep, std::uint64_t* full_len) {
    const std::uint64_t len = scalar<std::uint64_t>(what + " length");
    if (len > kMaxGgufStringBytes)
      throw FileFormatError(path(), what + ": length " + std::to_string(len) + " bytes is over the limit of " +
                                        std::to_string(kMaxGgufStringBytes) + " (corrupt file)");
    if (len > left())
      throw FileFormatError(path(), what + ": length " + std::to_string(len) + " bytes at offset " +
                                        std::to_string(pos_) + " goes past the end of the file (byte " +
                                        std::to_string(src_.size()) + ")");
    *full_len = len;
    std::string s(static_cast<std::size_t>(std::min<std::uint64_t>(len, keep)), '\0');
    read(s.data(), s.size(), what);
    skip(len - s.size(), what);
    return s;
  }

 private:
  ByteSource& src_;
  std::vector<unsigned char> buf_;
  std::uint64_t buf_start_ = 0;
  std::size_t buf_len_ = 0;
  std::uint64_t pos_ = 0;
};

json read_value(Cursor& in, std::uint32_t type, const std::string& what, int depth);

json read_scalar(Cursor& in, std::uint32_t type, const std::string& what) {
  switch (type) {
    case kU8: return in.scalar<std::uint8_t>(what);
    case kI8: return in.scalar<std::int8_t>(what);
    case kU16: return in.scalar<std::uint16_t>(what);
    case kI16: return in.scalar<std::int16_t>(what);
    case kU32: return in.scalar<std::uint32_t>(what);
    case kI32: return in.scalar<std::int32_t>(what);
    case kF32: return in.scalar<float>(what);
    case kBool: return in.scalar<std::uint8_t>(what) != 0;
    case kU64: return in.scalar<std::uint64_t>(what);
    case kI64: return in.scalar<std::int64_t>(what);
    case kF64: return in.scalar<double>(what);
    case kString: {
      std::uint64_t len = 0;
      std::string s = in.string_prefix(what, kKeepStringBytes, &len);
      s = sanitize_utf8(s);
      if (len > kKeepStringBytes) s += "... (" + std::to_string(len) + " bytes)";
      return s;
    }
    default: break;
  }
  throw FileFormatError(in.path(), what + ": unknown value type " + std::to_string(type) + " (expected 0-12)");
}

json read_array(Cursor& in, const std::string& what, int depth) {
  if (depth >= kMaxGgufArrayNesting)
    throw FileFormatError(in.path(), what + ": arrays nested deeper than " + std::to_string(kMaxGgufArrayNesting) +
                                         " levels");
  const std::uint32_t elem = in.scalar<std::uint32_t>(what + " element type");
  if (elem >= kValueTypeCount)
    throw FileFormatError(in.path(), what + ": unknown array element type " + std::to_string(elem) + " (expected 0-12)");
  const std::uint64_t n = in.scalar<std::uint64_t>(what + " length");
  if (n > in.left() / kMinValueBytes[elem])
    throw FileFormatError(in.path(), what + ": array of " + std::to_string(n) + " " + kValueTypeNames[elem] +
                                         " values cannot fit in the " + std::to_string(in.left()) +
                                         " bytes left in the file");
  json out = {{"type", kValueTypeNames[elem]}, {"length", n}};
  const bool keep = n <= kKeepArrayValues;
  json values = json::array();
  const std::uint64_t fixed = (elem == kString || elem == kArray) ? 0 : kMinValueBytes[elem];
  if (!keep && fixed) {
    in.skip(n * fixed, what);  // n * fixed <= left(), checked above
    return out;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    json v = read_value(in, elem, what, depth + 1);
    if (keep) values.push_back(std::move(v));
  }
  if (keep) out["values"] = std::move(values);
  return out;
}

json read_value(Cursor& in, std::uint32_t type, const std::string& what, int depth) {
  if (type == kArray) return read_array(in, what, depth);
  return read_scalar(in, type, what);
}

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) {
  std::uint64_t r = x % a;
  return r == 0 ? x : x + (a - r);
}

}  // namespace

const GgmlType* ggml_type(std::uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

namespace {

// The magic and the version: a file Headroom cannot read is named with what it is instead.
std::uint32_t read_version(ByteSource& source, Cursor& in) {
  const std::string& path = source.name();
  unsigned char magic[4];
  if (source.size() < 4)
    throw FileFormatError(path, "truncated: a GGUF file starts with the 4-byte magic 'GGUF', but the file has " +
                                    std::to_string(source.size()) + " bytes");
  in.read(magic, 4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", magic[0], magic[1], magic[2], magic[3]);
    throw FileFormatError(path, std::string("not a GGUF file: expected the magic 'GGUF' (47 47 55 46), found ") + hex);
  }
  const std::uint32_t version = in.scalar<std::uint32_t>("version");
  if (version == 0x02000000u || version == 0x03000000u)
    throw FileFormatError(path, "big-endian GGUF files are not supported (version field reads " +
                                    std::to_string(version) + "); convert it to little-endian");
  if (version == 1)
    throw FileFormatError(path, "GGUF version 1 is not supported (expected 2 or 3; v1 files predate 64-bit counts, "
                                "re-convert the model)");
  if (version != 2 && version != 3)
    throw FileFormatError(path, "unsupported GGUF version " + std::to_string(version) + " (expected 2 or 3)");
  return version;
}

// general.alignment, when the file sets it: a power of two, else the default of 32.
std::uint64_t alignment_of(const json& metadata, const std::string& path, std::uint64_t fallback) {
  if (auto a = metadata.find("general.alignment"); a != metadata.end()) {
    if (!a->is_number_unsigned() || a->get<std::uint64_t>() == 0 ||
        (a->get<std::uint64_t>() & (a->get<std::uint64_t>() - 1)) != 0 || a->get<std::uint64_t>() > (1u << 30))
      throw FileFormatError(path, "general.alignment: expected a power of two as an unsigned integer, found " +
                                      json_preview(*a));
    return a->get<std::uint64_t>();
  }
  return fallback;
}

// One tensor's info: name, shape, ggml type and offset, each checked against the limits and the alignment.
GgufTensor read_tensor_info(Cursor& in, std::uint64_t i, std::uint64_t alignment, std::set<std::string>& names) {
  const std::string& path = in.path();
  GgufTensor t;
  t.name = sanitize_utf8(in.string("tensor #" + std::to_string(i) + " name", kMaxGgufNameBytes));
  const std::string what = "tensor '" + clip(t.name) + "'";
  if (!names.insert(t.name).second) throw FileFormatError(path, what + ": the name appears twice");
  const std::uint32_t n_dims = in.scalar<std::uint32_t>(what + " dimension count");
  if (n_dims > kMaxGgufDims)
    throw FileFormatError(path, what + ": " + std::to_string(n_dims) + " dimensions, expected at most " +
                                    std::to_string(kMaxGgufDims));
  t.elements = 1;
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    std::uint64_t n = in.scalar<std::uint64_t>(what + " dimension");
    if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        (n != 0 && t.elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / n))
      throw FileFormatError(path, what + ": dimensions overflow 63 bits (dimension " + std::to_string(d) + " is " +
                                      std::to_string(n) + ")");
    t.ne.push_back(n);
    t.elements *= n;
  }
  const std::uint32_t type_id = in.scalar<std::uint32_t>(what + " type");
  t.type = ggml_type(type_id);
  if (!t.type)
    throw FileFormatError(path, what + ": unknown ggml type " + std::to_string(type_id) +
                                    " (this build knows F32, F16, BF16, Q4_0..Q8_1, Q2_K..Q8_K, IQ1..IQ4, TQ1_0, "
                                    "TQ2_0, MXFP4)");
  const std::uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
  if (ne0 % t.type->block_elements != 0)
    throw FileFormatError(path, what + ": its first dimension " + std::to_string(ne0) + " is not a multiple of the " +
                                    t.type->name + " block of " + std::to_string(t.type->block_elements) + " weights");
  const std::uint64_t blocks = t.elements / t.type->block_elements;
  if (blocks > std::numeric_limits<std::uint64_t>::max() / t.type->block_bytes)
    throw FileFormatError(path, what + ": its size in bytes overflows 64 bits");
  t.bytes = blocks * t.type->block_bytes;
  t.offset = in.scalar<std::uint64_t>(what + " offset");
  if (t.offset % alignment != 0)
    throw FileFormatError(path, what + ": data offset " + std::to_string(t.offset) + " is not a multiple of the " +
                                    std::to_string(alignment) + "-byte alignment");
  return t;
}

// Every tensor's bytes lie inside the data section, and no two overlap.
void check_data_layout(const GgufHeader& h, const ByteSource& source) {
  const std::string& path = source.name();
  const std::uint64_t data_bytes = h.data_offset <= source.size() ? source.size() - h.data_offset : 0;
  for (const auto& t : h.tensors) {
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      throw FileFormatError(path, "tensor '" + clip(t.name) + "': its " + std::to_string(t.bytes) + " bytes at data offset " +
                                      std::to_string(t.offset) + " go past the end of the file (data section holds " +
                                      std::to_string(data_bytes) + " bytes; truncated download?)");
  }
  std::vector<const GgufTensor*> by_offset;
  for (const auto& t : h.tensors)
    if (t.bytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor* a = by_offset[i - 1];
    const GgufTensor* b = by_offset[i];
    if (b->offset < a->offset + a->bytes)
      throw FileFormatError(path, "tensors '" + clip(a->name) + "' (data bytes " + std::to_string(a->offset) + "-" +
                                      std::to_string(a->offset + a->bytes) + ") and '" + clip(b->name) + "' (from " +
                                      std::to_string(b->offset) + ") overlap");
  }
}

}  // namespace

GgufHeader read_gguf_header(ByteSource& source) {
  const std::string& path = source.name();
  Cursor in(source);
  GgufHeader h;
  h.version = read_version(source, in);

  const std::uint64_t tensor_count = in.scalar<std::uint64_t>("tensor count");
  const std::uint64_t kv_count = in.scalar<std::uint64_t>("metadata count");
  // A tensor info takes at least 24 bytes, a key/value at least 13.
  if (tensor_count > kMaxGgufTensors || tensor_count > in.left() / 24)
    throw FileFormatError(path, "tensor count " + std::to_string(tensor_count) + " is absurd (at most " +
                                    std::to_string(std::min<std::uint64_t>(kMaxGgufTensors, in.left() / 24)) +
                                    " fit in this file)");
  if (kv_count > kMaxGgufKeyValues || kv_count > in.left() / 13)
    throw FileFormatError(path, "metadata count " + std::to_string(kv_count) + " is absurd (at most " +
                                    std::to_string(std::min<std::uint64_t>(kMaxGgufKeyValues, in.left() / 13)) +
                                    " fit in this file)");

  for (std::uint64_t i = 0; i < kv_count; ++i) {
    std::string key = sanitize_utf8(in.string("metadata key #" + std::to_string(i), kMaxGgufNameBytes));
    const std::string what = "metadata '" + clip(key) + "'";
    if (h.metadata.contains(key)) throw FileFormatError(path, what + ": the key appears twice");
    const std::uint32_t type = in.scalar<std::uint32_t>(what + " type");
    h.metadata[key] = read_value(in, type, what, 0);
  }

  h.alignment = alignment_of(h.metadata, path, h.alignment);

  std::set<std::string> names;
  h.tensors.reserve(static_cast<std::size_t>(tensor_count));
  for (std::uint64_t i = 0; i < tensor_count; ++i) h.tensors.push_back(read_tensor_info(in, i, h.alignment, names));

  h.header_bytes = in.pos();
  h.data_offset = align_up(in.pos(), h.alignment);
  check_data_layout(h, source);
  return h;
}

}  // namespace headroom
