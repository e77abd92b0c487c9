#include "core/inspect/safetensors_header.hpp"

#include <algorithm>
#include <istream>
#include <limits>
#include <optional>
#include <streambuf>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace headroom {
namespace {

using nlohmann::json;

std::uint64_t le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string describe(const json& v) { return json_preview(v, 80); }

std::string clip(const std::string& name) { return name.size() > 200 ? name.substr(0, 200) + "..." : name; }

bool as_u64(const json& v, std::uint64_t* out) {
  if (v.is_number_unsigned()) *out = v.get<std::uint64_t>();
  else if (v.is_number_integer() && v.get<std::int64_t>() >= 0) *out = static_cast<std::uint64_t>(v.get<std::int64_t>());
  else return false;
  return true;
}

// `name` is taken over: a header of many tensors builds each name once. Messages are composed only
// when one is thrown, so a good entry costs no text.
SafetensorsTensor parse_tensor(const std::string& path, std::string&& name, const json& entry, std::uint64_t data_bytes) {
  SafetensorsTensor t;
  t.name = std::move(name);
  auto fail = [&](const std::string& what) { return FileFormatError(path, "tensor '" + clip(t.name) + "'" + what); };
  auto whole = [&](const json& v, const char* part) {
    std::uint64_t n = 0;
    if (!as_u64(v, &n)) throw fail(std::string(" ") + part + ": expected a non-negative whole number, found " + describe(v));
    return n;
  };
  if (!entry.is_object()) throw fail(": expected an object {dtype, shape, data_offsets}, found " + describe(entry));

  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    throw fail(": expected a string \"dtype\", found " + (dtype == entry.end() ? std::string("none") : describe(*dtype)));
  t.dtype = dtype->get<std::string>();
  const std::uint64_t elem = safetensors_dtype_bytes(t.dtype);
  if (elem == 0)
    throw fail(": unknown dtype '" + t.dtype +
               "' (expected one of F64 F32 F16 BF16 F8_E4M3 F8_E5M2 F8_E8M0 I64 I32 I16 I8 U64 U32 U16 U8 BOOL)");

  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    throw fail(": expected an array \"shape\", found " + (shape == entry.end() ? std::string("none") : describe(*shape)));
  if (shape->size() > 64) throw fail(": shape has " + std::to_string(shape->size()) + " dimensions, expected at most 64");
  t.elements = 1;
  t.shape.reserve(shape->size());
  for (const auto& d : *shape) {
    const std::uint64_t dim = whole(d, "shape");
    t.shape.push_back(dim);
    if (dim != 0 && t.elements > std::numeric_limits<std::uint64_t>::max() / dim)
      throw fail(": shape " + describe(*shape) + " overflows 64 bits");
    t.elements *= dim;
  }

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
    throw fail(": expected \"data_offsets\": [begin, end], found " +
               (offsets == entry.end() ? std::string("none") : describe(*offsets)));
  t.begin = whole((*offsets)[0], "data_offsets");
  t.end = whole((*offsets)[1], "data_offsets");
  if (t.begin > t.end)
    throw fail(": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "] end before they begin");
  if (t.end > data_bytes)
    throw fail(": data_offsets end at " + std::to_string(t.end) + " but the data section holds only " +
               std::to_string(data_bytes) + " bytes (truncated file or corrupt header)");
  if (t.elements > std::numeric_limits<std::uint64_t>::max() / elem)
    throw fail(": shape " + describe(*shape) + " overflows 64 bits");
  if (t.end - t.begin != t.elements * elem)
    throw fail(": shape " + describe(*shape) + " of " + t.dtype + " needs " + std::to_string(t.elements * elem) +
               " bytes, but data_offsets span " + std::to_string(t.end - t.begin));
  return t;
}

// The JSON header as a stream over the file, 64 KiB at a time, so the text is never held whole.
class HeaderStream : public std::streambuf {
 public:
  HeaderStream(ByteSource& source, std::uint64_t begin, std::uint64_t length)
      : source_(source), pos_(begin), end_(begin + length),
        buf_(static_cast<std::size_t>(std::min<std::uint64_t>(length, 64 * 1024))) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (pos_ == end_) return traits_type::eof();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size(), end_ - pos_));
    source_.read(pos_, buf_.data(), n, "JSON header");
    pos_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  ByteSource& source_;
  std::uint64_t pos_, end_;
  std::vector<char> buf_;
};

