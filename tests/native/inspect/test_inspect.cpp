// The inspector: recognition against a catalog fixture, dtype mix, precision, GPU bytes, bundles,
// the 20 GB sparse file, api::inspect and the CLI.

#include <chrono>
#include <set>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/data_files.hpp"
#include "core/inspect/gguf_header.hpp"
#include "core/inspect/inspector.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
using namespace testfiles;

namespace {

// A catalog in the models.json `recognise` schema, written for these tests. Shapes are Flux's real
// ones (img_in: 64 packed latent channels -> 3072 hidden; Flux VAE decoder.conv_in: 16 latent
// channels -> 512), so the data would be large: the files are sparse.
const json kCatalog = json::parse(R"({"models": [
  {"name": "flux1-dev", "family": "flux", "role": "diffusion_model", "variant": "dev",
   "recognise": {"all_keys": ["double_blocks.0.img_attn.qkv.weight", "guidance_in.in_layer.weight"],
                 "shapes": {"img_in.weight": [3072, 64]}}},
  {"name": "flux1-schnell", "family": "flux", "role": "diffusion_model", "variant": "schnell",
   "recognise": {"all_keys": ["double_blocks.0.img_attn.qkv.weight"], "absent_keys": ["guidance_in.in_layer.weight"],
                 "shapes": {"img_in.weight": [3072, 64]}}},
  {"name": "flux-vae", "family": "flux", "role": "vae",
   "recognise": {"all_keys": ["decoder.conv_in.weight"], "shapes": {"decoder.conv_in.weight": [512, 16, 3, 3]}}},
  {"name": "sdxl-vae", "family": "sdxl", "role": "vae",
   "recognise": {"all_keys": ["decoder.conv_in.weight"], "shapes": {"decoder.conv_in.weight": [512, 4, 3, 3]}}},
  {"name": "clip-l", "family": "clip", "role": "text_encoder",
   "recognise": {"all_keys": ["text_model.final_layer_norm.weight"], "shapes": {"text_model.final_layer_norm.weight": [768]}}},
  {"name": "no-recognise-section", "role": "vae"}
]})");

std::vector<StTensor> flux_dev_tensors(const std::string& dtype, const std::string& prefix = "") {
  return {{prefix + "img_in.weight", dtype, {3072, 64}},
          {prefix + "img_in.bias", "BF16", {3072}},
          {prefix + "double_blocks.0.img_attn.qkv.weight", dtype, {9216, 3072}},
          {prefix + "guidance_in.in_layer.weight", dtype, {3072, 256}}};
}

const ModelSummary& only(const Inspection& i) { return i.whole; }

}  // namespace

TEST_CASE("inspect: a bf16 Flux dev diffusion model", "[inspect]") {
  TempDir dir;
  auto path = dir.file("flux1-dev.safetensors");
  write_safetensors(path, flux_dev_tensors("BF16"));
  auto i = inspect_file(path, kCatalog);
  CHECK(i.format == "safetensors");
  CHECK(only(i).model == "flux1-dev");
  CHECK(only(i).family == "flux");
  CHECK(only(i).variant == "dev");
  CHECK(only(i).role == "diffusion_model");
  CHECK(only(i).precision == "bf16");
  // Elements by hand: 3072*64 + 3072 + 9216*3072 + 3072*256.
  const std::uint64_t params = 3072ull * 64 + 3072 + 9216ull * 3072 + 3072ull * 256;
  CHECK(only(i).parameters == params);
  CHECK(only(i).dtype_mix.at("bf16").parameters == params);
  CHECK(only(i).weight_gpu_bytes == params * 2);
  CHECK(only(i).dequant_transient_bytes == 0);
  CHECK(only(i).key_prefix == "");
}

TEST_CASE("inspect: schnell is told from dev by the missing guidance embedder", "[inspect]") {
  TempDir dir;
  auto path = dir.file("model.safetensors");
  auto t = flux_dev_tensors("BF16");
  t.pop_back();
  write_safetensors(path, t);
  CHECK(inspect_file(path, kCatalog).whole.model == "flux1-schnell");
}

TEST_CASE("inspect: wrong shapes are not recognised", "[inspect]") {
  TempDir dir;
  auto path = dir.file("model.safetensors");
  write_safetensors(path, {{"img_in.weight", "BF16", {1536, 64}}, {"double_blocks.0.img_attn.qkv.weight", "BF16", {4, 4}},
                           {"guidance_in.in_layer.weight", "BF16", {4, 4}}});
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.model.empty());
  CHECK(i.whole.role == "unknown");
  CHECK(i.to_json()["recognised"]["model"].is_null());
}

