// The 2026 catalog entries against header-only files in the real key layouts: FLUX.2 dev and klein,
// their text encoders and VAE, Wan VACE / Animate / S2V / Fun / ATI, and ComfyUI's per-layer quantised
// formats (fp8mixed, nvfp4, mxfp8). Large DiTs are read through a source that holds only the header
// and reads zeros after it, so a 64 GB model costs nothing; the VAEs are real sparse files.

#include <cmath>
#include <cstring>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/base/data_files.hpp"
#include "core/base/file_reader.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/inspector.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The header bytes, then `size` bytes in all, zeros after the header.
class HeaderSource : public ByteSource {
 public:
  HeaderSource(std::string name, std::string head, std::uint64_t size)
      : name_(std::move(name)), head_(std::move(head)), size_(size) {}
  const std::string& name() const override { return name_; }
  std::uint64_t size() const override { return size_; }

 protected:
  void read_raw(std::uint64_t offset, void* dst, std::size_t n) override {
    auto* out = static_cast<unsigned char*>(dst);
    std::memset(out, 0, n);
    if (offset < head_.size()) std::memcpy(out, head_.data() + offset, std::min<std::size_t>(n, head_.size() - offset));
  }

 private:
  std::string name_, head_;
  std::uint64_t size_;
};

Inspection inspect_layout(const std::string& file_name, const std::vector<StTensor>& tensors, const json& meta = nullptr) {
  auto [h, data] = st_header(tensors, meta);
  std::string head = st_prefix(h.dump());
  HeaderSource src(file_name, head, head.size() + data);
  return summarise(read_model_file(src), data_file("models.json"));
}

// FLUX.2 shapes (hidden, txt_in width = 3 stacked text-encoder layers, double and single blocks):
// black-forest-labs/flux2 src/flux2/model.py; klein configs per ../shared/facts/comfyui-2026.md §2.2.
std::vector<StTensor> dev(Store blocks = Store::Bf16, Store edges = Store::Bf16) { return flux2_dit(6144, 15360, 8, 48, true, blocks, edges); }
std::vector<StTensor> klein4(Store blocks = Store::Bf16) { return flux2_dit(3072, 7680, 5, 20, false, blocks); }
std::vector<StTensor> klein9(Store blocks = Store::Bf16) { return flux2_dit(4096, 12288, 8, 24, false, blocks); }

// Parameters of the double and single blocks' linears only: a double block has 2 x (qkv 3d^2 +
// proj d^2 + mlp 6d^2 + 3d^2) = 26 d^2, a single block linear1 9d^2 + linear2 4d^2 = 13 d^2.
std::uint64_t block_linear_params(std::uint64_t d, int doubles, int singles) {
  return static_cast<std::uint64_t>(doubles) * 26 * d * d + static_cast<std::uint64_t>(singles) * 13 * d * d;
}

// FLUX.1 in its own key names (black-forest-labs/flux): 19 double + 38 single blocks, img_in 64 -> 3072.
std::vector<StTensor> flux1_dev() {
  std::vector<StTensor> t = {{"img_in.weight", "BF16", {3072, 64}}, {"guidance_in.in_layer.weight", "BF16", {3072, 256}}};
  for (int i = 0; i < 19; ++i) {
    t.push_back({"double_blocks." + std::to_string(i) + ".img_attn.qkv.weight", "BF16", {9216, 3072}});
    t.push_back({"double_blocks." + std::to_string(i) + ".img_attn.norm.key_norm.scale", "BF16", {128}});
  }
  for (int i = 0; i < 38; ++i) t.push_back({"single_blocks." + std::to_string(i) + ".linear1.weight", "BF16", {21504, 3072}});
  return t;
}

// Wan keys of ComfyUI's model_detection: blocks.N.ffn.0, head.modulation, patch_embedding, plus extras.
std::vector<StTensor> wan(std::uint64_t dim, std::uint64_t ffn, int layers, std::uint64_t in_dim, std::vector<StTensor> extra = {}) {
  std::vector<StTensor> t = {{"patch_embedding.weight", "F16", {dim, in_dim, 1, 2, 2}}, {"head.modulation", "F32", {1, 2, dim}}};
  for (int i = 0; i < layers; ++i) t.push_back({"blocks." + std::to_string(i) + ".ffn.0.weight", "F16", {ffn, dim}});
  for (auto& e : extra) t.push_back(std::move(e));
  return t;
}

