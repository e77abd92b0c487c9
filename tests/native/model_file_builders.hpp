#pragma once
// Builders for the .safetensors and .gguf files the inspector tests write themselves.
// Files are written header-first and then extended with resize_file, so tensor data costs no disk.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace testfiles {

using nlohmann::json;

// A fresh directory under the system's temporary folder, removed with everything in it at the end of
// the test. std::filesystem throughout, so the same tests build with MinGW and run under Wine; paths are
// UTF-8 (u8path), as the core takes them.
class TempDir {
 public:
  TempDir() {
    namespace fs = std::filesystem;
    static std::atomic<unsigned> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    for (int attempt = 0; attempt < 100; ++attempt) {
      fs::path p = fs::temp_directory_path() /
                   ("headroom-inspect-" + std::to_string(stamp) + "-" + std::to_string(counter++));
      if (fs::create_directory(p)) {
        path_ = p.u8string();
        return;
      }
    }
    throw std::runtime_error("cannot create a temporary folder");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::u8path(path_), ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `head` and extends the file to `total` bytes (a sparse hole of zeros where the file system has them).
inline void write_file(const std::string& path, const std::string& head, std::uint64_t total) {
  const auto p = std::filesystem::u8path(path);
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot create " + path);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    if (!out) throw std::runtime_error("write failed: " + path);
  }
  if (total > head.size()) std::filesystem::resize_file(p, total);
}
inline void write_file(const std::string& path, const std::string& bytes) { write_file(path, bytes, bytes.size()); }

inline void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// ---- safetensors ----
struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
};

// Element sizes of the safetensors dtypes, written out here independently of the parser.
inline std::uint64_t st_elem_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  return 1;
}

// The header JSON with consecutive data_offsets, and the size of the data section.
inline std::pair<json, std::uint64_t> st_header(const std::vector<StTensor>& tensors, const json& metadata = nullptr) {
  json h = json::object();
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = st_elem_bytes(t.dtype);
    for (auto d : t.shape) n *= d;
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.is_null()) h["__metadata__"] = metadata;
  return {h, offset};
}

// The 8-byte length prefix and the header text; the data follows.
inline std::string st_prefix(const std::string& header_text) {
  std::string out;
  put_le(out, header_text.size(), 8);
  return out + header_text;
}

inline void write_safetensors(const std::string& path, const std::vector<StTensor>& tensors,
                              const json& metadata = nullptr) {
  auto [h, data] = st_header(tensors, metadata);
  std::string head = st_prefix(h.dump());
  write_file(path, head, head.size() + data);
}

// ---- GGUF ----
// ggml type ids (enum ggml_type in ggml.h) and block layouts (ggml-common.h) used by the tests.
enum GgmlId : std::uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10,
                              Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, BF16 = 30 };

class Gguf {
 public:
  explicit Gguf(std::uint32_t version = 3, std::uint64_t alignment = 32) : version_(version), alignment_(alignment) {}

  static void str(std::string& out, const std::string& s) {
    put_le(out, s.size(), 8);
    out += s;
  }
  // A raw key/value: the caller writes the value bytes (after the u32 type).
  Gguf& kv_raw(const std::string& key, std::uint32_t type, const std::string& value) {
    str(kvs_, key);
    put_le(kvs_, type, 4);
    kvs_ += value;
    ++kv_count_;
    return *this;
  }
  Gguf& kv_string(const std::string& key, const std::string& v) {
    std::string b;
    str(b, v);
    return kv_raw(key, 8, b);
  }
  Gguf& kv_u32(const std::string& key, std::uint32_t v) {
    std::string b;
    put_le(b, v, 4);
    return kv_raw(key, 4, b);
  }
  Gguf& kv_f32(const std::string& key, float v) {
    std::string b;
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    put_le(b, bits, 4);
    return kv_raw(key, 6, b);
  }
  Gguf& kv_string_array(const std::string& key, const std::vector<std::string>& values) {
    std::string b;
    put_le(b, 8, 4);
    put_le(b, values.size(), 8);
    for (const auto& v : values) str(b, v);
    return kv_raw(key, 9, b);
  }
  // A tensor: ne in ggml order (ne[0] innermost); `bytes` is its size in the data section.
  Gguf& tensor(const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type, std::uint64_t bytes) {
    tensors_.push_back({name, std::move(ne), type, next_offset_, bytes});
    next_offset_ += (bytes + alignment_ - 1) / alignment_ * alignment_;
    return *this;
  }
  // The tensor table only: lets a test corrupt single fields.
  struct Info {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type;
    std::uint64_t offset;
    std::uint64_t bytes;
  };
  std::vector<Info>& infos() { return tensors_; }