// Line and column of byte `n` of the text at `begin`, for a syntax error: read again only then.
std::pair<std::uint64_t, std::uint64_t> line_and_column(ByteSource& source, std::uint64_t begin, std::uint64_t n) {
  std::uint64_t line = 1, column = 1;
  char buf[64 * 1024];
  for (std::uint64_t done = 0; done + 1 < n;) {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, n - 1 - done));
    source.read(begin + done, buf, k, "JSON header");
    for (std::size_t i = 0; i < k; ++i) {
      if (buf[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    done += k;
  }
  return {line, column};
}

// The header's parse events. The top-level object is walked here; each of its values (one tensor's
// entry, or __metadata__) is built as a JSON value of its own, checked, kept as a SafetensorsTensor and
// dropped: the whole header never exists as a JSON document, which for a million tensors took most of
// a gigabyte and seconds to build, copy and free.
class HeaderSax {
 public:
  HeaderSax(const std::string& path, SafetensorsHeader& out) : path_(path), out_(out) {}

  bool null() { return scalar([](Dom& d) { return d.null(); }); }
  bool boolean(bool v) { return scalar([v](Dom& d) { return d.boolean(v); }); }
  bool number_integer(json::number_integer_t v) { return scalar([v](Dom& d) { return d.number_integer(v); }); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar([v](Dom& d) { return d.number_unsigned(v); }); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return scalar([v, &s](Dom& d) { return d.number_float(v, s); });
  }
  bool string(json::string_t& v) { return scalar([&v](Dom& d) { return d.string(v); }); }
  bool binary(json::binary_t& v) { return scalar([&v](Dom& d) { return d.binary(v); }); }
  bool start_object(std::size_t n) { return open(true, [n](Dom& d) { return d.start_object(n); }); }
  bool start_array(std::size_t n) { return open(false, [n](Dom& d) { return d.start_array(n); }); }
  bool end_object() { return close([](Dom& d) { return d.end_object(); }); }
  bool end_array() { return close([](Dom& d) { return d.end_array(); }); }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      key_ = std::move(k);
      return true;
    }
    return dom_->key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& ex) {
    throw ex;
  }

 private:
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;
  const std::string& path_;
  SafetensorsHeader& out_;
  int depth_ = 0;             // containers open, the top-level object included
  std::string key_;           // the top-level key whose value is being read
  json entry_;                // that value
  std::optional<Dom> dom_;    // builds it

  [[noreturn]] void not_an_object(bool array) const {
    throw FileFormatError(path_, std::string("header: expected a JSON object (a safetensors header is an object of "
                                             "tensors, 3 levels deep), found ") +
                                     (array ? "an array" : "a plain value"));
  }
  void begin_entry() {
    entry_ = json();
    dom_.emplace(entry_, true);
  }
  template <typename F>
  bool scalar(F&& emit) {
    if (depth_ == 0) not_an_object(false);
    if (depth_ == 1) begin_entry();
    emit(*dom_);
    if (depth_ == 1) end_entry();
    return true;
  }
  template <typename F>
  bool open(bool object, F&& emit) {
    if (depth_ == 0 && !object) not_an_object(true);
    if (++depth_ > kMaxSafetensorsJsonDepth)
      throw FileFormatError(path_, "header: JSON nests deeper than " + std::to_string(kMaxSafetensorsJsonDepth) +
                                       " levels; a safetensors header is an object of tensors, 3 levels deep");
    if (depth_ == 1) return true;  // the top-level object itself is never built
    if (depth_ == 2) begin_entry();
    emit(*dom_);
    return true;
  }
  template <typename F>
  bool close(F&& emit) {
    if (--depth_ == 0) return true;
    emit(*dom_);
    if (depth_ == 1) end_entry();
    return true;
  }
  void end_entry() {
    dom_.reset();
    if (key_ == "__metadata__") {
      if (entry_.is_null()) return;
      if (!entry_.is_object())
        throw FileFormatError(path_, "__metadata__: expected an object of strings, found " + describe(entry_));
      // The format says string -> string; some writers store numbers: keep them as text.
      for (auto m = entry_.begin(); m != entry_.end(); ++m)
        out_.metadata[m.key()] = m->is_string() ? m->get<std::string>() : describe(*m);
      return;
    }
    if (out_.tensors.size() == kMaxSafetensorsTensors)
      throw FileFormatError(path_, "holds more than " + std::to_string(kMaxSafetensorsTensors) +
                                       " tensors, the most Headroom reads from one header (real checkpoints hold at "
                                       "most a few tens of thousands); its contents and size are left unknown");
    out_.tensors.push_back(parse_tensor(path_, std::move(key_), entry_, out_.data_bytes));
    entry_ = json();
  }
};

}  // namespace