std::vector<StTensor> vace_blocks(std::uint64_t dim, int n) {
  std::vector<StTensor> t = {{"vace_patch_embedding.weight", "F16", {dim, 96, 1, 2, 2}}};
  for (int i = 0; i < n; ++i) t.push_back({"vace_blocks." + std::to_string(i) + ".after_proj.weight", "F16", {dim, dim}});
  return t;
}

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("inspect 2026: FLUX.2 dev bf16 is flux2-dev with its 32.2 B parameters", "[inspect][2026]") {
  auto i = inspect_layout("flux2-dev.safetensors", dev());
  CHECK(i.whole.model == "flux2-dev");
  CHECK(i.whole.role == "diffusion_model");
  CHECK(i.whole.precision == "bf16");
  CHECK(i.whole.candidates.empty());
  // [E] 32,223,281,152 = the analytic count of BFL's model.py in ../shared/facts/comfyui-2026.md §2.1,
  // "FLUX.2[dev]-32B" in https://huggingface.co/blog/flux-2; the catalog gives the same figure.
  CHECK(i.whole.parameters == 32223281152ull);
  CHECK(i.whole.parameters == resolve_model("flux2-dev").params);
  CHECK(i.whole.weight_gpu_bytes == 2 * 32223281152ull);
}

TEST_CASE("inspect 2026: a FLUX.2 file is never FLUX.1, whatever its name", "[inspect][2026]") {
  for (const char* name : {"flux1-dev.safetensors", "flux1-dev-kontext_fp8_scaled.safetensors", "model.safetensors"}) {
    INFO(name);
    auto i = inspect_layout(name, dev());
    CHECK(i.whole.model == "flux2-dev");
    CHECK_FALSE(lists(i.whole.candidates, "flux1-dev"));
  }
  // Klein has no guidance embedder, like schnell, and still is not FLUX.1.
  auto k = inspect_layout("flux1-schnell.safetensors", klein4());
  CHECK(k.whole.model.rfind("flux2-klein", 0) == 0);
  // And a FLUX.1 file is never FLUX.2, even named like one.
  for (const char* name : {"flux2_dev_fp8mixed.safetensors", "flux-2-klein-4b.safetensors"}) {
    INFO(name);
    auto f1 = inspect_layout(name, flux1_dev());
    CHECK(f1.whole.model == "flux1-dev");
    for (const auto& c : f1.whole.candidates) CHECK(c.rfind("flux2", 0) != 0);
  }
}

TEST_CASE("inspect 2026: klein 4B and 9B by block count, base and distilled by file name", "[inspect][2026]") {
  // ComfyUI's template file names (Comfy-Org/workflow_templates image_flux2_klein_*.json).
  auto d4 = inspect_layout("flux-2-klein-4b-fp8.safetensors", klein4());
  CHECK(d4.whole.model == "flux2-klein-4b");
  CHECK(d4.whole.candidates == std::vector<std::string>{"flux2-klein-base-4b"});
  auto b4 = inspect_layout("flux-2-klein-base-4b.safetensors", klein4());
  CHECK(b4.whole.model == "flux2-klein-base-4b");
  auto b9 = inspect_layout("flux-2-klein-base-9b-fp8.safetensors", klein9());
  CHECK(b9.whole.model == "flux2-klein-base-9b");
  auto d9 = inspect_layout("flux-2-klein-9b.safetensors", klein9());
  CHECK(d9.whole.model == "flux2-klein-9b");
  // A 9B file named like a 4B one is still the 9B: keys decide, names only break ties.
  CHECK(inspect_layout("flux-2-klein-4b.safetensors", klein9()).whole.model == "flux2-klein-9b");
  // [E] 3.88 B and 9.08 B (facts comfyui-2026.md §2.2).
  CHECK(d4.whole.parameters == 3875544576ull);
  CHECK(d9.whole.parameters == 9078581248ull);
  // ComfyUI log "17316.02 MB loaded" for klein 9B in bf16 (Comfy-Org/ComfyUI issue #13139, 2026-06-06).
  CHECK(std::fabs(static_cast<double>(d9.whole.weight_gpu_bytes) / kMiB - 17316.02) < 0.01);
  // The base model samples 20 steps at CFG 5, the distilled one 4 steps at CFG 1 (the templates).
  CHECK((*resolve_model("flux2-klein-base-9b").data)["defaults"]["cfg"] == 5.0);
  CHECK((*resolve_model("flux2-klein-9b").data)["defaults"]["cfg"] == 1.0);
}