TEST_CASE("inspect: scaled fp8 (e4m3fn weights with scale tensors and the marker)", "[inspect]") {
  TempDir dir;
  auto path = dir.file("flux1-dev-fp8-scaled.safetensors");
  auto t = flux_dev_tensors("F8_E4M3");
  t.push_back({"img_in.scale_weight", "F32", {1}});
  t.push_back({"double_blocks.0.img_attn.qkv.scale_weight", "F32", {1}});
  t.push_back({"scaled_fp8", "F8_E4M3", {0}});
  write_safetensors(path, t);
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.model == "flux1-dev");
  CHECK(i.whole.precision == "fp8_scaled");
  const std::uint64_t fp8_params = 3072ull * 64 + 9216ull * 3072 + 3072ull * 256;
  // Scale tensors and the marker are not parameters.
  CHECK(i.whole.parameters == fp8_params + 3072);
  CHECK(i.whole.dtype_mix.at("fp8_e4m3fn").parameters == fp8_params);
  CHECK(i.whole.dtype_mix.at("fp8_e4m3fn").tensors == 4);
  CHECK(i.whole.dtype_mix.at("fp32").parameters == 0);
  CHECK(i.whole.dtype_mix.at("fp32").bytes == 8);
  // fp8 stays fp8 on the GPU (1 byte each), the bf16 bias 2 bytes, fp32 scales are kept as stored;
  // the transient is the largest fp8 layer (qkv, 9216x3072) dequantised to 16 bit.
  CHECK(i.whole.weight_gpu_bytes == fp8_params + 3072 * 2 + 8);
  CHECK(i.whole.dequant_transient_bytes == 9216ull * 3072 * 2);
  CHECK(i.whole.gpu_bytes() == i.whole.weight_gpu_bytes + 9216ull * 3072 * 2);
}

TEST_CASE("inspect: plain fp8 e4m3fn and e5m2", "[inspect]") {
  TempDir dir;
  auto a = dir.file("a.safetensors"), b = dir.file("b.safetensors");
  write_safetensors(a, flux_dev_tensors("F8_E4M3"));
  write_safetensors(b, flux_dev_tensors("F8_E5M2"));
  CHECK(inspect_file(a, kCatalog).whole.precision == "fp8_e4m3fn");
  CHECK(inspect_file(b, kCatalog).whole.precision == "fp8_e5m2");
}

TEST_CASE("inspect: mixed dtypes report each share and the dominant precision", "[inspect]") {
  TempDir dir;
  auto path = dir.file("mixed.safetensors");
  write_safetensors(path, {{"big", "F16", {100, 10}}, {"small", "F32", {10}}, {"mid", "BF16", {50}}});
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.precision == "fp16");
  CHECK(i.whole.dtype_mix.size() == 3);
  CHECK(i.whole.dtype_mix.at("fp16").bytes == 2000);
  CHECK(i.whole.dtype_mix.at("fp32").bytes == 40);
  CHECK(i.whole.dtype_mix.at("bf16").tensors == 1);
  // Unknown role: kept as stored.
  CHECK(i.whole.weight_gpu_bytes == 2000 + 40 + 100);
}

TEST_CASE("inspect: an fp32 diffusion model is counted at 16 bit, as ComfyUI casts it", "[inspect]") {
  TempDir dir;
  auto path = dir.file("fp32.safetensors");
  write_safetensors(path, flux_dev_tensors("F32"));
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.precision == "fp32");
  CHECK(i.whole.weight_gpu_bytes == i.whole.parameters * 2);
  CHECK(i.whole.stored_bytes == (i.whole.parameters - 3072) * 4 + 3072 * 2);
}

TEST_CASE("inspect: a prefixed standalone model reports its key prefix", "[inspect]") {
  TempDir dir;
  auto path = dir.file("prefixed.safetensors");
  write_safetensors(path, flux_dev_tensors("BF16", "model.diffusion_model."));
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.model == "flux1-dev");
  CHECK(i.whole.key_prefix == "model.diffusion_model.");
  CHECK(i.components.empty());
}

