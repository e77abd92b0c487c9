#include "core/inspect/safetensors_header.hpp"

#include <algorithm>
#include <limits>

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

std::uint64_t as_u64(const std::string& path, const std::string& where, const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  throw FileFormatError(path, where + ": expected a non-negative whole number, found " + describe(v));
}

SafetensorsTensor parse_tensor(const std::string& path, const std::string& name, const json& entry,
                               std::uint64_t data_bytes) {
  const std::string where = "tensor '" + (name.size() > 200 ? name.substr(0, 200) + "..." : name) + "'";
  if (!entry.is_object())
    throw FileFormatError(path, where + ": expected an object {dtype, shape, data_offsets}, found " + describe(entry));
  SafetensorsTensor t;
  t.name = name;

  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    throw FileFormatError(path, where + ": expected a string \"dtype\", found " +
                                    (dtype == entry.end() ? std::string("none") : describe(*dtype)));
  t.dtype = dtype->get<std::string>();
  const std::uint64_t elem = safetensors_dtype_bytes(t.dtype);
  if (elem == 0)
    throw FileFormatError(path, where + ": unknown dtype '" + t.dtype +
                                    "' (expected one of F64 F32 F16 BF16 F8_E4M3 F8_E5M2 F8_E8M0 "
                                    "I64 I32 I16 I8 U64 U32 U16 U8 BOOL)");

  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    throw FileFormatError(path, where + ": expected an array \"shape\", found " +
                                    (shape == entry.end() ? std::string("none") : describe(*shape)));
  if (shape->size() > 64) throw FileFormatError(path, where + ": shape has " + std::to_string(shape->size()) + " dimensions, expected at most 64");
  t.elements = 1;
  for (const auto& d : *shape) {
    std::uint64_t dim = as_u64(path, where + " shape", d);
    t.shape.push_back(dim);
    if (dim != 0 && t.elements > std::numeric_limits<std::uint64_t>::max() / dim)
      throw FileFormatError(path, where + ": shape " + describe(*shape) + " overflows 64 bits");
    t.elements *= dim;
  }

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
    throw FileFormatError(path, where + ": expected \"data_offsets\": [begin, end], found " +
                                    (offsets == entry.end() ? std::string("none") : describe(*offsets)));
  t.begin = as_u64(path, where + " data_offsets", (*offsets)[0]);
  t.end = as_u64(path, where + " data_offsets", (*offsets)[1]);
  if (t.begin > t.end)
    throw FileFormatError(path, where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                    "] end before they begin");
  if (t.end > data_bytes)
    throw FileFormatError(path, where + ": data_offsets end at " + std::to_string(t.end) +
                                    " but the data section holds only " + std::to_string(data_bytes) +
                                    " bytes (truncated file or corrupt header)");
  if (t.elements > std::numeric_limits<std::uint64_t>::max() / elem)
    throw FileFormatError(path, where + ": shape " + describe(*shape) + " overflows 64 bits");
  if (t.end - t.begin != t.elements * elem)
    throw FileFormatError(path, where + ": shape " + describe(*shape) + " of " + t.dtype + " needs " +
                                    std::to_string(t.elements * elem) + " bytes, but data_offsets span " +
                                    std::to_string(t.end - t.begin));
  return t;
}

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

  std::string text(static_cast<std::size_t>(h.header_bytes), '\0');
  source.read(8, text.data(), text.size(), "JSON header");
  // Writers may pad the header with trailing spaces to align the data section. The reader refuses
  // nesting and any top level but an object at the first token, before parsing the rest.
  JsonLimits limits;
  limits.max_depth = kMaxSafetensorsJsonDepth;
  limits.object_only = true;
  limits.expected = "a safetensors header is an object of tensors, 3 levels deep";
  limits.what = "header";
  json doc = read_json(text, path, limits);

  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it->is_null()) continue;
      if (!it->is_object())
        throw FileFormatError(path, "__metadata__: expected an object of strings, found " + describe(*it));
      // The format says string -> string; some writers store numbers: keep them as text.
      for (auto m = it->begin(); m != it->end(); ++m)
        h.metadata[m.key()] = m->is_string() ? m->get<std::string>() : describe(*m);
      continue;
    }
    h.tensors.push_back(parse_tensor(path, it.key(), *it, h.data_bytes));
  }

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