TEST_CASE("inspect 2026: flux2_dev_fp8mixed with per-layer fp8 and 16-bit edges", "[inspect][2026]") {
  auto t = dev(Store::Fp8Mixed, Store::Bf16);
  auto i = inspect_layout("flux2_dev_fp8mixed.safetensors", t);
  CHECK(i.whole.model == "flux2-dev");
  CHECK(i.whole.precision == "fp8mixed");
  CHECK(i.whole.parameters == 32223281152ull);  // scales and markers are not parameters
  CHECK(i.whole.weight_gpu_bytes == st_bytes(t));  // every tensor stays as stored
  const std::uint64_t fp8_params = block_linear_params(6144, 8, 48);
  CHECK(i.whole.dtype_mix.at("fp8_e4m3fn").parameters == fp8_params);
  // ComfyUI stages the real file as 33813 MB (Comfy-Org/ComfyUI PR #12658): more than this layout,
  // which keeps only the edges 16 bit, and far less than bf16.
  const double mib = static_cast<double>(i.whole.weight_gpu_bytes) / kMiB;
  CHECK(mib < 33813.0);
  CHECK(mib > static_cast<double>(32223281152ull) / kMiB);
  CHECK(33813.0 * kMiB < 2.0 * 32223281152.0);
  // The largest layer is dequantised to bf16 while it runs: single-block linear1 (3d + 6d) x d.
  CHECK(i.whole.dequant_transient_bytes == 9ull * 6144 * 6144 * 2);
}

TEST_CASE("inspect 2026: nvfp4 counts two values per byte and 9 bytes per 16 with scales", "[inspect][2026]") {
  auto t = klein9(Store::Nvfp4);
  auto i = inspect_layout("flux-2-klein-9b-nvfp4.safetensors", t);
  CHECK(i.whole.model == "flux2-klein-9b");
  CHECK(i.whole.precision == "nvfp4");
  CHECK(i.whole.parameters == 9078581248ull);
  const std::uint64_t packed = block_linear_params(4096, 8, 24);
  CHECK(i.whole.dtype_mix.at("u8").parameters == packed);
  CHECK(i.whole.dtype_mix.at("u8").bytes == packed / 2);
  // NVFP4: 4-bit values + one e4m3 scale per 16 (NVIDIA's NVFP4 blog, cited in models.json) = 9 bytes per
  // 16 elements; the fp32 per-tensor scales (weight_scale_2, input_scale) are 8 bytes per layer on top.
  const PrecisionInfo& nv = resolve_precision("nvfp4");
  CHECK(nv.bytes_for(16) == 9);
  CHECK(i.whole.dtype_mix.at("u8").bytes + i.whole.dtype_mix.at("fp8_e4m3fn").bytes == nv.bytes_for(packed));
  const std::uint64_t linears = 8 * 8 + 24 * 2;
  CHECK(i.whole.dtype_mix.at("fp32").bytes == linears * 8);
  CHECK(i.whole.weight_gpu_bytes == st_bytes(t));
}

TEST_CASE("inspect 2026: mxfp8 (e4m3 + one e8m0 scale per 32)", "[inspect][2026]") {
  auto i = inspect_layout("flux-2-klein-4b-mxfp8.safetensors", klein4(Store::Mxfp8));
  CHECK(i.whole.model == "flux2-klein-4b");
  CHECK(i.whole.precision == "mxfp8");
  CHECK(i.whole.parameters == 3875544576ull);
  const std::uint64_t q = block_linear_params(3072, 5, 20);
  // OCP MX spec: 32 fp8 elements + one 8-bit shared exponent = 33 bytes.
  CHECK(resolve_precision("mxfp8").bytes_for(32) == 33);
  CHECK(i.whole.dtype_mix.at("fp8_e4m3fn").bytes + i.whole.dtype_mix.at("fp8_e8m0fnu").bytes == resolve_precision("mxfp8").bytes_for(q));
}