TEST_CASE("inspect: a checkpoint bundle lists its components", "[inspect]") {
  TempDir dir;
  auto path = dir.file("checkpoint.safetensors");
  auto t = flux_dev_tensors("F8_E4M3", "model.diffusion_model.");
  t.push_back({"first_stage_model.decoder.conv_in.weight", "BF16", {512, 16, 3, 3}});
  t.push_back({"text_encoders.clip_l.transformer.text_model.final_layer_norm.weight", "F32", {768}});
  t.push_back({"cond_stage_model.other.weight", "F16", {4, 4}});
  write_safetensors(path, t);
  auto i = inspect_file(path, kCatalog);
  CHECK(i.whole.role == "checkpoint");
  CHECK(i.whole.model == "flux1-dev");
  CHECK(i.whole.precision == "fp8_e4m3fn");
  REQUIRE(i.components.size() == 4);
  std::map<std::string, const ModelSummary*> by_prefix;
  for (const auto& c : i.components) by_prefix[c.role + ":" + c.model] = &c;
  REQUIRE(by_prefix.count("diffusion_model:flux1-dev"));
  REQUIRE(by_prefix.count("vae:flux-vae"));
  REQUIRE(by_prefix.count("text_encoder:clip-l"));
  REQUIRE(by_prefix.count("text_encoder:"));  // cond_stage_model, not in the catalog
  CHECK(by_prefix["diffusion_model:flux1-dev"]->key_prefix == "model.diffusion_model.");
  CHECK(by_prefix["vae:flux-vae"]->key_prefix == "first_stage_model.");
  CHECK(by_prefix["text_encoder:clip-l"]->key_prefix == "text_encoders.clip_l.transformer.");
  // The fp32 CLIP norm is held in 16 bit (768 * 2), the VAE as stored (512*16*9 bf16).
  CHECK(by_prefix["text_encoder:clip-l"]->weight_gpu_bytes == 768 * 2);
  CHECK(by_prefix["vae:flux-vae"]->weight_gpu_bytes == 512ull * 16 * 9 * 2);
  std::uint64_t sum = 0;
  for (const auto& c : i.components) sum += c.weight_gpu_bytes;
  CHECK(i.whole.weight_gpu_bytes == sum);
  auto j = i.to_json();
  CHECK(j["recognised"]["role"] == "checkpoint");
  CHECK(j["recognised"]["components"].size() == 4);
}

TEST_CASE("inspect: LoRA files are recognised as LoRA", "[inspect]") {
  TempDir dir;
  auto path = dir.file("lora.safetensors");
  write_safetensors(path, {{"lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight", "BF16", {16, 3072}},
                           {"lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight", "BF16", {9216, 16}}});
  CHECK(inspect_file(path, kCatalog).whole.role == "lora");
}

TEST_CASE("inspect: a GGUF Q8_0 Flux model with its dequantisation transient", "[inspect]") {
  TempDir dir;
  auto path = dir.file("flux1-dev-Q8_0.gguf");
  Gguf g;
  g.kv_string("general.architecture", "flux");
  // ggml dims are reversed from PyTorch: img_in.weight [3072, 64] is ne = {64, 3072}.
  const std::uint64_t qkv = 9216ull * 3072, img = 3072ull * 64, gin = 3072ull * 256;
  g.tensor("img_in.weight", {64, 3072}, Q8_0, img / 32 * 34)
      .tensor("img_in.bias", {3072}, F32, 3072 * 4)
      .tensor("double_blocks.0.img_attn.qkv.weight", {3072, 9216}, Q8_0, qkv / 32 * 34)
      .tensor("guidance_in.in_layer.weight", {256, 3072}, Q4_K, gin / 256 * 144);
  g.write(path);
  auto i = inspect_file(path, kCatalog);
  CHECK(i.format == "gguf");
  CHECK(i.whole.model == "flux1-dev");
  CHECK(i.whole.precision == "gguf-q8_0");
  CHECK(i.whole.dtype_mix.at("q8_0").bytes == (img + qkv) / 32 * 34);
  CHECK(i.whole.dtype_mix.at("q4_k").bytes == gin / 256 * 144);
  CHECK(i.whole.dtype_mix.at("fp32").parameters == 3072);
  CHECK(i.whole.parameters == img + qkv + gin + 3072);
  // Quantised weights stay packed; the fp32 bias is held in 16 bit; the transient is the
  // largest layer (qkv) dequantised to a 16-bit compute dtype.
  CHECK(i.whole.weight_gpu_bytes == (img + qkv) / 32 * 34 + gin / 256 * 144 + 3072 * 2);
  CHECK(i.whole.dequant_transient_bytes == qkv * 2);
  CHECK(i.to_json()["metadata"]["general.architecture"] == "flux");
}

