// `plan --models DIR` end to end: a ComfyUI models folder with files whose headers have the real
// tensor layouts, a workflow that names them, and the plan that must take model, precision and bytes
// from the headers, not from the names.
//
// Layouts: Flux.1 dev from black-forest-labs/flux src/flux/model.py + modules/layers.py, T5-XXL
// (google/t5-v1_1-xxl encoder), CLIP-L (openai/clip-vit-large-patch14 text model), the Flux VAE
// (flux modules/autoencoder.py, ch 128, ch_mult 1,2,4,4, z 16). Their element counts are checked
// below against the published parameter counts (Flux dev 11,901,408,320; T5-XXL encoder
// 4,762,310,656; CLIP-L text 123,060,480; Flux VAE 83,819,683), so the layouts are the real ones.
// Bytes are computed here from what the test writes: element count x bytes per element, or for
// GGUF Q4_K 144 bytes per block of 256 (ggml-common.h block_q4_K).

#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/workflow/workflow_models_dir.hpp"
#include "model_file_builders.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Layout {
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> tensors;
  void add(const std::string& name, std::vector<std::uint64_t> shape) { tensors.push_back({name, std::move(shape)}); }
  void linear(const std::string& name, std::uint64_t out, std::uint64_t in) {
    add(name + ".weight", {out, in});
    add(name + ".bias", {out});
  }
};

std::uint64_t elements(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::uint64_t total_elements(const Layout& l) {
  std::uint64_t n = 0;
  for (const auto& t : l.tensors) n += elements(t.second);
  return n;
}

Layout flux_dev() {
  Layout l;
  l.linear("img_in", 3072, 64);
  l.linear("time_in.in_layer", 3072, 256);
  l.linear("time_in.out_layer", 3072, 3072);
  l.linear("guidance_in.in_layer", 3072, 256);
  l.linear("guidance_in.out_layer", 3072, 3072);
  l.linear("vector_in.in_layer", 3072, 768);
  l.linear("vector_in.out_layer", 3072, 3072);
  l.linear("txt_in", 3072, 4096);
  for (int b = 0; b < 19; ++b)
    for (const char* s : {"img", "txt"}) {
      std::string p = "double_blocks." + std::to_string(b) + "." + s + "_";
      l.linear(p + "mod.lin", 18432, 3072);
      l.linear(p + "attn.qkv", 9216, 3072);
      l.add(p + "attn.norm.query_norm.scale", {128});
      l.add(p + "attn.norm.key_norm.scale", {128});
      l.linear(p + "attn.proj", 3072, 3072);
      l.linear(p + "mlp.0", 12288, 3072);
      l.linear(p + "mlp.2", 3072, 12288);
    }
  for (int b = 0; b < 38; ++b) {
    std::string p = "single_blocks." + std::to_string(b) + ".";
    l.linear(p + "linear1", 21504, 3072);
    l.linear(p + "linear2", 3072, 15360);
    l.add(p + "norm.query_norm.scale", {128});
    l.add(p + "norm.key_norm.scale", {128});
    l.linear(p + "modulation.lin", 9216, 3072);
  }
  l.linear("final_layer.linear", 64, 3072);
  l.linear("final_layer.adaLN_modulation.1", 6144, 3072);
  return l;
}

Layout t5_xxl() {
  Layout l;
  l.add("shared.weight", {32128, 4096});
  for (int b = 0; b < 24; ++b) {
    std::string p = "encoder.block." + std::to_string(b) + ".layer.";
    for (const char* x : {"q", "k", "v", "o"}) l.add(p + "0.SelfAttention." + x + ".weight", {4096, 4096});
    if (b == 0) l.add(p + "0.SelfAttention.relative_attention_bias.weight", {32, 64});
    l.add(p + "0.layer_norm.weight", {4096});
    l.add(p + "1.DenseReluDense.wi_0.weight", {10240, 4096});
    l.add(p + "1.DenseReluDense.wi_1.weight", {10240, 4096});
    l.add(p + "1.DenseReluDense.wo.weight", {4096, 10240});
    l.add(p + "1.layer_norm.weight", {4096});
  }
  l.add("encoder.final_layer_norm.weight", {4096});
  return l;
}

Layout clip_l() {
  Layout l;
  l.add("text_model.embeddings.token_embedding.weight", {49408, 768});
  l.add("text_model.embeddings.position_embedding.weight", {77, 768});
  for (int i = 0; i < 12; ++i) {
    std::string p = "text_model.encoder.layers." + std::to_string(i) + ".";
    for (const char* x : {"q_proj", "k_proj", "v_proj", "out_proj"}) l.linear(p + "self_attn." + x, 768, 768);
    l.add(p + "layer_norm1.weight", {768});
    l.add(p + "layer_norm1.bias", {768});
    l.add(p + "layer_norm2.weight", {768});
    l.add(p + "layer_norm2.bias", {768});
    l.linear(p + "mlp.fc1", 3072, 768);
    l.linear(p + "mlp.fc2", 768, 3072);
  }
  l.add("text_model.final_layer_norm.weight", {768});
  l.add("text_model.final_layer_norm.bias", {768});
  return l;
}

Layout flux_vae() {
  Layout l;
  auto conv = [&](const std::string& n, std::uint64_t o, std::uint64_t i, std::uint64_t k) {
    l.add(n + ".weight", {o, i, k, k});
    l.add(n + ".bias", {o});
  };
  auto norm = [&](const std::string& n, std::uint64_t c) {
    l.add(n + ".weight", {c});
    l.add(n + ".bias", {c});
  };
  auto res = [&](const std::string& p, std::uint64_t i, std::uint64_t o) {
    norm(p + ".norm1", i);
    conv(p + ".conv1", o, i, 3);
    norm(p + ".norm2", o);
    conv(p + ".conv2", o, o, 3);
    if (i != o) conv(p + ".nin_shortcut", o, i, 1);
  };
  auto mid = [&](const std::string& p) {
    res(p + ".mid.block_1", 512, 512);
    norm(p + ".mid.attn_1.norm", 512);
    for (const char* x : {"q", "k", "v", "proj_out"}) conv(p + ".mid.attn_1." + x, 512, 512, 1);
    res(p + ".mid.block_2", 512, 512);
  };
  const std::uint64_t mult[4] = {1, 2, 4, 4};
  conv("encoder.conv_in", 128, 3, 3);
  std::uint64_t c = 128;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j, c = 128 * mult[i])
      res("encoder.down." + std::to_string(i) + ".block." + std::to_string(j), c, 128 * mult[i]);
    if (i != 3) conv("encoder.down." + std::to_string(i) + ".downsample.conv", c, c, 3);
  }
  mid("encoder");
  norm("encoder.norm_out", 512);
  conv("encoder.conv_out", 32, 512, 3);
  conv("decoder.conv_in", 512, 16, 3);
  mid("decoder");
  c = 512;
  for (int i = 3; i >= 0; --i) {
    for (int j = 0; j < 3; ++j, c = 128 * mult[i])
      res("decoder.up." + std::to_string(i) + ".block." + std::to_string(j), c, 128 * mult[i]);
    if (i != 0) conv("decoder.up." + std::to_string(i) + ".upsample.conv", c, c, 3);
  }
  norm("decoder.norm_out", 128);
  conv("decoder.conv_out", 3, 128, 3);
  return l;
}