TEST_CASE("inspect 2026: FLUX.2 text encoders", "[inspect][2026]") {
  // Mistral Small 3.2 24B (d 5120, ffn 32768, 32 q / 8 kv heads, vocab 131072): ComfyUI's FLUX.2 files
  // hold the 30-layer prune (comfy/sd.py: no model.layers.39 -> MISTRAL3_24B_PRUNED_FLUX2).
  auto m = inspect_layout("mistral_3_small_flux2_bf16.safetensors", llm_text_encoder(5120, 30, 32768, 32, 8, 131072, false, false));
  CHECK(m.whole.model == "mistral-small-3.2-24b");
  CHECK(m.whole.role == "text_encoder");
  CHECK(m.whole.parameters == resolve_model("mistral-small-3.2-24b").params);
  // The full 40-layer model (+ lm_head) is the same encoder: 23.57 B [E] (facts comfyui-2026.md §2.1).
  auto full = inspect_layout("mistral-small-3.2.safetensors", llm_text_encoder(5120, 40, 32768, 32, 8, 131072, false, true));
  CHECK(full.whole.model == "mistral-small-3.2-24b");
  CHECK(full.whole.parameters == 23572403200ull);

  auto q4 = inspect_layout("qwen_3_4b.safetensors", llm_text_encoder(2560, 36, 9728, 32, 8, 151936, true, false));
  CHECK(q4.whole.model == "qwen3-4b");
  CHECK(q4.whole.parameters == 4022468096ull);  // [E] 4.02 B (facts §2.2)
  auto q8 = inspect_layout("qwen_3_8b_fp16.safetensors", llm_text_encoder(4096, 36, 12288, 32, 8, 151936, true, true, Store::F16, "F16"));
  CHECK(q8.whole.model == "qwen3-8b");
  CHECK(q8.whole.precision == "fp16");
  // ComfyUI log "15622.59 MB loaded" for the Qwen3-8B fp16 text encoder (issue #13139, 2026-06-06).
  CHECK(std::fabs(static_cast<double>(q8.whole.weight_gpu_bytes) / kMiB - 15622.59) < 0.01);
  // The 4B and 8B are told apart by width, never confused with Mistral (no q_norm there).
  CHECK_FALSE(lists(q8.whole.candidates, "qwen3-4b"));
  CHECK_FALSE(lists(m.whole.candidates, "qwen3-8b"));
}

TEST_CASE("inspect 2026: fp8mixed named in _quantization_metadata instead of markers", "[inspect][2026]") {
  auto t = llm_text_encoder(4096, 36, 12288, 32, 8, 151936, true, true, Store::Fp8Mixed);
  json layers = json::object();
  std::vector<StTensor> kept;
  for (const auto& x : t) {
    if (x.name.size() > 12 && x.name.compare(x.name.size() - 12, 12, ".comfy_quant") == 0) {
      layers[x.name.substr(0, x.name.size() - 12)] = {{"format", "float8_e4m3fn"}};
      continue;
    }
    kept.push_back(x);
  }
  json meta = {{"_quantization_metadata", json{{"format_version", "1.0"}, {"layers", layers}}.dump()}};
  auto i = inspect_layout("qwen_3_8b_fp8mixed.safetensors", kept, meta);
  CHECK(i.whole.model == "qwen3-8b");
  CHECK(i.whole.precision == "fp8mixed");
  CHECK(i.whole.parameters == 8190735360ull);
  CHECK(i.whole.weight_gpu_bytes == st_bytes(kept));
}