TEST_CASE("inspect: weight_summary gives the planner model, precision and bytes", "[inspect]") {
  TempDir dir;
  auto path = dir.file("flux.safetensors");
  write_safetensors(path, flux_dev_tensors("F8_E4M3"));
  auto s = weight_summary(path, kCatalog);
  CHECK(s.model == "flux1-dev");
  CHECK(s.precision == "fp8_e4m3fn");
  CHECK(s.weight_bytes == 3072ull * 64 + 9216ull * 3072 + 3072ull * 256 + 3072 * 2);
  CHECK(s.gpu_bytes == s.weight_bytes + s.dequant_transient_bytes);
}

TEST_CASE("inspect: a 20 GB sparse file is inspected from its header alone", "[inspect][sparse]") {
  TempDir dir;
  auto path = dir.file("big.safetensors");
  const std::uint64_t total = 20'000'000'000ull;
  // One U8 tensor filling the data section; the header is padded to a fixed 256 bytes.
  const std::uint64_t header_len = 256;
  const std::uint64_t data = total - 8 - header_len;
  json h = {{"blob", {{"dtype", "U8"}, {"shape", {data}}, {"data_offsets", {0, data}}}}};
  std::string text = h.dump();
  text.resize(header_len, ' ');
  write_file(path, st_prefix(text), total);

  auto start = std::chrono::steady_clock::now();
  FileSource src(path);
  ModelFile f = read_model_file(src);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(f.file_bytes == total);
  CHECK(f.tensors.at(0).bytes == data);
  // Magic probe (4) + length (8) + header (256) bytes: nothing of the 20 GB body.
  CHECK(src.bytes_read() == 4 + 8 + header_len);
  CHECK(seconds < 0.5);
  CHECK(summarise(f, kCatalog).whole.parameters == data);
}

TEST_CASE("inspect: pickle checkpoints and missing files get clear errors", "[inspect][malformed]") {
  TempDir dir;
  auto path = dir.file("model.ckpt");
  write_file(path, std::string("PK\x03\x04", 4) + std::string(100, '\0'));
  CHECK_THROWS_WITH(read_model_file(path), Catch::Contains("zip (PyTorch .ckpt/.pt pickle)"));
  CHECK_THROWS_AS(read_model_file(dir.file("absent.safetensors")), Error);
  CHECK_THROWS_WITH(read_model_file(dir.file("")), Catch::Contains("expected a regular file"));
  auto gg = dir.file("fake.gguf");
  write_file(gg, "not a gguf file at all");
  CHECK_THROWS_WITH(read_model_file(gg), Catch::Contains("expected the magic 'GGUF'"));
}

TEST_CASE("api::inspect reports each file, marking malformed ones", "[inspect][api]") {
  TempDir dir;
  auto good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  write_safetensors(good, {{"w", "BF16", {2, 2}}});
  write_file(bad, std::string("\x10\0\0\0\0\0\0\0{\"w\": 1}", 16));
  auto out = api::inspect({good, bad});
  REQUIRE(out.size() == 2);
  CHECK(out[0]["format"] == "safetensors");
  CHECK(out[0]["parameters"] == 4);
  CHECK(out[0]["dtype_mix"]["bf16"]["bytes"] == 8);
  CHECK(out[1]["path"] == bad);
  CHECK(out[1]["error_kind"] == "malformed");
  CHECK_THAT(out[1]["error"].get<std::string>(), Catch::Contains(bad));
  CHECK_THROWS_AS(api::inspect({}), InputError);
}