// Writes a safetensors file: matrices and convolutions in `big`, vectors (biases, norms) in `small`,
// as fp8 checkpoints keep them; returns the bytes the tensors occupy.
std::uint64_t write_st(const std::string& path, const Layout& l, const std::string& big, const std::string& small) {
  std::vector<testfiles::StTensor> ts;
  std::uint64_t bytes = 0;
  for (const auto& [name, shape] : l.tensors) {
    const std::string& d = shape.size() >= 2 ? big : small;
    ts.push_back({name, d, shape});
    bytes += elements(shape) * testfiles::st_elem_bytes(d);
  }
  testfiles::write_safetensors(path, ts);
  return bytes;
}

// A Flux GGUF laid out as city96's tools/convert.py does, except that the tensors it keeps unquantised
// (vectors and the in/out projections) are written as F16: ComfyUI-GGUF keeps F32 Linear tensors in
// F32 on the GPU, which the inspector counts as 16 bit (see the report), so F16 keeps this test about
// --models. Everything else is Q4_K: 144 bytes per 256 elements.
std::uint64_t write_flux_q4k(const std::string& path, const Layout& l) {
  testfiles::Gguf g;
  g.kv_string("general.architecture", "flux");
  std::uint64_t bytes = 0;
  for (const auto& [name, shape] : l.tensors) {
    std::vector<std::uint64_t> ne(shape.rbegin(), shape.rend());  // ggml order
    bool keep = shape.size() == 1;
    for (const char* k : {"time_in.", "txt_in.", "vector_in.", "img_in.", "guidance_in.", "final_layer."})
      keep = keep || name.find(k) != std::string::npos;
    std::uint64_t n = elements(shape);
    std::uint64_t b = keep ? n * 2 : n / 256 * 144;
    REQUIRE((keep || n % 256 == 0));
    g.tensor(name, ne, keep ? testfiles::F16 : testfiles::Q4_K, b);
    bytes += b;
  }
  g.write(path);
  return bytes;
}