  // Header bytes up to (and including) the alignment padding, and the full file size.
  std::pair<std::string, std::uint64_t> build(std::uint64_t tensor_count_override = UINT64_MAX) const {
    std::string out = "GGUF";
    put_le(out, version_, 4);
    put_le(out, tensor_count_override != UINT64_MAX ? tensor_count_override : tensors_.size(), 8);
    put_le(out, kv_count_, 8);
    out += kvs_;
    for (const auto& t : tensors_) {
      str(out, t.name);
      put_le(out, t.ne.size(), 4);
      for (auto d : t.ne) put_le(out, d, 8);
      put_le(out, t.type, 4);
      put_le(out, t.offset, 8);
    }
    while (out.size() % alignment_) out.push_back('\0');
    std::uint64_t data = 0;
    for (const auto& t : tensors_) data = std::max(data, t.offset + t.bytes);
    return {out, out.size() + data};
  }
  void write(const std::string& path) const {
    auto [head, total] = build();
    write_file(path, head, total);
  }

 private:
  std::uint32_t version_;
  std::uint64_t alignment_;
  std::string kvs_;
  std::uint64_t kv_count_ = 0;
  std::vector<Info> tensors_;
  std::uint64_t next_offset_ = 0;
};

// ---- 2026 layouts (FLUX.2, its text encoders, ComfyUI's per-layer quantised formats) ----

// How a Linear weight [out, in] is stored in ComfyUI's quantised files (comfy/quant_ops.py layouts):
// Bf16: one BF16 tensor. Fp8Mixed: F8_E4M3 weight + F32 scalar weight_scale and input_scale + a
// '.comfy_quant' U8 marker (its JSON sits in the data). Nvfp4: U8 [out, in/2] (two E2M1 values per
// byte) + F8_E4M3 weight_scale [out, in/16] + F32 weight_scale_2 and input_scale. Mxfp8: F8_E4M3
// weight + F8_E8M0 weight_scale [out, in/32].
enum class Store { Bf16, F16, Fp8Mixed, Nvfp4, Mxfp8 };

inline void add_linear(std::vector<StTensor>& t, const std::string& layer, std::uint64_t out, std::uint64_t in, Store s,
                       bool marker = true) {
  switch (s) {
    case Store::Bf16: t.push_back({layer + ".weight", "BF16", {out, in}}); return;
    case Store::F16: t.push_back({layer + ".weight", "F16", {out, in}}); return;
    case Store::Fp8Mixed:
      t.push_back({layer + ".weight", "F8_E4M3", {out, in}});
      t.push_back({layer + ".weight_scale", "F32", {}});
      t.push_back({layer + ".input_scale", "F32", {}});
      if (marker) t.push_back({layer + ".comfy_quant", "U8", {32}});
      return;
    case Store::Nvfp4:
      t.push_back({layer + ".weight", "U8", {out, in / 2}});
      t.push_back({layer + ".weight_scale", "F8_E4M3", {out, in / 16}});
      t.push_back({layer + ".weight_scale_2", "F32", {}});
      t.push_back({layer + ".input_scale", "F32", {}});
      return;
    case Store::Mxfp8:
      t.push_back({layer + ".weight", "F8_E4M3", {out, in}});
      t.push_back({layer + ".weight_scale", "F8_E8M0", {out, in / 32}});
      return;
  }
}

