#pragma once
// Reads the header of a GGUF v2/v3 file (metadata and tensor infos) without touching tensor data.
// Layout: ggml's docs/gguf.md ("File Structure"): magic "GGUF", u32 version, u64 tensor count,
// u64 metadata count, metadata key/values, tensor infos {name, n_dims, dims, ggml type, offset},
// padding to `general.alignment` (default 32), then the data.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/file_reader.hpp"

namespace headroom {

// Caps checked before anything is allocated (also bounded by the bytes left in the file).
constexpr std::uint64_t kMaxGgufTensors = 1u << 18;  // the largest MoE GGUFs hold a few thousand
constexpr std::uint64_t kMaxGgufKeyValues = 1u << 20;
constexpr std::uint64_t kMaxGgufStringBytes = 64ull << 20;  // tokenizer blobs and chat templates are far smaller
constexpr std::uint64_t kMaxGgufNameBytes = 1u << 16;       // keys and tensor names (ggml itself uses 64)
constexpr std::uint32_t kMaxGgufDims = 4;                   // GGML_MAX_DIMS
constexpr int kMaxGgufArrayNesting = 4;

// One GGML storage type: `block_elements` weights take `block_bytes` bytes.
struct GgmlType {
  std::uint32_t id;
  const char* name;  // ggml's name, lower case: "q8_0", "q4_k", "f16"
  std::uint32_t block_elements;
  std::uint32_t block_bytes;
};

// nullptr when `id` is not a type we know the block layout of.
const GgmlType* ggml_type(std::uint32_t id);

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> ne;  // ggml order: ne[0] is the innermost (contiguous) dimension
  std::vector<std::uint64_t> shape() const { return {ne.rbegin(), ne.rend()}; }  // PyTorch order
  const GgmlType* type = nullptr;
  std::uint64_t offset = 0;  // relative to the data section
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
};

struct GgufHeader {
  std::uint32_t version = 0;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // first byte of the data section
  std::uint64_t header_bytes = 0; // bytes of metadata and tensor infos actually read
  // Scalars and strings as JSON values (long strings cut); arrays as {"type", "length"} plus
  // their values when short.
  nlohmann::json metadata = nlohmann::json::object();
  std::vector<GgufTensor> tensors;  // in file order
};

// Parses and validates; every inconsistency throws FileFormatError(source.name(), ...).
GgufHeader read_gguf_header(ByteSource& source);

}  // namespace headroom