std::uint64_t safetensors_dtype_bytes(const std::string& dtype) {
  // Dtype names of the safetensors format (safetensors/src/tensor.rs, enum Dtype).
  static const std::pair<const char*, std::uint64_t> table[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1},
      {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},     {"U16", 2},
      {"U8", 1},  {"BOOL", 1}};
  for (const auto& [name, bytes] : table)
    if (dtype == name) return bytes;
  return 0;
}

SafetensorsHeader read_safetensors_header(ByteSource& source) {
  const std::string& path = source.name();
  const std::uint64_t file_size = source.size();
  if (file_size < 8)
    throw FileFormatError(path, "truncated: a safetensors file starts with an 8-byte header length, but the file has " +
                                    std::to_string(file_size) + " bytes");
  unsigned char prefix[8];
  source.read(0, prefix, 8, "header length");
  SafetensorsHeader h;
  h.header_bytes = le64(prefix);
  if (h.header_bytes > kMaxSafetensorsHeaderBytes)
    throw FileFormatError(path, "header length " + std::to_string(h.header_bytes) + " bytes is over the " +
                                    std::to_string(kMaxSafetensorsHeaderBytes) +
                                    "-byte limit (not a safetensors file, or a corrupt one)");
  if (h.header_bytes > file_size - 8)
    throw FileFormatError(path, "header length " + std::to_string(h.header_bytes) + " bytes goes past the end of the " +
                                    std::to_string(file_size) + "-byte file (truncated download?)");
  h.data_bytes = file_size - 8 - h.header_bytes;

  // Writers may pad the header with trailing spaces to align the data section; the strict parse allows
  // whitespace after the object and nothing else.
  HeaderStream text(source, 8, h.header_bytes);
  std::istream in(&text);
  HeaderSax sax(path, h);
  try {
    json::sax_parse(in, &sax);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_and_column(source, 8, std::min<std::uint64_t>(e.byte, h.header_bytes));
    throw FileFormatError(path, "header: not valid JSON at line " + std::to_string(line) + ", column " +
                                    std::to_string(column) + " (byte " + std::to_string(e.byte) + "): " + e.what());
  } catch (const json::exception& e) {  // out_of_range 406: a number beyond a double, such as 1e400
    throw FileFormatError(path, std::string("header: not valid JSON: ") + e.what() +
                                    " (numbers must be finite and within about 1.8e308)");
  }

  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < h.tensors.size(); ++i)
    if (h.tensors[i].name == h.tensors[i - 1].name)
      throw FileFormatError(path, "tensor '" + clip(h.tensors[i].name) +
                                      "' appears twice in the header (expected one entry per name)");

  // Tensors may be stored in any order but must not share bytes.
  std::vector<const SafetensorsTensor*> by_offset;
  by_offset.reserve(h.tensors.size());
  for (const auto& t : h.tensors)
    if (t.end > t.begin) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      throw FileFormatError(path, "tensors '" + by_offset[i - 1]->name + "' (bytes " +
                                      std::to_string(by_offset[i - 1]->begin) + "-" + std::to_string(by_offset[i - 1]->end) +
                                      ") and '" + by_offset[i]->name + "' (bytes " + std::to_string(by_offset[i]->begin) +
                                      "-" + std::to_string(by_offset[i]->end) + ") overlap");
  }
  return h;
}

}  // namespace headroom
