#include "torch/state_dict_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/safetensors_header.hpp"

namespace headroom::torch_ops {
namespace {

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

TensorMap load_safetensors(const std::string& path, const std::function<bool(const std::string&)>& keep,
                           const TensorCheck& check) {
  FileSource source(path);
  const SafetensorsHeader h = read_safetensors_header(source);
  const std::uint64_t data_start = 8 + h.header_bytes;
  struct Wanted {
    const SafetensorsTensor* t;
    const DtypeInfo* dt;
    std::vector<int64_t> shape;
  };
  std::vector<Wanted> wanted;
  for (const auto& t : h.tensors) {
    if (keep && !keep(t.name)) continue;
    const DtypeInfo* dt = dtype_by_name(t.dtype);
    if (!dt)
      throw FileFormatError(path, "tensor '" + t.name + "': dtype " + t.dtype + " is not supported (use F32, F16 or BF16)");
    std::vector<int64_t> shape;
    for (std::uint64_t d : t.shape) {
      // The header parser proved shape x dtype = the tensor's bytes, all inside the file.
      shape.push_back(static_cast<int64_t>(d));
    }
    wanted.push_back({&t, dt, std::move(shape)});
  }
  if (check)
    for (const auto& w : wanted) check(w.t->name, w.t->dtype, w.shape);
  TensorMap out;
  for (const auto& w : wanted) {
    at::Tensor t = at::empty(w.shape, at::TensorOptions().dtype(w.dt->type));
    if (w.t->end > w.t->begin)
      source.read(data_start + w.t->begin, t.data_ptr(), static_cast<std::size_t>(w.t->end - w.t->begin),
                  "tensor '" + w.t->name + "'");
    out.emplace(w.t->name, std::move(t));
  }
  return out;
}

void save_safetensors_fd(int fd, const std::string& path, const TensorMap& tensors) {
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
  std::string prefix(8, '\0');
  const std::uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>(len >> (8 * i));
  auto put = [&](const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw InputError("out", "failed writing '" + path + "': " + std::strerror(errno) + " (disk full?)");
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  };
  put(prefix.data(), prefix.size());
  put(h.data(), h.size());
  for (const auto& t : ordered) put(t.data_ptr(), static_cast<std::size_t>(t.numel() * t.element_size()));
}

void save_safetensors(const std::string& path, const TensorMap& tensors) {
  // Tests and tools write fixtures here; it never replaces a symlink's target.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw InputError("out", "cannot create '" + path + "': " + std::strerror(errno) +
                                " (check the folder exists and is writable)");
  try {
    save_safetensors_fd(fd, path, tensors);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw InputError("out", "failed writing '" + path + "': " + std::strerror(errno));
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
  // Every decoder takes its weights through here, so one NaN or inf in the file is refused by name
  // instead of turning the whole image into NaN.
  if (at::isFloatingType(t.scalar_type()) && !at::isfinite(t).all().item<bool>()) {
    const auto bad = (~at::isfinite(t)).sum().item<int64_t>();
    throw InputError(field, "'" + key + "' contains " + std::to_string(bad) + " NaN or infinite value" +
                                (bad == 1 ? "" : "s") + " of " + std::to_string(t.numel()) +
                                "; expected finite weights: the VAE file is damaged (a broken download or conversion)");
  }
  return t;
}

int count_indexed(const TensorMap& sd, const std::string& prefix, const std::string& suffix) {
  int n = 0;
  while (sd.count(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

}  // namespace headroom::torch_ops