// A FLUX.2 DiT in Black Forest Labs' key names (flux2 src/flux2/model.py, as ComfyUI loads them):
// no biases, SwiGLU MLPs (gate+up fused, ratio 3), shared modulations, QK RMSNorm scales of 128.
// `blocks` stores the double/single blocks' linears, `edges` everything else (ComfyUI's mixed
// files keep the input, modulation and output layers 16 bit; which ones exactly is our choice).
inline std::vector<StTensor> flux2_dit(std::uint64_t d, std::uint64_t txt, int doubles, int singles, bool guidance,
                                       Store blocks = Store::Bf16, Store edges = Store::Bf16, const std::string& prefix = "") {
  std::vector<StTensor> t;
  const std::uint64_t m = 3 * d;
  auto lin = [&](const std::string& name, std::uint64_t out, std::uint64_t in, Store s) { add_linear(t, prefix + name, out, in, s); };
  lin("img_in", d, 128, edges);
  lin("txt_in", d, txt, edges);
  lin("time_in.in_layer", d, 256, edges);
  lin("time_in.out_layer", d, d, edges);
  if (guidance) {
    lin("guidance_in.in_layer", d, 256, edges);
    lin("guidance_in.out_layer", d, d, edges);
  }
  lin("double_stream_modulation_img.lin", 6 * d, d, edges);
  lin("double_stream_modulation_txt.lin", 6 * d, d, edges);
  lin("single_stream_modulation.lin", 3 * d, d, edges);
  for (int i = 0; i < doubles; ++i)
    for (const char* side : {"img", "txt"}) {
      const std::string b = "double_blocks." + std::to_string(i) + "." + side;
      lin(b + "_attn.qkv", 3 * d, d, blocks);
      lin(b + "_attn.proj", d, d, blocks);
      t.push_back({prefix + b + "_attn.norm.query_norm.scale", "BF16", {128}});
      t.push_back({prefix + b + "_attn.norm.key_norm.scale", "BF16", {128}});
      lin(b + "_mlp.0", 2 * m, d, blocks);
      lin(b + "_mlp.2", d, m, blocks);
    }
  for (int i = 0; i < singles; ++i) {
    const std::string b = "single_blocks." + std::to_string(i);
    lin(b + ".linear1", 3 * d + 2 * m, d, blocks);
    lin(b + ".linear2", d, d + m, blocks);
    t.push_back({prefix + b + ".norm.query_norm.scale", "BF16", {128}});
    t.push_back({prefix + b + ".norm.key_norm.scale", "BF16", {128}});
  }
  lin("final_layer.adaLN_modulation.1", 2 * d, d, edges);
  lin("final_layer.linear", 128, d, edges);
  return t;
}

// A Llama-style decoder as ComfyUI's text-encoder files hold it (model.layers.N.*, Qwen3 with q/k
// norms). `linears` stores the attention and MLP projections.
inline std::vector<StTensor> llm_text_encoder(std::uint64_t d, int layers, std::uint64_t ffn, std::uint64_t q_heads,
                                              std::uint64_t kv_heads, std::uint64_t vocab, bool qk_norm, bool lm_head,
                                              Store linears = Store::Bf16, const std::string& dtype16 = "BF16") {
  std::vector<StTensor> t;
  const std::uint64_t hd = 128;
  t.push_back({"model.embed_tokens.weight", dtype16, {vocab, d}});
  for (int i = 0; i < layers; ++i) {
    const std::string b = "model.layers." + std::to_string(i) + ".";
    add_linear(t, b + "self_attn.q_proj", q_heads * hd, d, linears);
    add_linear(t, b + "self_attn.k_proj", kv_heads * hd, d, linears);
    add_linear(t, b + "self_attn.v_proj", kv_heads * hd, d, linears);
    add_linear(t, b + "self_attn.o_proj", d, q_heads * hd, linears);
    if (qk_norm) {
      t.push_back({b + "self_attn.q_norm.weight", dtype16, {hd}});
      t.push_back({b + "self_attn.k_norm.weight", dtype16, {hd}});
    }
    add_linear(t, b + "mlp.gate_proj", ffn, d, linears);
    add_linear(t, b + "mlp.up_proj", ffn, d, linears);
    add_linear(t, b + "mlp.down_proj", d, ffn, linears);
    t.push_back({b + "input_layernorm.weight", dtype16, {d}});
    t.push_back({b + "post_attention_layernorm.weight", dtype16, {d}});
  }
  t.push_back({"model.norm.weight", dtype16, {d}});
  if (lm_head) t.push_back({"lm_head.weight", dtype16, {vocab, d}});
  return t;
}

// Stored bytes of a tensor list, from the element sizes above (scalars hold one element).
inline std::uint64_t st_bytes(const std::vector<StTensor>& tensors) {
  std::uint64_t total = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = st_elem_bytes(t.dtype);
    for (auto d : t.shape) n *= d;
    total += n;
  }
  return total;
}

}  // namespace testfiles