TEST_CASE("inspect 2026: the FLUX.2 VAE and FLUX.1's ae stay apart (real sparse files)", "[inspect][2026]") {
  TempDir dir;
  // FLUX.2 AutoEncoder names (flux2 src/flux2/autoencoder.py): z 32, quant convs, a 128-channel BatchNorm.
  const std::vector<StTensor> v2 = {{"decoder.conv_in.weight", "F32", {512, 32, 3, 3}},
                                    {"decoder.up.3.block.2.conv2.weight", "F32", {128, 128, 3, 3}},
                                    {"encoder.conv_out.weight", "F32", {64, 512, 3, 3}},
                                    {"quant_conv.weight", "F32", {64, 64, 1, 1}},
                                    {"post_quant_conv.weight", "F32", {32, 32, 1, 1}},
                                    {"bn.running_mean", "F32", {128}},
                                    {"bn.running_var", "F32", {128}}};
  const std::vector<StTensor> v1 = {{"decoder.conv_in.weight", "F32", {512, 16, 3, 3}},
                                    {"decoder.up.3.block.2.conv2.weight", "F32", {128, 128, 3, 3}},
                                    {"encoder.conv_out.weight", "F32", {32, 512, 3, 3}}};
  for (const char* name : {"flux2-vae.safetensors", "ae.safetensors", "full_encoder_small_decoder.safetensors"}) {
    INFO(name);
    write_safetensors(dir.file(name), v2);
    CHECK(inspect_file(dir.file(name)).whole.model == "flux2-vae");
  }
  write_safetensors(dir.file("flux2-vae-copy.safetensors"), v1);
  CHECK(inspect_file(dir.file("flux2-vae-copy.safetensors")).whole.model == "flux-vae");
}

TEST_CASE("inspect 2026: Wan VACE is never plain Wan 2.1 T2V", "[inspect][2026]") {
  // VACE 14B: 8 VACE blocks, 1.3B: 15 (ComfyUI VaceWanModel / model_detection vace_layers).
  for (const char* name : {"wan2.1_vace_14B_fp16.safetensors", "wan2.1_t2v_14B_fp16.safetensors", "model.safetensors"}) {
    INFO(name);
    auto i = inspect_layout(name, wan(5120, 13824, 40, 16, vace_blocks(5120, 8)));
    CHECK(i.whole.model == "wan2.1-vace-14b");
    CHECK_FALSE(lists(i.whole.candidates, "wan2.1-t2v-14b"));
  }
  auto s = inspect_layout("wan2.1_vace_1.3B_fp16.safetensors", wan(1536, 8960, 30, 16, vace_blocks(1536, 15)));
  CHECK(s.whole.model == "wan2.1-vace-1.3b");
  // The plain T2V file stays T2V.
  CHECK(inspect_layout("wan2.1_t2v_14B_fp16.safetensors", wan(5120, 13824, 40, 16)).whole.model == "wan2.1-t2v-14b");
}

TEST_CASE("inspect 2026: Wan 2.2 Animate, S2V, Fun and ATI", "[inspect][2026]") {
  // Marker keys of ComfyUI's model_detection: face_adapter (animate), casual_audio_encoder (s2v).
  auto a = inspect_layout("Wan2_2-Animate-14B_fp8_e4m3fn_scaled_KJ.safetensors",
                          wan(5120, 13824, 40, 36,
                              {{"face_adapter.fuser_blocks.0.k_norm.weight", "F16", {128}},
                               {"pose_patch_embedding.weight", "F16", {5120, 16, 1, 2, 2}},
                               {"img_emb.proj.0.weight", "F16", {1280}}}));
  CHECK(a.whole.model == "wan2.2-animate-14b");
  auto s = inspect_layout("wan2.2_s2v_14B_fp8_scaled.safetensors",
                          wan(5120, 13824, 40, 16,
                              {{"casual_audio_encoder.encoder.final_linear.weight", "F16", {5120, 5120}},
                               {"cond_encoder.weight", "F16", {5120, 16, 1, 2, 2}}}));
  CHECK(s.whole.model == "wan2.2-s2v-14b");
  CHECK_FALSE(lists(s.whole.candidates, "wan2.1-t2v-14b"));
  // Fun Control: in_dim 52 = 16 noise + 16 control + 4 mask + 16 start image (Wan22FunControlToVideo).
  CHECK(inspect_layout("wan2.2_fun_control_high_noise_14B_fp8_scaled.safetensors", wan(5120, 13824, 40, 52)).whole.model ==
        "wan2.2-fun-control-a14b");
  // Fun Inpaint has Wan 2.2 I2V's signature: the name decides.
  auto fi = inspect_layout("wan2.2_fun_inpaint_high_noise_14B_fp8_scaled.safetensors", wan(5120, 13824, 40, 36));
  CHECK(fi.whole.model == "wan2.2-fun-inpaint-a14b");
  CHECK(fi.whole.candidates == std::vector<std::string>{"wan2.2-i2v-a14b"});
  CHECK(inspect_layout("wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors", wan(5120, 13824, 40, 36)).whole.model ==
        "wan2.2-i2v-a14b");
  // ATI is Wan 2.1 I2V 14B with other weights: the template's file name decides.
  auto i2v = wan(5120, 13824, 40, 36, {{"img_emb.proj.0.weight", "F16", {1280}}});
  CHECK(inspect_layout("Wan2_1-I2V-ATI-14B_fp8_e4m3fn.safetensors", i2v).whole.model == "wan2.1-ati-14b");
  CHECK(inspect_layout("wan2.1_i2v_480p_14B_fp16.safetensors", i2v).whole.model == "wan2.1-i2v-14b");
}