TEST_CASE("cli: headroom inspect prints JSON and exits 2 when a file is malformed", "[inspect][cli]") {
  TempDir dir;
  auto good = dir.file("good.safetensors"), bad = dir.file("bad.gguf");
  write_safetensors(good, {{"w", "BF16", {2, 2}}});
  write_file(bad, std::string("GGUF\x09\0\0\0", 8));
  auto run = [&](const std::string& args, std::string* out) {
    CliRun r = run_cli("inspect " + args, /*with_stderr=*/false);
    *out += r.out;
    return r.code;
  };
  std::string out;
  CHECK(run("--json '" + good + "'", &out) == 0);
  auto j = json::parse(out);
  CHECK(j.at(0)["parameters"] == 4);
  out.clear();
  CHECK(run("--json '" + good + "' '" + bad + "'", &out) == 2);
  j = json::parse(out);
  CHECK(j.size() == 2);
  CHECK_THAT(j[1]["error"].get<std::string>(), Catch::Contains("unsupported GGUF version 9"));
  out.clear();
  CHECK(run("'" + good + "'", &out) == 0);
  CHECK_THAT(out, Catch::Contains("dtype mix"));
}

TEST_CASE("inspect: models of one architecture are told apart by file name", "[inspect]") {
  json catalog = kCatalog;
  catalog["models"].push_back({{"name", "flux1-kontext-dev"}, {"family", "flux"}, {"role", "diffusion_model"},
                               {"file_patterns", {{"flux1-dev-kontext"}, {"kontext"}}},
                               {"recognise", catalog["models"][0]["recognise"]}});
  catalog["models"][0]["file_patterns"] = {{"flux1-dev"}};
  TempDir dir;
  auto kontext = dir.file("flux1-dev-kontext_fp8.safetensors"), plain = dir.file("model.safetensors");
  write_safetensors(kontext, flux_dev_tensors("BF16"));
  write_safetensors(plain, flux_dev_tensors("BF16"));
  auto k = inspect_file(kontext, catalog);
  CHECK(k.whole.model == "flux1-kontext-dev");
  CHECK(k.whole.candidates == std::vector<std::string>{"flux1-dev"});
  // Without a telling name the first catalog entry wins and the other is listed.
  auto p = inspect_file(plain, catalog);
  CHECK(p.whole.model == "flux1-dev");
  CHECK(p.whole.candidates == std::vector<std::string>{"flux1-kontext-dev"});
}

// The real models.json: a file holding exactly the keys and shapes of a model's `recognise`
// section, named after its first file pattern, must be recognised as that model (and the VAE
// and text encoders also inside a bundle). Catches catalog signatures that collide.
TEST_CASE("inspect: every models.json recognise section identifies its own model", "[inspect][catalog]") {
  const json& catalog = headroom::data_file("models.json");
  TempDir dir;
  std::size_t checked = 0;
  for (const auto& m : catalog["models"]) {
    if (!m.contains("recognise")) continue;
    const std::string name = m["name"];
    const json& rec = m["recognise"];
    std::vector<StTensor> tensors;
    std::set<std::string> seen;
    if (rec.contains("shapes"))
      for (auto it = rec["shapes"].begin(); it != rec["shapes"].end(); ++it) {
        tensors.push_back({it.key(), "BF16", it->get<std::vector<std::uint64_t>>()});
        seen.insert(it.key());
      }
    for (const auto& k : rec.value("all_keys", json::array()))
      if (!seen.count(k.get<std::string>())) tensors.push_back({k.get<std::string>(), "BF16", {1}});
    std::string stem;
    for (const auto& part : m["file_patterns"][0]) {
      std::string s = part;
      if (s[0] == '!') continue;
      if (s[0] == '=') { stem = s.substr(1); break; }
      stem += (stem.empty() ? "" : "-") + s;
    }
    INFO(name << " from " << stem);
    auto path = dir.file(stem + ".safetensors");
    write_safetensors(path, tensors);
    auto i = inspect_file(path);
    CHECK(i.whole.model == name);
    CHECK(i.whole.role == m["role"].get<std::string>());
    ++checked;
  }
  CHECK(checked >= 18);  // the issue's 18 canonical models
}

TEST_CASE("inspect: models.json GGUF block sizes agree with the parser's ggml table", "[inspect][catalog]") {
  std::size_t checked = 0;
  for (const auto& p : headroom::data_file("models.json")["precisions"]) {
    if (p.value("kind", "") != "gguf") continue;
    INFO(p["name"]);
    const GgmlType* t = ggml_type(p["ggml_type"].get<std::uint32_t>());
    REQUIRE(t != nullptr);
    CHECK(t->block_elements == p["elems_per_block"].get<std::uint32_t>());
    CHECK(t->block_bytes == p["bytes_per_block"].get<std::uint32_t>());
    CHECK("gguf-" + std::string(t->name) == p["name"].get<std::string>());
    ++checked;
  }
  CHECK(checked >= 10);
}
