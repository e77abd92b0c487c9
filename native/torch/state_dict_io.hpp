#pragma once
// Reading and writing .safetensors files as tensor maps, and shape checks on state dicts.
// ATen only (no torch/torch.h), so any decoder TU can include it cheaply.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace headroom::torch_ops {

// Same type as decode.hpp's StateDict.
using TensorMap = std::map<std::string, at::Tensor>;

// Called with each kept tensor's key, dtype name and shape once the whole header is read and
// before anything is allocated or read: throw to refuse the file.
using TensorCheck = std::function<void(const std::string& key, const std::string& dtype, const std::vector<int64_t>& shape)>;

// Loads every tensor of a .safetensors file (8-byte little-endian header length, JSON header,
// raw data) onto the CPU. `keep` (optional) selects keys, e.g. to skip a VAE's encoder.
// The file is read through the core's FileSource and header parser (a regular file only, opened
// read-only and without blocking; header size and nesting capped; offsets and sizes validated).
// Throws FileFormatError(path, ...) for a truncated file, a bad header, offsets outside the data,
// a size that does not match dtype x shape, or a dtype we cannot represent; Error for a folder,
// FIFO or device.
TensorMap load_safetensors(const std::string& path,
                           const std::function<bool(const std::string&)>& keep = nullptr,
                           const TensorCheck& check = nullptr);

// Writes tensors (made contiguous, moved to the CPU) as a .safetensors file.
void save_safetensors(const std::string& path, const TensorMap& tensors);
// The same into an open file descriptor (see decode_main's safe output files); `path` names it in errors.
void save_safetensors_fd(int fd, const std::string& path, const TensorMap& tensors);

// "[512, 16, 3, 3]"
std::string shape_string(at::IntArrayRef shape);

// The tensor under `key`, checked against `shape` (-1 = any size on that axis) and, when it is a
// floating-point tensor, for NaN and infinite values: the decoders (KL, FLUX.2, Wan) take every weight
// through here. Throws InputError("vae", "... key ... expected [..] found [..]") when missing or
// mismatched, InputError("vae", "'key' contains N NaN or infinite values ...") when not finite.
const at::Tensor& require(const TensorMap& sd, const std::string& key, const std::vector<int64_t>& shape,
                          const std::string& field = "vae");

// True when `key` is present.
inline bool has(const TensorMap& sd, const std::string& key) { return sd.count(key) != 0; }

// Number of consecutive indices i = 0, 1, ... for which `prefix + i + suffix` is a key
// (e.g. count_indexed(sd, "decoder.up.", ".block.0.conv1.weight") = number of levels).
int count_indexed(const TensorMap& sd, const std::string& prefix, const std::string& suffix);

}  // namespace headroom::torch_ops
