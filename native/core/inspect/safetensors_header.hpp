#pragma once
// Reads the header of a .safetensors file without touching its tensor data.
// Layout (https://github.com/huggingface/safetensors, "Format"): 8-byte little-endian header
// length N, then N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {..}},
// then the data; offsets are relative to the first byte after the header.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/file_reader.hpp"

namespace headroom {

// Larger headers are refused before anything is allocated. The biggest real headers (LLMs with
// tens of thousands of tensors) are a few MB; the reference implementation also caps at 100 MB.
constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull * 1000 * 1000;
// JSON nesting deeper than this cannot be a safetensors header (it needs 3 levels).
constexpr int kMaxSafetensorsJsonDepth = 16;
// More tensors than this are refused (FileFormatError naming the limit) as soon as the parser meets the
// one past it, so no header costs more than this many entries. Real checkpoints hold at most a few
// tens of thousands (a 70B LLM in one file: about 700; FLUX.1: about 1,000; a whole SDXL bundle:
// about 2,500), and GGUF has the same cap (kMaxGgufTensors).
constexpr std::uint64_t kMaxSafetensorsTensors = 1u << 18;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                 // as written in the file: "BF16", "F8_E4M3", ...
  std::vector<std::uint64_t> shape;  // PyTorch order
  std::uint64_t elements = 0;
  std::uint64_t begin = 0;           // data_offsets, relative to the data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::uint64_t header_bytes = 0;  // N
  std::uint64_t data_bytes = 0;    // file size - 8 - N
  std::vector<SafetensorsTensor> tensors;  // sorted by name
  nlohmann::json metadata = nlohmann::json::object();  // "__metadata__", string values
};

// Bytes per element of a safetensors dtype, or 0 when the dtype is unknown to us.
std::uint64_t safetensors_dtype_bytes(const std::string& dtype);

// Parses and validates the header from `source` (a file or a buffer). Every inconsistency
// throws FileFormatError(source.name(), what was expected, what was found); a name that appears twice
// is one. The JSON is streamed in 64 KiB pieces and only one tensor's entry exists as a JSON value at
// a time, so memory is the tensor list, not a document of the whole header.
SafetensorsHeader read_safetensors_header(ByteSource& source);

}  // namespace headroom