TEST_CASE("catalog 2026: new precisions and their hardware notes", "[catalog][2026]") {
  for (const char* p : {"fp8mixed", "nvfp4", "mxfp8", "int8"}) {
    INFO(p);
    const PrecisionInfo& info = resolve_precision(p);
    CHECK(info.quantised());
    CHECK(info.bytes_for(1600) <= 1650);  // at most 8 bits and a scale per value
  }
  CHECK(resolve_precision("nvfp4").bytes_for(9078581248ull) == 9078581248ull / 16 * 9);
  CHECK(resolve_precision("fp8mixed").bytes_for(1000) == 1000);
  // A VAE cannot be stored in these formats.
  CHECK_THROWS(check_precision_for_role(resolve_model("flux2-vae"), resolve_precision("nvfp4"), "vae.precision"));
}

TEST_CASE("gpus 2026: every card carries vendor, compute capability, PCIe link and BF16 TFLOPS with sources", "[catalog][2026]") {
  const json& g = data_file("gpus.json");
  for (const auto& card : g["gpus"]) {
    INFO(card["name"].get<std::string>());
    REQUIRE(card["vendor"].is_string());
    CHECK((card["vendor"] == "nvidia" || card["vendor"] == "amd"));
    CHECK(card["compute_capability"].is_string());
    CHECK(card["pcie_gen"].is_number_integer());
    CHECK(card["pcie_lanes"].is_number_integer());
    CHECK(card["bf16_tflops"].is_number());
    for (const char* k : {"bf16_tflops", "pcie", "compute_capability", "memory_bytes"})
      CHECK(card["sources"][k].is_string());
  }
  // The 2026 cards resolve by their usual spellings, with their memory.
  CHECK(resolve_gpu("3080").memory_gb == 10);
  CHECK(resolve_gpu("4070 ti super").memory_gb == 16);
  CHECK(resolve_gpu("5060 ti").memory_gb == 16);
  CHECK(resolve_gpu("5070").memory_gb == 12);
  CHECK(resolve_gpu("5070 ti").memory_gb == 16);
  CHECK(resolve_gpu("5080").memory_gb == 16);
  CHECK(resolve_gpu("rtx pro 6000").memory_gb == 96);
  CHECK(resolve_gpu("7900 xtx").memory_gb == 24);
  // Published dense BF16 (FP32 accumulate) figures of NVIDIA's whitepapers: Ampere GA102 (3080 59.5,
  // 3090 71), Ada (4080 97.5, 4090 165.2), RTX Blackwell (5090 209.5); AMD's page for the 7900 XTX 122.8.
  const std::vector<std::pair<const char*, double>> published = {
      {"RTX 3080 10GB", 59.5}, {"RTX 3090 24GB", 71.0}, {"RTX 4080 16GB", 97.5},
      {"RTX 4090 24GB", 165.2}, {"RTX 5090 32GB", 209.5}, {"RX 7900 XTX 24GB", 122.8}};
  for (const auto& [name, tflops] : published)
    for (const auto& card : g["gpus"])
      if (card["name"] == name) CHECK(std::fabs(card["bf16_tflops"].get<double>() - tflops) < 0.3);
}

TEST_CASE("cli 2026: estimate --model flux2-dev --gpu 4090 gives an answer", "[cli][2026]") {
  CliRun r = run_cli("estimate --model flux2-dev --gpu 4090", true);
  CHECK(r.code == 0);
  CHECK(r.out.find("mistral-small-3.2-24b") != std::string::npos);
  CHECK(r.out.find("flux2-vae") != std::string::npos);
  CliRun k = run_cli("estimate --model flux2-klein-4b --gpu 5060ti --json", false);
  CHECK(k.code == 0);
}