json api_workflow(const std::string& unet_loader, const std::string& unet, const std::string& clip1,
                  const std::string& clip2, const std::string& vae) {
  json unet_inputs = {{"unet_name", unet}};
  if (unet_loader == "UNETLoader") unet_inputs["weight_dtype"] = "default";
  return {
      {"1", {{"class_type", unet_loader}, {"inputs", unet_inputs}}},
      {"2", {{"class_type", "DualCLIPLoader"},
             {"inputs", {{"clip_name1", clip1}, {"clip_name2", clip2}, {"type", "flux"}, {"device", "default"}}}}},
      {"3", {{"class_type", "VAELoader"}, {"inputs", {{"vae_name", vae}}}}},
      {"4", {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", "a cat"}, {"clip", {"2", 0}}}}}},
      {"5", {{"class_type", "EmptySD3LatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}}},
      {"6", {{"class_type", "KSampler"},
             {"inputs", {{"model", {"1", 0}}, {"positive", {"4", 0}}, {"negative", {"4", 0}}, {"latent_image", {"5", 0}},
                         {"seed", 1}, {"steps", 20}, {"cfg", 1.0}, {"sampler_name", "euler"}, {"scheduler", "simple"},
                         {"denoise", 1.0}}}}},
      {"7", {{"class_type", "VAEDecode"}, {"inputs", {{"samples", {"6", 0}}, {"vae", {"3", 0}}}}}},
      {"8", {{"class_type", "SaveImage"}, {"inputs", {{"images", {"7", 0}}, {"filename_prefix", "x"}}}}}};
}

json plan(const json& wf, const std::string& models_dir) {
  json req = {{"workflow", wf}, {"gpu", "4090"}};  // an fp8-compute card: fp8 weights stay fp8
  if (!models_dir.empty()) req["models_dir"] = models_dir;
  return headroom::api::plan(req);
}

std::vector<std::string> notes_about(const json& p, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& n : p["notes"])
    if (n.get<std::string>().find(file) != std::string::npos) out.push_back(n.get<std::string>());
  return out;
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

// A stage's own need: its peak without the models that earlier stages leave cached on a roomy card.
std::uint64_t stage_peak(const json& p, const std::string& stage) {
  for (const auto& s : p["stages"])
    if (s["name"] == stage) return s["peak_bytes"].get<std::uint64_t>() - s["cached_bytes"].get<std::uint64_t>();
  FAIL("no stage " << stage);
  return 0;
}

const json& text_encoder(const json& p, const std::string& model) {
  for (const auto& t : p["job"]["text_encoders"])
    if (t["model"] == model) return t;
  FAIL("no text encoder " << model);
  static json none;
  return none;
}

// The ComfyUI models tree every test case here uses.
struct ModelsTree {
  testfiles::TempDir tmp;
  std::string root = tmp.file("models");
  std::uint64_t flux_fp8 = 0, flux_vectors = 0, flux_q4k = 0, t5_fp8 = 0, clip_fp16 = 0, vae_bf16 = 0;

  ModelsTree() {
    for (const char* d : {"diffusion_models", "unet", "text_encoders", "clip", "vae", "loras", "checkpoints"})
      fs::create_directories(fs::path(root) / d);
    const Layout flux = flux_dev();
    for (const auto& t : flux.tensors)
      if (t.second.size() == 1) flux_vectors += elements(t.second);
    // Neutral names: nothing in them says Flux, T5, CLIP or fp8.
    flux_fp8 = write_st(root + "/diffusion_models/my_model.safetensors", flux, "F8_E4M3", "BF16");
    // The same file under a name that states its precision, for the name-only comparison.
    write_st(root + "/diffusion_models/flux1-dev-fp8.safetensors", flux, "F8_E4M3", "BF16");
    flux_q4k = write_flux_q4k(root + "/unet/my_quant.gguf", flux);
    t5_fp8 = write_st(root + "/text_encoders/encoder_a.safetensors", t5_xxl(), "F8_E4M3", "F16");
    clip_fp16 = write_st(root + "/clip/encoder_b.safetensors", clip_l(), "F16", "F16");
    vae_bf16 = write_st(root + "/vae/decoder.safetensors", flux_vae(), "BF16", "BF16");
    // A real header outside the folder, for the escape checks.
    write_st(tmp.file("flux1-dev.safetensors"), flux, "F8_E4M3", "BF16");
  }
};

using Run = CliRun;

Run cli(const std::string& args) { return run_cli(args, /*with_stderr=*/false); }

}  // namespace

TEST_CASE("the test's layouts are the real ones (published parameter counts)", "[plan][models_dir]") {
  // Sources: facts vram-measurements-and-architectures.md §1 (analytic counts of the reference code).
  CHECK(total_elements(flux_dev()) == 11901408320ull);
  CHECK(total_elements(t5_xxl()) == 4762310656ull);
  CHECK(total_elements(clip_l()) == 123060480ull);
  CHECK(total_elements(flux_vae()) == 83819683ull);
}

TEST_CASE("plan --models reads model, precision and bytes from the headers", "[plan][models_dir]") {
  ModelsTree t;
  const json wf = api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors");

  SECTION("without --models the neutral names give nothing to go on") {
    json p = plan(wf, "");
    CHECK(p["verdict"] == "unknown");
    CHECK(p["peak_bytes"].is_null());
  }

  json p = plan(wf, t.root);
  REQUIRE(p["verdict"] != "unknown");
  const json& d = p["job"]["diffusion"];
  CHECK(d["model"] == "flux1-dev");
  CHECK(d["precision"] == "fp8_e4m3fn");
  CHECK(d["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
  // fp8 matrices (1 byte) and bf16 vectors (2 bytes): one extra byte per vector element.
  CHECK(t.flux_fp8 == 11901408320ull + t.flux_vectors);

  const json& t5 = text_encoder(p, "t5-xxl");
  CHECK(t5["precision"] == "fp8_e4m3fn");
  CHECK(t5["weight_bytes"].get<std::uint64_t>() == t.t5_fp8);
  const json& cl = text_encoder(p, "clip-l");
  CHECK(cl["precision"] == "fp16");
  CHECK(cl["weight_bytes"].get<std::uint64_t>() == t.clip_fp16);
  CHECK(cl["weight_bytes"].get<std::uint64_t>() == 123060480ull * 2);
  CHECK(p["job"]["vae"]["model"] == "flux-vae");
  CHECK(p["job"]["vae"]["weight_bytes"].get<std::uint64_t>() == t.vae_bf16);

  for (const char* f : {"my_model.safetensors", "encoder_a.safetensors", "encoder_b.safetensors", "decoder.safetensors"}) {
    INFO(f << " notes: " << json(notes_about(p, f)).dump());
    auto ns = notes_about(p, f);
    CHECK(any_contains(ns, "model, precision and size read from"));
    CHECK_FALSE(any_contains(ns, "file name"));
    CHECK_FALSE(any_contains(ns, "from its name"));
  }

  // The sampling stage holds the diffusion weights the header gave.
  bool found = false;
  for (const auto& s : p["stages"])
    if (s["name"] == "sample" && s["breakdown"].contains("weights:flux1-dev")) {
      found = true;
      CHECK(s["breakdown"]["weights:flux1-dev"].get<std::uint64_t>() == t.flux_fp8);
    }
  CHECK(found);
}

TEST_CASE("plan --models: the peak moves by exactly what the header adds to the name's guess", "[plan][models_dir]") {
  ModelsTree t;
  // The name states flux1-dev fp8, so without --models the catalog counts 1 byte per parameter; the
  // header adds the bf16 vectors. Text encoders and VAE keep their standard names in both plans.
  const json wf = api_workflow("UNETLoader", "flux1-dev-fp8.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors");
  json named = plan(wf, "");
  json read = plan(wf, t.root);
  REQUIRE(named["verdict"] != "unknown");
  CHECK(named["job"]["diffusion"]["precision"] == "fp8_e4m3fn");
  CHECK_FALSE(named["job"]["diffusion"].contains("weight_bytes"));
  CHECK(any_contains(notes_about(named, "flux1-dev-fp8.safetensors"), "name"));
  CHECK(read["job"]["diffusion"]["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
  CHECK(stage_peak(read, "sample") - stage_peak(named, "sample") == t.flux_vectors);
  // Sampling is the largest own need (peak_stage may be a later stage, where the card also holds the
  // models cached from sampling).
  for (const json* p : {&read, &named})
    for (const auto& s : (*p)["stages"])
      CHECK(stage_peak(*p, "sample") >= stage_peak(*p, s["name"].get<std::string>()));
  CHECK(read["own_peak_bytes"].get<std::uint64_t>() - named["own_peak_bytes"].get<std::uint64_t>() == t.flux_vectors);

  SECTION("a 16-bit name on an fp8 file: the header's fp8 halves the weights") {
    fs::rename(fs::path(t.root) / "diffusion_models" / "flux1-dev-fp8.safetensors",
               fs::path(t.root) / "diffusion_models" / "flux1-dev.safetensors");
    const json wf16 = api_workflow("UNETLoader", "flux1-dev.safetensors", "encoder_b.safetensors",
                                   "encoder_a.safetensors", "decoder.safetensors");
    json guess = plan(wf16, "");
    json header = plan(wf16, t.root);
    CHECK(guess["job"]["diffusion"]["precision"] == "");  // "" = the catalog default, bf16 for flux1-dev
    CHECK(header["job"]["diffusion"]["precision"] == "fp8_e4m3fn");
    // bf16 would be 2 bytes per parameter (23.8 GB): the header saves about 11.9 GB at sampling.
    CHECK(stage_peak(guess, "sample") - stage_peak(header, "sample") > 11'000'000'000ull);
  }
}

TEST_CASE("plan --models: a GGUF Q4_K Flux under unet/ is read from its header", "[plan][models_dir][gguf]") {
  ModelsTree t;
  const json wf = api_workflow("UnetLoaderGGUF", "my_quant.gguf", "encoder_b.safetensors", "encoder_a.safetensors",
                               "decoder.safetensors");
  json p = plan(wf, t.root);
  REQUIRE(p["verdict"] != "unknown");
  const json& d = p["job"]["diffusion"];
  CHECK(d["model"] == "flux1-dev");
  CHECK(d["precision"] == "gguf-q4_k");
  CHECK(d["weight_bytes"].get<std::uint64_t>() == t.flux_q4k);
  // Q4_K is 4.5 bits per weight: well under a third of bf16's 23.8 GB.
  CHECK(t.flux_q4k < 11901408320ull * 2 / 3);
  CHECK(any_contains(notes_about(p, "my_quant.gguf"), "model, precision and size read from"));
  CHECK(p["peak_bytes"].get<std::uint64_t>() < plan(api_workflow("UNETLoader", "my_model.safetensors",
                                                                   "encoder_b.safetensors", "encoder_a.safetensors",
                                                                   "decoder.safetensors"),
                                                      t.root)["peak_bytes"].get<std::uint64_t>());
}

TEST_CASE("plan --models: a missing file falls back to its name, with a note", "[plan][models_dir]") {
  ModelsTree t;
  const json wf = api_workflow("UNETLoader", "flux1-dev-fp8-e4m3fn.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors");
  json p = plan(wf, t.root);
  const json& d = p["job"]["diffusion"];
  CHECK(d["model"] == "flux1-dev");
  CHECK(d["precision"] == "fp8_e4m3fn");
  CHECK_FALSE(d.contains("weight_bytes"));
  CHECK(any_contains(notes_about(p, "flux1-dev-fp8-e4m3fn.safetensors"), "not found under"));
  // The files that are there are still read.
  CHECK(text_encoder(p, "t5-xxl")["weight_bytes"].get<std::uint64_t>() == t.t5_fp8);
}

TEST_CASE("plan --models: names that leave the folder are refused, never read", "[plan][models_dir]") {
  ModelsTree t;
  // ../flux1-dev.safetensors exists and holds fp8 weights: were it read, the precision would be fp8.
  const std::string outside = fs::path(t.root).parent_path().string() + "/flux1-dev.safetensors";
  REQUIRE(fs::exists(outside));
  for (const std::string& name : {std::string("../flux1-dev.safetensors"), outside,
                                  std::string("diffusion_models/../../flux1-dev.safetensors"),
                                  std::string("..\\flux1-dev.safetensors")}) {
    INFO(name);
    CHECK_FALSE(headroom::workflow::find_model_file(t.root, name, "diffusion").has_value());
    json p = plan(api_workflow("UNETLoader", name, "encoder_b.safetensors", "encoder_a.safetensors",
                               "decoder.safetensors"),
                  t.root);
    const json& d = p["job"]["diffusion"];
    CHECK(d["model"] == "flux1-dev");   // from the name
    CHECK(d["precision"] == "");  // the catalog default (bf16), not the header's fp8
    CHECK_FALSE(d.contains("weight_bytes"));
    CHECK(any_contains(notes_about(p, name), "estimated from its name"));
  }
}

TEST_CASE("plan --models: Windows subfolder names (backslashes) are found", "[plan][models_dir]") {
  // ComfyUI on Windows lists files in subfolders as "flux\\file.safetensors" (os.path.relpath).
  ModelsTree t;
  fs::create_directories(fs::path(t.root) / "diffusion_models" / "flux");
  fs::rename(fs::path(t.root) / "diffusion_models" / "my_model.safetensors",
             fs::path(t.root) / "diffusion_models" / "flux" / "my_model.safetensors");
  auto found = headroom::workflow::find_model_file(t.root, "flux\\my_model.safetensors", "diffusion");
  REQUIRE(found.has_value());
  CHECK(fs::equivalent(*found, fs::path(t.root) / "diffusion_models" / "flux" / "my_model.safetensors"));
  json p = plan(api_workflow("UNETLoader", "flux\\my_model.safetensors", "encoder_b.safetensors",
                             "encoder_a.safetensors", "decoder.safetensors"),
                t.root);
  CHECK(p["job"]["diffusion"]["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
}

TEST_CASE("headroom plan --models as a user runs it", "[plan][models_dir][cli]") {
  ModelsTree t;
  const std::string wf_path = t.tmp.file("workflow_api.json");
  testfiles::write_file(wf_path, api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors",
                                              "encoder_a.safetensors", "decoder.safetensors")
                                     .dump(2));
  Run r = cli("plan '" + wf_path + "' --gpu 4090 --models '" + t.root + "' --json");
  REQUIRE(r.code == 0);
  json j = json::parse(r.out);
  CHECK(j["job"]["diffusion"]["model"] == "flux1-dev");
  CHECK(j["job"]["diffusion"]["precision"] == "fp8_e4m3fn");
  CHECK(j["job"]["diffusion"]["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
  CHECK(j["peak_bytes"].get<std::uint64_t>() > t.flux_fp8);
  CHECK(j.contains("verdict"));
  CHECK(any_contains(notes_about(j, "my_model.safetensors"), "model, precision and size read from"));

  // Without --models the neutral names cannot be sized: a valid workflow Headroom does not cover, exit
  // status 3 (cmd_plan.cpp), and the JSON names the loader node and file.
  Run bare = cli("plan '" + wf_path + "' --gpu 4090 --json");
  REQUIRE(bare.code == 3);
  json b = json::parse(bare.out);
  CHECK(b["verdict"] == "unknown");
  CHECK(b["not_covered"]["kind"] == "model");
  CHECK(b["not_covered"]["node_id"] == "1");
  CHECK(b["not_covered"]["node_type"] == "UNETLoader");
  CHECK(b["not_covered"]["file"] == "my_model.safetensors");
  CHECK(b["not_covered"]["file_bytes"].is_null());  // not read: no --models
  CHECK(b["reason"].get<std::string>().find("UNETLoader #1") != std::string::npos);
}

TEST_CASE("read_header_facts for a loader: a file of the wrong kind is not taken", "[plan][models_dir]") {
  using headroom::workflow::read_header_facts;
  ModelsTree t;
  const std::string vae = t.root + "/vae/decoder.safetensors";
  const std::string flux = t.root + "/diffusion_models/my_model.safetensors";

  auto as_vae = read_header_facts(vae, "vae");
  CHECK(as_vae.error.empty());
  CHECK(as_vae.model == "flux-vae");
  CHECK(as_vae.role == "vae");
  CHECK(as_vae.gpu_bytes == t.vae_bf16);

  // The VAE picked in a UNETLoader: ComfyUI cannot run it; the plan must fall back to the name
  // rather than hand the estimator a VAE as the diffusion model (which it refuses with an error).
  auto in_unet = read_header_facts(vae, "diffusion");
  CHECK(in_unet.model.empty());
  CHECK_FALSE(in_unet.gpu_bytes.has_value());
  CHECK_THAT(in_unet.error, Catch::Contains("flux-vae") && Catch::Contains("cannot load"));
  auto t5_as_vae = read_header_facts(t.root + "/text_encoders/encoder_a.safetensors", "vae");
  CHECK(t5_as_vae.model.empty());
  CHECK_THAT(t5_as_vae.error, Catch::Contains("t5-xxl"));
  CHECK(read_header_facts(flux, "diffusion").gpu_bytes == t.flux_fp8);
  CHECK(read_header_facts(flux, "checkpoint").model == "flux1-dev");

  SECTION("a diffusion loader given a whole checkpoint counts only its diffusion model") {
    // A Flux checkpoint bundle (ComfyUI's prefixes): diffusion model in fp8, CLIP-L fp16, VAE bf16.
    std::vector<testfiles::StTensor> ts;
    std::uint64_t unet_bytes = 0;
    for (const auto& [name, shape] : flux_dev().tensors) {
      std::string d = shape.size() >= 2 ? "F8_E4M3" : "BF16";
      ts.push_back({"model.diffusion_model." + name, d, shape});
      unet_bytes += elements(shape) * testfiles::st_elem_bytes(d);
    }
    for (const auto& [name, shape] : clip_l().tensors) ts.push_back({"text_encoders.clip_l.transformer." + name, "F16", shape});
    for (const auto& [name, shape] : flux_vae().tensors) ts.push_back({"vae." + name, "BF16", shape});
    const std::string ckpt = t.root + "/checkpoints/bundle.safetensors";
    testfiles::write_safetensors(ckpt, ts);
    auto f = read_header_facts(ckpt, "diffusion");
    CHECK(f.error.empty());
    CHECK(f.model == "flux1-dev");
    CHECK(f.precision == "fp8_e4m3fn");
    CHECK(f.gpu_bytes == unet_bytes);
    CHECK(read_header_facts(ckpt, "checkpoint").role == "checkpoint");
  }
}

TEST_CASE("plan --models: a VAE file in a UNETLoader falls back to the name instead of failing", "[plan][models_dir]") {
  ModelsTree t;
  // A user's mistake seen in practice: the VAE saved into diffusion_models/ under a model's name.
  std::filesystem::copy_file(t.root + "/vae/decoder.safetensors", t.root + "/diffusion_models/flux1-dev.safetensors");
  json p = plan(api_workflow("UNETLoader", "flux1-dev.safetensors", "encoder_b.safetensors", "encoder_a.safetensors",
                             "decoder.safetensors"),
                t.root);
  const json& d = p["job"]["diffusion"];
  CHECK(d["model"] == "flux1-dev");
  CHECK_FALSE(d.contains("weight_bytes"));
  CHECK(any_contains(notes_about(p, "flux1-dev.safetensors"), "cannot load"));
  CHECK(p["peak_bytes"].get<std::uint64_t>() > 0);
}

TEST_CASE("plan model_folders: ComfyUI's folder lists (extra_model_paths.yaml) are read before models_dir",
          "[plan][models_dir]") {
  // The files live in two other trees, as a shared A1111-style folder gives them: the diffusion model
  // under a folder registered for "diffusion_models", the text encoders under "clip" and
  // "text_encoders" entries, the VAE under "vae". models_dir is an empty ComfyUI folder. Hard links: the
  // files are sparse and tens of GB long, so a copy would write them out.
  ModelsTree t;
  testfiles::TempDir other;
  const std::string a = other.file("a"), b = other.file("b"), empty = other.file("models");
  for (const char* d : {"unet_here", "te", "clips", "vaes"}) fs::create_directories(fs::path(a) / d);
  fs::create_directories(fs::path(b) / "more_te");
  fs::create_directories(empty);
  fs::create_hard_link(fs::path(t.root) / "diffusion_models" / "my_model.safetensors", fs::path(a) / "unet_here" / "my_model.safetensors");
  fs::create_hard_link(fs::path(t.root) / "text_encoders" / "encoder_a.safetensors", fs::path(b) / "more_te" / "encoder_a.safetensors");
  fs::create_hard_link(fs::path(t.root) / "clip" / "encoder_b.safetensors", fs::path(a) / "clips" / "encoder_b.safetensors");
  fs::create_hard_link(fs::path(t.root) / "vae" / "decoder.safetensors", fs::path(a) / "vaes" / "decoder.safetensors");
  const json folders = {{"diffusion_models", {a + "/nothing_here", a + "/unet_here"}},
                        {"text_encoders", {a + "/te", b + "/more_te"}},
                        {"clip", {a + "/clips"}},
                        {"vae", {a + "/vaes"}}};
  const json wf = api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors");
  json p = headroom::api::plan({{"workflow", wf}, {"gpu", "4090"}, {"models_dir", empty}, {"model_folders", folders}});
  REQUIRE(p["verdict"] != "unknown");
  CHECK(p["job"]["diffusion"]["model"] == "flux1-dev");
  CHECK(p["job"]["diffusion"]["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
  CHECK(text_encoder(p, "t5-xxl")["weight_bytes"].get<std::uint64_t>() == t.t5_fp8);
  CHECK(text_encoder(p, "clip-l")["weight_bytes"].get<std::uint64_t>() == t.clip_fp16);
  CHECK(p["job"]["vae"]["weight_bytes"].get<std::uint64_t>() == t.vae_bf16);

  SECTION("the folder lists refuse names that leave them, as models_dir does") {
    fs::create_hard_link(fs::path(t.root) / "diffusion_models" / "my_model.safetensors", fs::path(other.file("escaped.safetensors")));
    for (const std::string& name : {std::string("../escaped.safetensors"), std::string("..\\escaped.safetensors"),
                                    other.file("escaped.safetensors")})
      CHECK_FALSE(headroom::workflow::find_in_model_folders({{"diffusion_models", {a + "/unet_here"}}}, name,
                                                            "diffusion"));
  }
  SECTION("a folder list of the wrong shape is refused, naming the entry") {
    for (const json& bad : {json{{"loras", "/x"}}, json{{"loras", {1}}}, json{{"loras", {""}}}}) {
      INFO(bad.dump());
      try {
        headroom::api::plan({{"workflow", wf}, {"model_folders", bad}});
        FAIL("accepted");
      } catch (const headroom::InputError& e) {
        CHECK(e.field().rfind("model_folders.loras", 0) == 0);
      }
    }
  }
}

TEST_CASE("headroom plan --model-folder NAME=DIR, repeatable, as extra_model_paths.yaml lists folders",
          "[plan][models_dir][cli]") {
  ModelsTree t;
  const std::string wf_path = t.tmp.file("workflow_api.json");
  testfiles::write_file(wf_path, api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors",
                                              "encoder_a.safetensors", "decoder.safetensors")
                                     .dump(2));
  // Every file from a folder flag of its own; no --models at all.
  Run r = cli("plan '" + wf_path + "' --gpu 4090 --json --model-folder diffusion_models='" + t.root +
              "/diffusion_models' --model-folder text_encoders='" + t.root + "/text_encoders' --model-folder clip='" +
              t.root + "/clip' --model-folder=vae='" + t.root + "/vae'");
  REQUIRE(r.code == 0);
  json j = json::parse(r.out);
  CHECK(j["job"]["diffusion"]["weight_bytes"].get<std::uint64_t>() == t.flux_fp8);
  CHECK(text_encoder(j, "t5-xxl")["weight_bytes"].get<std::uint64_t>() == t.t5_fp8);
  CHECK(text_encoder(j, "clip-l")["weight_bytes"].get<std::uint64_t>() == t.clip_fp16);
  CHECK(j["job"]["vae"]["weight_bytes"].get<std::uint64_t>() == t.vae_bf16);
  for (const std::string& bad : {std::string("loras"), std::string("=dir"), std::string("loras=")}) {
    INFO(bad);
    Run e = run_cli("plan '" + wf_path + "' --model-folder '" + bad + "'", /*with_stderr=*/true);
    CHECK(e.code == 2);
    CHECK(e.out.find("--model-folder") != std::string::npos);
    CHECK(e.out.find("NAME=DIR") != std::string::npos);
  }
}

TEST_CASE("plan --models: a header that matches no catalog model decides over the file's name", "[plan][models_dir]") {
  // Issue 19, item 5: a latent upscaler whose name says Flux.1 dev was sized as flux1-dev (22 GiB,
  // "fits"). Its header holds a small convolutional network that no catalog model matches.
  ModelsTree t;
  Layout upscaler;
  upscaler.add("conv_in.weight", {256, 16, 3, 3});
  for (int b = 0; b < 8; ++b) upscaler.add("blocks." + std::to_string(b) + ".conv.weight", {256, 256, 3, 3});
  upscaler.add("conv_out.weight", {16, 256, 3, 3});
  const std::string name = "flux1-dev_latent_upscaler_2x.safetensors";
  const std::string path = t.root + "/diffusion_models/" + name;
  write_st(path, upscaler, "BF16", "BF16");
  const std::uint64_t file_bytes = fs::file_size(path);
  const json wf = api_workflow("UNETLoader", name, "encoder_b.safetensors", "encoder_a.safetensors", "decoder.safetensors");

  // Without --models only the name is there, and it spells flux1-dev.
  json named = plan(wf, "");
  CHECK(named["job"]["diffusion"]["model"] == "flux1-dev");

  json read = plan(wf, t.root);
  CHECK(read["verdict"] == "unknown");
  CHECK(read["peak_bytes"].is_null());
  const json& nc = read["not_covered"];
  CHECK(nc["kind"] == "model");
  CHECK(nc["node_id"] == "1");
  CHECK(nc["node_type"] == "UNETLoader");
  CHECK(nc["file"] == name);
  CHECK(nc["file_bytes"].get<std::uint64_t>() == file_bytes);  // the least the unknown model holds
  CHECK(read["reason"].get<std::string>().find("the file holds") != std::string::npos);
  CHECK(read["workflow"]["loaders"][0]["model"].is_null());
  auto ns = notes_about(read["workflow"], name);  // a plan that sizes nothing keeps its notes there
  INFO(json(ns).dump());
  CHECK(any_contains(ns, "matches no catalog model"));
  CHECK(any_contains(ns, "not flux1-dev as its name suggests"));
  CHECK_FALSE(any_contains(ns, "estimated from its name"));

  // The CLI says "not covered" with its own exit status.
  const std::string wf_path = t.tmp.file("upscaler_api.json");
  testfiles::write_file(wf_path, wf.dump(2));
  Run r = cli("plan '" + wf_path + "' --gpu 4090 --models '" + t.root + "' --json");
  CHECK(r.code == 3);
  CHECK(json::parse(r.out)["not_covered"]["file_bytes"].get<std::uint64_t>() == file_bytes);
}

TEST_CASE("plan --models: a text encoder whose header is not read keeps its name's guess", "[plan][models_dir]") {
  // Encoders ship in layouts the inspector does not read (GGUF text encoders keep llama.cpp's names);
  // dropping one from the count would lower the peak, so its name still sizes it, and the note says
  // what the file holds.
  ModelsTree t;
  Layout odd;
  odd.add("enc.blk.0.attn_q.weight", {4096, 4096});
  odd.add("enc.blk.0.ffn_gate.weight", {10240, 4096});
  const std::string name = "t5xxl_fp8_e4m3fn.safetensors";
  write_st(t.root + "/text_encoders/" + name, odd, "F8_E4M3", "F16");
  json p = plan(api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors", name, "decoder.safetensors"),
                t.root);
  REQUIRE(p["verdict"] != "unknown");
  CHECK(text_encoder(p, "t5-xxl")["precision"] == "fp8_e4m3fn");
  auto ns = notes_about(p, name);
  INFO(json(ns).dump());
  CHECK(any_contains(ns, "matches no catalog model (the file holds"));
  CHECK(any_contains(ns, "estimated from its name as t5-xxl"));
}

namespace {

const json& loader_of(const json& p, const std::string& node_id) {
  for (const auto& l : p["workflow"]["loaders"])
    if (l["node_id"] == node_id) return l;
  FAIL("no loader #" << node_id);
  static json none;
  return none;
}

// Keeps the first `keep` bytes of `path`: a download that stopped early.
void cut(const std::string& path, std::uint64_t keep) {
  REQUIRE(fs::file_size(path) > keep);
  fs::resize_file(path, keep);
}

}  // namespace

TEST_CASE("plan --models: each loader says where its size comes from", "[plan][models_dir][trust]") {
  ModelsTree t;
  SECTION("a header read: header") {
    json p = plan(api_workflow("UNETLoader", "my_model.safetensors", "encoder_b.safetensors", "encoder_a.safetensors",
                               "decoder.safetensors"),
                  t.root);
    for (const char* id : {"1", "2", "3"}) {
      INFO("loader #" << id);
      CHECK(loader_of(p, id)["size_source"] == "header");
      CHECK(loader_of(p, id)["file_problem"].is_null());
    }
  }
  SECTION("a file not found: file_name, or unknown when the name says nothing") {
    json p = plan(api_workflow("UNETLoader", "flux1-dev-fp8-e4m3fn.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "missing_vae.safetensors"),
                  t.root);
    CHECK(loader_of(p, "1")["size_source"] == "file_name");
    CHECK(loader_of(p, "1")["file_problem"].is_null());
    CHECK(loader_of(p, "3")["size_source"] == "unknown");
    CHECK(p["verdict"] != "unknown");
  }
  SECTION("no models folder at all: the name decides") {
    json p = plan(api_workflow("UNETLoader", "flux1-dev-fp8-e4m3fn.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors"),
                  "");
    CHECK(loader_of(p, "1")["size_source"] == "file_name");
    CHECK(loader_of(p, "3")["size_source"] == "unknown");
  }
}

TEST_CASE("plan --models: a broken model file gets no verdict and is named", "[plan][models_dir][trust]") {
  ModelsTree t;
  // The name alone makes a plan with a verdict; only the file on disk is broken.
  const json wf = api_workflow("UNETLoader", "flux1-dev-fp8.safetensors", "encoder_b.safetensors",
                               "encoder_a.safetensors", "decoder.safetensors");
  const std::string unet = t.root + "/diffusion_models/flux1-dev-fp8.safetensors";
  REQUIRE(plan(wf, t.root)["verdict"] != "unknown");

  auto check_broken = [&](const json& p, const std::string& id, const std::string& type, const std::string& file,
                          const std::string& problem) {
    INFO(p["reason"].dump());
    const json& l = loader_of(p, id);
    CHECK(l["file_problem"] == problem);
    CHECK(l["size_source"] != "header");
    CHECK(p["verdict"] == "unknown");
    CHECK(p["not_covered"]["kind"] == "file");
    CHECK(p["not_covered"]["node_id"] == id);
    CHECK(p["not_covered"]["file_problem"] == problem);
    CHECK(p["changes"].empty());
    CHECK(p["smallest_gpu"].is_null());
    const std::string reason = p["reason"].get<std::string>();
    CHECK_THAT(reason, Catch::Contains(type + " #" + id) && Catch::Contains(file));
    CHECK(l["file_problem_text"] == reason);
    CHECK(any_contains(notes_about(p, file), type + " #" + id));
  };

  SECTION("0 bytes") {
    fs::resize_file(unet, 0);
    check_broken(plan(wf, t.root), "1", "UNETLoader", "flux1-dev-fp8.safetensors", "empty");
  }
  SECTION("a safetensors file shorter than its tensors' data offsets") {
    cut(unet, fs::file_size(unet) / 2);
    check_broken(plan(wf, t.root), "1", "UNETLoader", "flux1-dev-fp8.safetensors", "truncated");
  }
  SECTION("a safetensors file cut inside its header") {
    cut(unet, 100);
    check_broken(plan(wf, t.root), "1", "UNETLoader", "flux1-dev-fp8.safetensors", "truncated");
  }
  SECTION("a truncated GGUF") {
    const std::string gguf = t.root + "/unet/my_quant.gguf";
    fs::copy_file(gguf, t.root + "/unet/flux1-dev-Q4_K_S.gguf");
    cut(t.root + "/unet/flux1-dev-Q4_K_S.gguf", fs::file_size(gguf) - 4096);
    check_broken(plan(api_workflow("UnetLoaderGGUF", "flux1-dev-Q4_K_S.gguf", "encoder_b.safetensors",
                                   "encoder_a.safetensors", "decoder.safetensors"),
                      t.root),
                 "1", "UnetLoaderGGUF", "flux1-dev-Q4_K_S.gguf", "truncated");
  }
  SECTION("a broken VAE, not only the diffusion model") {
    const std::string vae = t.root + "/vae/decoder.safetensors";
    cut(vae, fs::file_size(vae) - 1);
    check_broken(plan(wf, t.root), "3", "VAELoader", "decoder.safetensors", "truncated");
  }
  SECTION("a header that does not parse is flagged, and the name still decides") {
    testfiles::write_file(unet, testfiles::st_prefix("{\"a\": [1, 2"), 1 << 20);
    json p = plan(wf, t.root);
    const json& l = loader_of(p, "1");
    CHECK(l["file_problem"] == "bad_header");
    CHECK(l["size_source"] == "file_name");
    CHECK_THAT(l["file_problem_text"].get<std::string>(), Catch::Contains("UNETLoader #1"));
    CHECK(p["verdict"] != "unknown");
  }
}
