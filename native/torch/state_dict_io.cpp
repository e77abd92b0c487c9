#include "torch/state_dict_io.hpp"

#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace headroom::torch_ops {
namespace {

// Headers above this are not VAE/latent files; refuse before allocating (real ones are < 1 MiB).
constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  int bytes;
};
const DtypeInfo kDtypes[] = {
    {"F32", at::kFloat, 4}, {"F16", at::kHalf, 2},   {"BF16", at::kBFloat16, 2}, {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},  {"I32", at::kInt, 4},    {"I16", at::kShort, 2},     {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},   {"BOOL", at::kBool, 1},
};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}
const DtypeInfo* dtype_by_type(at::ScalarType t) {
  for (const auto& d : kDtypes)
    if (t == d.type) return &d;
  return nullptr;
}

}  // namespace

std::string shape_string(at::IntArrayRef shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

TensorMap load_safetensors(const std::string& path, const std::function<bool(const std::string&)>& keep) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileFormatError(path, "cannot open the file (check the path and permissions)");
  in.seekg(0, std::ios::end);
  const std::uint64_t file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) throw FileFormatError(path, "not a safetensors file: shorter than its 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > kMaxHeaderBytes || header_len > file_size - 8)
    throw FileFormatError(path, "not a safetensors file: header length " + std::to_string(header_len) +
                                    " exceeds the file (" + std::to_string(file_size) + " bytes)");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const std::exception& e) {
    throw FileFormatError(path, std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw FileFormatError(path, "safetensors header is not a JSON object");
  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start;

  TensorMap out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "__metadata__") continue;
    if (keep && !keep(key)) continue;
    const auto& e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
        !e["dtype"].is_string() || !e["shape"].is_array() || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2)
      throw FileFormatError(path, "tensor '" + key + "': header entry needs dtype, shape and data_offsets [begin, end]");
    const std::string dname = e["dtype"].get<std::string>();
    const DtypeInfo* dt = dtype_by_name(dname);
    if (!dt) throw FileFormatError(path, "tensor '" + key + "': dtype " + dname + " is not supported (use F32, F16 or BF16)");
    std::vector<int64_t> shape;
    std::uint64_t numel = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
        throw FileFormatError(path, "tensor '" + key + "': shape entries must be non-negative integers");
      const std::uint64_t v = d.get<std::uint64_t>();
      if (v != 0 && numel > (data_size + 1) / v + 1)
        throw FileFormatError(path, "tensor '" + key + "': shape is larger than the file");
      numel *= v;
      shape.push_back(static_cast<int64_t>(v));
    }
    const auto& offs = e["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      throw FileFormatError(path, "tensor '" + key + "': data_offsets must be non-negative integers");
    const std::uint64_t b = offs[0].get<std::uint64_t>(), en = offs[1].get<std::uint64_t>();
    if (b > en || en > data_size)
      throw FileFormatError(path, "tensor '" + key + "': data_offsets [" + std::to_string(b) + ", " + std::to_string(en) +
                                      "] fall outside the data section (" + std::to_string(data_size) + " bytes)");
    if (en - b != numel * static_cast<std::uint64_t>(dt->bytes))
      throw FileFormatError(path, "tensor '" + key + "': " + std::to_string(en - b) + " bytes of data for " + dname + " " +
                                      shape_string(shape) + " (expected " + std::to_string(numel * dt->bytes) + ")");
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dt->type));
    if (en > b) {
      in.seekg(static_cast<std::streamoff>(data_start + b));
      in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(en - b));
      if (!in) throw FileFormatError(path, "tensor '" + key + "': file ended while reading its data");
    }
    out.emplace(key, std::move(t));
  }
  return out;
}

void save_safetensors(const std::string& path, const TensorMap& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<at::Tensor> ordered;
  std::uint64_t offset = 0;
  for (const auto& [key, t0] : tensors) {
    at::Tensor t = t0.to(at::kCPU).contiguous();
    const DtypeInfo* dt = dtype_by_type(t.scalar_type());
    if (!dt) throw InputError(key, "cannot write dtype " + std::string(c10::toString(t.scalar_type())) + " to safetensors");
    const std::uint64_t n = static_cast<std::uint64_t>(t.numel()) * dt->bytes;
    header[key] = {{"dtype", dt->name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
    ordered.push_back(t);
  }
  std::string h = header.dump();
  while (h.size() % 8) h.push_back(' ');  // the format aligns the data section to 8 bytes
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError("out", "cannot create '" + path + "' (check the folder exists and is writable)");
  unsigned char len_bytes[8];
  std::uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(len >> (8 * i));
  out.write(reinterpret_cast<const char*>(len_bytes), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : ordered)
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
  if (!out) throw InputError("out", "failed writing '" + path + "' (disk full?)");
}

const at::Tensor& require(const TensorMap& sd, const std::string& key, const std::vector<int64_t>& shape,
                          const std::string& field) {
  auto it = sd.find(key);
  if (it == sd.end())
    throw InputError(field, "state dict is missing '" + key + "' (expected shape " + shape_string(shape) +
                                "); is this the right VAE file, complete and not truncated?");
  const at::Tensor& t = it->second;
  bool ok = t.dim() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || t.size(static_cast<int64_t>(i)) == shape[i];
  if (!ok)
    throw InputError(field, "'" + key + "' has shape " + shape_string(t.sizes()) + ", expected " + shape_string(shape) +
                                " (-1 = any); the VAE file does not match the architecture its other tensors imply");
  return t;
}

int count_indexed(const TensorMap& sd, const std::string& prefix, const std::string& suffix) {
  int n = 0;
  while (sd.count(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

}  // namespace headroom::torch_ops