namespace {

// Qwen-Image 2.1 in the module names of its single-stream transformer: one shared modulation, txt_in with
// its own norm, 32 blocks of 4096 with a fused SwiGLU gate_up, no per-block img_mod.
std::vector<StTensor> qwen_image_2_1() {
  std::vector<StTensor> t = {{"img_in.weight", "BF16", {4096, 64}},
                             {"modulation.1.weight", "BF16", {16384, 4096}},
                             {"txt_in.in_layer.weight", "BF16", {4096, 4096}},
                             {"txt_in.text_norm.weight", "BF16", {4096}},
                             {"transformer_blocks.0.attn.norm_q.weight", "BF16", {128}}};
  for (int i = 0; i < 32; ++i) {
    t.push_back({"transformer_blocks." + std::to_string(i) + ".attn.to_q.weight", "BF16", {4096, 4096}});
    t.push_back({"transformer_blocks." + std::to_string(i) + ".img_mlp.gate_up.weight", "BF16", {24576, 4096}});
  }
  return t;
}

// Qwen-Image 1.x: txt_norm, 60 two-stream blocks with per-block img_mod/txt_mod, txt_in from 3584.
std::vector<StTensor> qwen_image_1() {
  std::vector<StTensor> t = {{"img_in.weight", "BF16", {3072, 64}},
                             {"txt_norm.weight", "BF16", {3584}},
                             {"txt_in.weight", "BF16", {3072, 3584}},
                             {"transformer_blocks.0.attn.norm_q.weight", "BF16", {128}}};
  for (int i = 0; i < 60; ++i) {
    t.push_back({"transformer_blocks." + std::to_string(i) + ".img_mod.1.weight", "BF16", {18432, 3072}});
    t.push_back({"transformer_blocks." + std::to_string(i) + ".txt_mod.1.weight", "BF16", {18432, 3072}});
    t.push_back({"transformer_blocks." + std::to_string(i) + ".img_mlp.net.2.weight", "BF16", {3072, 12288}});
  }
  return t;
}

}  // namespace

TEST_CASE("inspect 2026: Qwen-Image 2.1 and Qwen-Image 1.x are told apart by their keys, whatever the name",
          "[inspect][2026]") {
  for (const char* name : {"qwen_image_bf16.safetensors", "model.safetensors"}) {
    INFO(name);
    auto i = inspect_layout(name, qwen_image_2_1());
    CHECK(i.whole.model.rfind("qwen-image-2.1", 0) == 0);
    CHECK_FALSE(lists(i.whole.candidates, "qwen-image"));
  }
  // The file name picks base or Turbo, which share every tensor.
  CHECK(inspect_layout("qwen_image_2.1_turbo_bf16.safetensors", qwen_image_2_1()).whole.model == "qwen-image-2.1-turbo");
  for (const char* name : {"qwen_image_2.1_int8_convrot.safetensors", "qwen_image_2.1_turbo_bf16.safetensors"}) {
    INFO(name);
    auto i = inspect_layout(name, qwen_image_1());
    CHECK(i.whole.model.rfind("qwen-image-2.1", 0) != 0);
    for (const auto& c : i.whole.candidates) CHECK(c.rfind("qwen-image-2.1", 0) != 0);
  }
}

TEST_CASE("inspect 2026: a Causal Forcing file has Wan 2.1 T2V 1.3B's state dict, and its name tells them apart",
          "[inspect][2026]") {
  // CausalWanModel loads WanModel's state dict unchanged (comfy/ldm/wan/ar_model.py): one signature, two entries.
  auto c = inspect_layout("causal_forcing-framewise.safetensors", wan(1536, 8960, 30, 16));
  CHECK(c.whole.model == "causal-forcing-1.3b");
  CHECK(lists(c.whole.candidates, "wan2.1-t2v-1.3b"));
  auto w = inspect_layout("wan2.1_t2v_1.3B_fp16.safetensors", wan(1536, 8960, 30, 16));
  CHECK(w.whole.model == "wan2.1-t2v-1.3b");
  CHECK(lists(w.whole.candidates, "causal-forcing-1.3b"));
}
