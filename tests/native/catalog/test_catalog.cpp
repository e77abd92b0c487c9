// The catalog: canonical names, aliases, file names, precisions with exact GGUF blocks, GPUs,
// and published weight sizes used as golden numbers.
#include <fstream>
#include <functional>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/api/api.hpp"
#include "core/catalog/catalog.hpp"
#include "core/base/error.hpp"

using nlohmann::json;

using namespace headroom;

namespace {

std::string field_of(const std::function<void()>& f) { return support::input_error_field(f); }

std::string name_of(const ModelInfo* m) { return m ? m->name : "(none)"; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no Error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The catalog lists every entry of the data file it is built from (read here without the catalog's code).
std::size_t models_in_data_file() {
  std::ifstream in(std::string(HEADROOM_SOURCE_DIR) + "/native/data/models.json");
  return json::parse(in).at("models").size();
}

}  // namespace

TEST_CASE("every canonical name of issue #2 is in the catalog with its role", "[catalog]") {
  const std::vector<std::pair<std::string, Role>> names = {
      {"flux1-dev", Role::DiffusionModel},       {"flux1-schnell", Role::DiffusionModel},
      {"flux1-kontext-dev", Role::DiffusionModel}, {"wan2.1-t2v-1.3b", Role::DiffusionModel},
      {"wan2.1-t2v-14b", Role::DiffusionModel},  {"wan2.1-i2v-14b", Role::DiffusionModel},
      {"wan2.2-t2v-a14b", Role::DiffusionModel}, {"wan2.2-i2v-a14b", Role::DiffusionModel},
      {"wan2.2-ti2v-5b", Role::DiffusionModel},  {"clip-l", Role::TextEncoder},
      {"t5-xxl", Role::TextEncoder},             {"umt5-xxl", Role::TextEncoder},
      {"clip-vision-h", Role::ClipVision},       {"flux-vae", Role::Vae},
      {"sd15-vae", Role::Vae},                   {"sdxl-vae", Role::Vae},
      {"wan2.1-vae", Role::Vae},                 {"wan2.2-vae", Role::Vae},
      // 2026 models (issue 11): FLUX.2, its text encoders and VAE, Krea, Wan variants.
      {"flux2-dev", Role::DiffusionModel},       {"flux2-klein-4b", Role::DiffusionModel},
      {"flux2-klein-base-4b", Role::DiffusionModel}, {"flux2-klein-9b", Role::DiffusionModel},
      {"flux2-klein-base-9b", Role::DiffusionModel}, {"mistral-small-3.2-24b", Role::TextEncoder},
      {"qwen3-4b", Role::TextEncoder},           {"qwen3-8b", Role::TextEncoder},
      {"flux2-vae", Role::Vae},                  {"flux1-krea-dev", Role::DiffusionModel},
      {"wan2.1-vace-14b", Role::DiffusionModel}, {"wan2.1-vace-1.3b", Role::DiffusionModel},
      {"wan2.2-animate-14b", Role::DiffusionModel}, {"wan2.2-s2v-14b", Role::DiffusionModel},
      {"wan2.2-fun-control-a14b", Role::DiffusionModel}, {"wan2.2-fun-inpaint-a14b", Role::DiffusionModel},
      {"wan2.1-ati-14b", Role::DiffusionModel},
      // Issue 26 near Wan: HunyuanVideo 1.0 with LLaVA-Llama-3-8B and its VAE, Kandinsky 5 Lite T2V, I2V, T2I.
      {"hunyuan-video-t2v-720p", Role::DiffusionModel}, {"llava-llama3-8b", Role::TextEncoder},
      {"hunyuan-video-vae", Role::Vae},          {"kandinsky5-lite-t2v", Role::DiffusionModel},
      {"kandinsky5-lite-i2v", Role::DiffusionModel}, {"kandinsky5-lite-t2i", Role::DiffusionModel},
      // The 2026 families of issue 19: Krea 2 and its Qwen3-VL-4B encoder, the Wan-based Animate 2, SCAIL-2,
      // Dancer, HuMo, and the Wan finetunes ChronoEdit, Wan-Move and Bernini-R.
      {"qwen3vl-4b", Role::TextEncoder},         {"krea2-turbo", Role::DiffusionModel},
      {"krea2-raw", Role::DiffusionModel},       {"wan-animate-2-14b", Role::DiffusionModel},
      {"wan2.1-scail-2-14b", Role::DiffusionModel}, {"wan2.2-dancer-14b", Role::DiffusionModel},
      {"humo-17b", Role::DiffusionModel},        {"chrono-edit-14b", Role::DiffusionModel},
      {"wan-move-14b", Role::DiffusionModel},    {"bernini-r-a14b", Role::DiffusionModel},
      {"qwen-image", Role::DiffusionModel},      {"qwen-image-2512", Role::DiffusionModel},
      {"qwen-image-edit", Role::DiffusionModel}, {"qwen-image-edit-2509", Role::DiffusionModel},
      {"qwen-image-edit-2511", Role::DiffusionModel}, {"qwen2.5-vl-7b", Role::TextEncoder},
      {"qwen-image-layered", Role::DiffusionModel}, {"qwen-image-layered-control", Role::DiffusionModel},
      // Hunyuan3D 2.0 / 2.1 shape generation: the DiTs, their ShapeVAE and DINOv2 image encoders.
      {"hunyuan3d-dit-v2", Role::DiffusionModel}, {"hunyuan3d-dit-v2-mv", Role::DiffusionModel},
      {"hunyuan3d-dit-v2-mv-turbo", Role::DiffusionModel}, {"hunyuan3d-dit-v2.1", Role::DiffusionModel},
      {"hunyuan3d-shape-vae", Role::Vae},        {"dinov2-giant", Role::ClipVision},
      {"dinov2-large", Role::ClipVision},
      {"z-image-turbo", Role::DiffusionModel},   {"z-image", Role::DiffusionModel},
      {"chroma1-hd", Role::DiffusionModel},
      // Issue 26 image DiTs part D: Lens and Lens Turbo (a 48-block dual-stream MMDiT of 1536) and GPT-OSS-20B.
      {"lens", Role::DiffusionModel},            {"lens-turbo", Role::DiffusionModel},
      {"gpt-oss-20b", Role::TextEncoder},
      // Chroma1 Radiance and PixelDiT sample pixels, with the pixel_space passthrough VAE.
      {"chroma1-radiance", Role::DiffusionModel}, {"pixel-space", Role::Vae},
      {"pixeldit-1300m", Role::DiffusionModel},
      // NewBie-Image (a 36-layer Lumina 2 NextDiT) with Gemma 3 4B and Jina CLIP v2.
      {"newbie-image-exp0.1", Role::DiffusionModel}, {"gemma3-4b", Role::TextEncoder},
      {"jina-clip-v2", Role::TextEncoder},
      // Ming-Image 0.1 Design (Z-Image's NextDiT without pad tokens), its MoE encoder and its VAE.
      {"ming-image-0.1-design", Role::DiffusionModel}, {"ming-image-0.1-encoder", Role::TextEncoder},
      {"ming-image-vae", Role::Vae},
      // Issue 26 part B: the LTX-2 / LTX-2.3 audio-video models, their Gemma 3 encoder and video VAE.
      {"ltx2-19b", Role::DiffusionModel},        {"ltx2.3-22b", Role::DiffusionModel},
      {"gemma3-12b", Role::TextEncoder},         {"ltx2-vae", Role::Vae},
      {"ltx2.5-22b", Role::DiffusionModel},      {"gemma4-12b-ltx2.5", Role::TextEncoder},
      {"gemma4-e2b", Role::TextEncoder},         {"ltx-video-2b", Role::DiffusionModel},
      {"clip-g", Role::TextEncoder},             {"sd15", Role::DiffusionModel},
      {"sdxl-base", Role::DiffusionModel},       {"sdxl-turbo", Role::DiffusionModel},
      {"sdxl-refiner", Role::DiffusionModel},    {"sd3-vae", Role::Vae},
      {"sd3.5-large", Role::DiffusionModel},
      // Issue 26: the one-pass utility models of the official templates (depth, pose, segmentation, detection).
      {"lotus-depth-d-v1-1", Role::DiffusionModel}, {"sdpose-wholebody", Role::DiffusionModel},
      {"sam3.1-multiplex", Role::DiffusionModel},   {"rt-detr-v4-x", Role::DiffusionModel},
      {"qwen-image-2.1", Role::DiffusionModel},  {"qwen-image-2.1-turbo", Role::DiffusionModel},
      {"qwen3vl-8b", Role::TextEncoder},         {"qwen-image-2.1-vae", Role::Vae},
      {"minimax-h3-fl2va", Role::DiffusionModel}, {"minimax-h3-ref2va", Role::DiffusionModel},
      {"fasth3-8step", Role::DiffusionModel},     {"fasth3-omniref-8step", Role::DiffusionModel},
      {"qwen3vl-32b-minimax-h3", Role::TextEncoder}, {"minimax-h3-video-vae", Role::Vae},
      // Issue 26: HiDream I1 and E1 (one architecture) and their Llama 3.1 8B encoder.
      {"hidream-i1", Role::DiffusionModel},       {"hidream-e1", Role::DiffusionModel},
      {"llama-3.1-8b", Role::TextEncoder},
      // HunyuanVideo 1.5 (issue 26).
      {"hunyuan-video-1.5-t2v", Role::DiffusionModel}, {"hunyuan-video-1.5-i2v", Role::DiffusionModel},
      {"hunyuan-video-1.5-1080p-sr-distilled", Role::DiffusionModel}, {"byt5-small-glyphxl", Role::TextEncoder},
      {"hunyuan-video-1.5-vae", Role::Vae},
      // Issue 26, image families: Capybara (the HunyuanVideo 1.5 DiT), OmniGen2 and its Qwen2.5-VL-3B, Anima and Qwen3-0.6B.
      {"capybara-v0.1", Role::DiffusionModel},   {"omnigen2", Role::DiffusionModel},
      {"qwen2.5-vl-3b", Role::TextEncoder},      {"anima-base-v1.0", Role::DiffusionModel},
      {"anima-preview3", Role::DiffusionModel},  {"qwen3-0.6b", Role::TextEncoder},
      // Mage-Flow (text-to-image and edit, one 12-block MMDiT) and its Mage-VAE.
      {"mage-flow", Role::DiffusionModel},       {"mage-flow-edit", Role::DiffusionModel},
      {"mage-flow-vae", Role::Vae},
      // Issue 26 image families part 2: LongCat-Image (text-to-image and edit, one Flux-style 10 + 20 block DiT).
      {"longcat-image", Role::DiffusionModel},   {"longcat-image-edit", Role::DiffusionModel},
      // NetaYume Lumina v3.5 (a Lumina-Image-2.0 NextDiT, 2304 wide) and its Gemma-2-2B encoder.
      {"netayume-lumina-v3.5", Role::DiffusionModel}, {"gemma2-2b", Role::TextEncoder},
      // Ovis-Image 7B (a 6 + 27 block SwiGLU Flux DiT) and the Qwen3-1.7B language model of Ovis 2.5.
      {"ovis-image-7b", Role::DiffusionModel},   {"ovis2.5-2b", Role::TextEncoder},
      // JoyAI-Image-Edit (a 40-block dual-stream DiT of 4096 on Qwen3-VL-8B, the Wan 2.1 VAE); FireRed-Image-Edit
      // 1.1 (re-trained from Qwen-Image-Edit-2509: Qwen-Image's DiT).
      {"joyai-image-edit", Role::DiffusionModel}, {"firered-image-edit-1.1", Role::DiffusionModel},
      // Issue 26: the audio families (ACE-Step 1.0 and 1.5, Stable Audio Open 1.0), their encoders and audio VAEs.
      {"ace-step-1.5-turbo", Role::DiffusionModel}, {"ace-step-1.5-xl-base", Role::DiffusionModel},
      {"ace-step-1.5-xl-sft", Role::DiffusionModel}, {"ace-step-1.5-xl-turbo", Role::DiffusionModel},
      {"qwen3-0.6b-ace15", Role::TextEncoder},    {"qwen3-1.7b-ace15-lm", Role::TextEncoder},
      {"qwen3-4b-ace15-lm", Role::TextEncoder},   {"ace-step-1.5-vae", Role::Vae},
      {"stable-audio-oobleck-vae", Role::Vae},    {"umt5-base", Role::TextEncoder},
      {"t5-base", Role::TextEncoder},             {"ace-step-v1-dcae", Role::Vae},
      {"ace-step-v1-3.5b", Role::DiffusionModel}, {"stable-audio-open-1.0", Role::DiffusionModel},
      // Issue 26, image families part 1: ERNIE-Image and its Ministral3-3B encoders, Ideogram 4, HiDream-O1-Image.
      {"ernie-image", Role::DiffusionModel},     {"ernie-image-turbo", Role::DiffusionModel},
      {"ministral-3-3b", Role::TextEncoder},     {"ernie-image-prompt-enhancer", Role::TextEncoder},
      {"ideogram4", Role::DiffusionModel},       {"ideogram4-unconditional", Role::DiffusionModel},
      {"hidream-o1-image", Role::DiffusionModel}, {"hidream-o1-image-dev", Role::DiffusionModel},
      // Issue 26, audio families part 2: Stable Audio 3 medium (post-trained, base), its SAME-L VAE, T5Gemma B and the
      // Qwen3.5 2B prompt writer; MiniMax Music 3 (DiT, language-model encoder, DAV); SeedVR2 3B and 7B and their VAE.
      {"stable-audio-3-medium", Role::DiffusionModel}, {"stable-audio-3-medium-base", Role::DiffusionModel},
      {"stable-audio-3-same-l-vae", Role::Vae},   {"t5gemma-b-b-ul2", Role::TextEncoder},
      {"qwen3.5-2b", Role::TextEncoder},          {"minimax-music-3", Role::DiffusionModel},
      {"minimax-music-3-text-encoder", Role::TextEncoder}, {"minimax-music-3-dav", Role::Vae},
      {"seedvr2-3b", Role::DiffusionModel},       {"seedvr2-7b", Role::DiffusionModel},
      {"seedvr2-ema-vae", Role::Vae},
      // Issue 19, 2026 Wan families: Causal Forcing (Wan 2.1 1.3B sampled block by block with a k/v cache).
      {"causal-forcing-1.3b", Role::DiffusionModel},
      // Issue 19: the audio encoders of S2V, HuMo and InfiniteTalk and the model patches of the 2026 templates.
      {"wav2vec2-chinese-base", Role::AudioEncoder}, {"wav2vec2-large-english", Role::AudioEncoder},
      {"whisper-large-v3-encoder", Role::AudioEncoder}, {"infinitetalk-single", Role::ModelPatch},
      {"infinitetalk-multi", Role::ModelPatch},   {"uso-flux1-projector", Role::ModelPatch},
      {"qwen-image-diffsynth-controlnet", Role::ModelPatch}};
  for (const auto& [name, role] : names) {
    const ModelInfo& m = resolve_model(name);
    CHECK(m.name == name);
    CHECK(m.role == role);
    CHECK(m.params > 0);
    REQUIRE(m.data != nullptr);
    CHECK(m.data->contains("recognise"));
  }
  CHECK(catalog_data().models.size() == names.size());
}

TEST_CASE("aliases and ComfyUI file names resolve to canonical models", "[catalog]") {
  CHECK(resolve_model("flux-dev").name == "flux1-dev");
  CHECK(resolve_model("FLUX.1-dev").name == "flux1-dev");
  CHECK(resolve_model("t5xxl").name == "t5-xxl");
  CHECK(resolve_model("umt5_xxl").name == "umt5-xxl");
  CHECK(resolve_model("ae").name == "flux-vae");
  CHECK(resolve_model("wan_2.1_vae").name == "wan2.1-vae");
  CHECK(resolve_model("Wan2.1_T2V_1.3B").name == "wan2.1-t2v-1.3b");
  CHECK(resolve_model("kontext").name == "flux1-kontext-dev");
  // File names of the official templates (../shared/real-workflows/INDEX.md).
  CHECK(name_of(model_from_file_name("flux1-dev-kontext_fp8_scaled.safetensors")) == "flux1-kontext-dev");
  CHECK(name_of(model_from_file_name("flux1-dev-fp8.safetensors")) == "flux1-dev");
  CHECK(name_of(model_from_file_name("flux1-schnell.safetensors")) == "flux1-schnell");
  CHECK(name_of(model_from_file_name("umt5_xxl_fp8_e4m3fn_scaled.safetensors")) == "umt5-xxl");
  CHECK(name_of(model_from_file_name("t5xxl_fp16.safetensors")) == "t5-xxl");
  CHECK(name_of(model_from_file_name("clip_l.safetensors")) == "clip-l");
  CHECK(name_of(model_from_file_name("clip_vision_h.safetensors")) == "clip-vision-h");
  CHECK(name_of(model_from_file_name("ae.safetensors")) == "flux-vae");
  CHECK(name_of(model_from_file_name("wan_2.1_vae.safetensors")) == "wan2.1-vae");
  CHECK(name_of(model_from_file_name("wan2.2_vae.safetensors")) == "wan2.2-vae");
  CHECK(name_of(model_from_file_name("models/diffusion_models/wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors")) ==
        "wan2.2-i2v-a14b");
  CHECK(name_of(model_from_file_name("wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors")) == "wan2.2-t2v-a14b");
  CHECK(name_of(model_from_file_name("wan2.2_ti2v_5B_fp16.safetensors")) == "wan2.2-ti2v-5b");
  CHECK(name_of(model_from_file_name("wan2.1_i2v_480p_14B_fp16.safetensors")) == "wan2.1-i2v-14b");
  CHECK(name_of(model_from_file_name("wan2.1_t2v_1.3B_fp16.safetensors")) == "wan2.1-t2v-1.3b");
  CHECK(name_of(model_from_file_name("causal_forcing-framewise.safetensors")) == "causal-forcing-1.3b");
  CHECK(name_of(model_from_file_name("Causal-Forcing_chunkwise_fp16.safetensors")) == "causal-forcing-1.3b");
  CHECK(name_of(model_from_file_name("wan2.1_vace_14B_fp16.safetensors")) == "wan2.1-vace-14b");
  // Models we do not cover are not guessed.
  CHECK_FALSE(model_from_file_name("sigclip_vision_patch14_384.safetensors"));
  CHECK_FALSE(model_from_file_name("flux1-fill-dev.safetensors"));
  CHECK(*precision_from_file_name("umt5_xxl_fp8_e4m3fn_scaled.safetensors") == "fp8_scaled");
  CHECK(*precision_from_file_name("flux1-dev-Q4_K_S.gguf") == "gguf-q4_k");
  CHECK(*precision_from_file_name("wan2.2_ti2v_5B_fp16.safetensors") == "fp16");
}

TEST_CASE("one precision rule set for file names and typed model names", "[catalog]") {
  // The longest catalog spelling that is a whole token wins.
  CHECK(*precision_from_file_name("flux1-dev-fp8mixed.safetensors") == "fp8mixed");
  CHECK(*precision_from_file_name("flux2_dev_nvfp4.safetensors") == "nvfp4");
  // GGUF block types: in a .gguf file, or in a bare name typed as a model; never in a .safetensors file.
  CHECK(*precision_from_file_name("flux1-dev-Q8_0") == "gguf-q8_0");
  CHECK(*precision_from_file_name("flux1-dev-Q4_K_M.gguf") == "gguf-q4_k");
  CHECK_FALSE(precision_from_file_name("flux1-dev-q8_0.safetensors"));
  // Safetensors-only kinds never in a GGUF file; GGUF's F16 is fp16.
  CHECK_FALSE(precision_from_file_name("flux2-dev-nvfp4.gguf"));
  CHECK(*precision_from_file_name("flux1-dev-F16.gguf") == "fp16");
  // A bare name keeps its dots ("wan2.2"), and loose spellings still count.
  CHECK(*precision_from_file_name("wan2.2_t2v_low_noise_14B_fp8_scaled") == "fp8_scaled");
  CHECK(*precision_from_file_name("models/unet/flux1-dev-fp8.safetensors") == "fp8_e4m3fn");
  CHECK_FALSE(precision_from_file_name("flux1-dev.safetensors"));
}

TEST_CASE("unknown or ambiguous names give an InputError naming the field and candidates", "[catalog]") {
  CHECK(field_of([] { resolve_model("hunyuan-video", "--model"); }) == "--model");
  std::string msg = message_of([] { resolve_model("flux1-deb"); });
  CHECK(contains(msg, "flux1-dev"));  // the closest name is offered
  CHECK(field_of([] { resolve_model(""); }) == "model");
  CHECK(field_of([] { resolve_precision("fp7"); }) == "precision");
  CHECK(contains(message_of([] { resolve_gpu("rtx"); }), "several GPUs"));
  CHECK(field_of([] { resolve_gpu("voodoo5", "--gpu"); }) == "--gpu");
}

TEST_CASE("precision spellings", "[catalog]") {
  CHECK(resolve_precision("fp8_e4m3fn").name == "fp8_e4m3fn");
  CHECK(resolve_precision("FP8").name == "fp8_e4m3fn");
  CHECK(resolve_precision("bfloat16").name == "bf16");
  CHECK(resolve_precision("gguf-q8_0").name == "gguf-q8_0");
  CHECK(resolve_precision("Q8_0").name == "gguf-q8_0");
  CHECK(resolve_precision("gguf-Q4_K_M").name == "gguf-q4_k");
  CHECK(resolve_precision("q5_k_s").name == "gguf-q5_k");
  CHECK(resolve_precision("fp8_e4m3fn_scaled").name == "fp8_scaled");
}

TEST_CASE("GGUF block sizes are ggml's exact block layouts", "[catalog]") {
  // Golden numbers: the block structs of ggml/src/ggml-common.h, added up field by field.
  struct B { const char* name; int elems; int bytes; int type; };
  const B blocks[] = {
      {"gguf-q8_0", 32, 2 + 32, 8},                  // fp16 d + 32 int8
      {"gguf-q6_k", 256, 128 + 64 + 16 + 2, 14},     // ql, qh, int8 scales, fp16 d
      {"gguf-q5_k", 256, 2 + 2 + 12 + 32 + 128, 13}, // d, dmin, scales, qh, qs
      {"gguf-q5_0", 32, 2 + 4 + 16, 6},              // d, qh, qs
      {"gguf-q5_1", 32, 2 + 2 + 4 + 16, 7},          // d, m, qh, qs
      {"gguf-q4_k", 256, 2 + 2 + 12 + 128, 12},      // d, dmin, scales, qs
      {"gguf-q4_0", 32, 2 + 16, 2},
      {"gguf-q4_1", 32, 2 + 2 + 16, 3},
      {"gguf-q3_k", 256, 32 + 64 + 12 + 2, 11},      // hmask, qs, scales, d
      {"gguf-q2_k", 256, 16 + 64 + 2 + 2, 10},       // scales, qs, d, dmin
      {"fp16", 1, 2, 1},
      {"fp32", 1, 4, 0},
  };
  for (const auto& b : blocks) {
    const PrecisionInfo& p = resolve_precision(b.name);
    INFO(b.name);
    CHECK(p.elems_per_block == b.elems);
    CHECK(p.bytes_per_block == b.bytes);
    CHECK(p.ggml_type == b.type);
    CHECK(precision_by_ggml_type(b.type) == &p);
  }
  // Whole blocks: 33 weights of Q8_0 take two blocks.
  CHECK(resolve_precision("gguf-q8_0").bytes_for(33) == 68);
  CHECK(precision_by_ggml_type(9999) == nullptr);
}

TEST_CASE("published weight sizes", "[catalog]") {
  auto gb = [](const std::string& model, const std::string& precision) {
    return weight_bytes(resolve_model(model), resolve_precision(precision)) / 1e9;
  };
  // Issue #2 / diffusers blog "diffusers-quantization": Flux.1 dev transformer 23.8 GB in BF16,
  // about 12 GB in fp8.
  CHECK(gb("flux1-dev", "bf16") == Approx(23.8).epsilon(0.02));
  CHECK(gb("flux1-dev", "fp8_e4m3fn") == Approx(12.0).epsilon(0.05));
  // Same blog: T5-XXL 9.52 GB in 16 bit; issue #2: about 5 GB in fp8.
  CHECK(gb("t5-xxl", "fp16") == Approx(9.52).epsilon(0.02));
  CHECK(gb("t5-xxl", "fp8_e4m3fn") == Approx(5.0).epsilon(0.06));
  // Comfy-Org repackaged files: umt5_xxl_fp16 11.4 GB; Wan2.1 T2V 14B bf16 28.6 GB, fp8 14.3 GB.
  CHECK(gb("umt5-xxl", "fp16") == Approx(11.4).epsilon(0.02));
  CHECK(gb("wan2.1-t2v-14b", "bf16") == Approx(28.6).epsilon(0.02));
  CHECK(gb("wan2.1-t2v-14b", "fp8_scaled") == Approx(14.3).epsilon(0.02));
  // city96/FLUX.1-dev-gguf listing: Q8_0 12.7 GB, Q4_K_S 6.81 GB, Q2_K 4.03 GB (files keep a few
  // small tensors in F32/F16 and mix types, so nominal blocks come within a few percent).
  CHECK(gb("flux1-dev", "gguf-q8_0") == Approx(12.7).epsilon(0.03));
  CHECK(gb("flux1-dev", "gguf-q4_k") == Approx(6.81).epsilon(0.05));
  CHECK(gb("flux1-dev", "gguf-q2_k") == Approx(4.03).epsilon(0.05));
  // wan_2.1_vae.safetensors is 254 MB (bf16), the Wan2.1 VAE 508 MB in fp32 (facts §1.4).
  CHECK(gb("wan2.1-vae", "bf16") == Approx(0.254).epsilon(0.02));
}

TEST_CASE("GPUs match by name, alias or an unambiguous part", "[catalog]") {
  CHECK(resolve_gpu("4090").name == "RTX 4090 24GB");
  CHECK(resolve_gpu("rtx 4090 24gb").name == "RTX 4090 24GB");
  CHECK(resolve_gpu("H100").name == "H100 80GB");
  CHECK(resolve_gpu("l40s").name == "L40S 48GB");
  CHECK(resolve_gpu("B200").memory_gb == 180);
  CHECK(resolve_gpu("RTX 4060").name == "RTX 4060 8GB");       // not the 4060 Ti
  CHECK(resolve_gpu("rtx 4060 ti").name == "RTX 4060 Ti 16GB");
  CHECK(contains(message_of([] { resolve_gpu("rtx40"); }), "RTX 4090 24GB"));  // ambiguous: lists candidates
  // Issue #2 prices.
  CHECK(*resolve_gpu("4090").price_eur_per_hour == Approx(0.59));
  CHECK(*resolve_gpu("5090").price_eur_per_hour == Approx(0.76));
  CHECK(*resolve_gpu("h100").price_eur_per_hour == Approx(3.90));
}

TEST_CASE("precisions a role cannot use are refused", "[catalog]") {
  const ModelInfo& vae = resolve_model("flux-vae");
  CHECK(field_of([&] { check_precision_for_role(vae, resolve_precision("gguf-q8_0"), "precision"); }) == "precision");
  CHECK(field_of([&] { check_precision_for_role(vae, resolve_precision("fp8"), "precision"); }) == "precision");
  CHECK_NOTHROW(check_precision_for_role(vae, resolve_precision("fp32"), "precision"));
  CHECK_NOTHROW(check_precision_for_role(resolve_model("t5-xxl"), resolve_precision("q8_0"), "precision"));
}

TEST_CASE("a VAE takes a quantised precision only where an official file ships in it", "[catalog]") {
  // MiniMax H3's video VAE is released as int8_convrot (released_quantized); FLUX.1's is not.
  const ModelInfo& h3 = resolve_model("minimax-h3-video-vae");
  CHECK_NOTHROW(check_precision_for_role(h3, resolve_precision("int8_convrot"), "precision"));
  CHECK(field_of([&] { check_precision_for_role(h3, resolve_precision("nvfp4"), "precision"); }) == "precision");
  CHECK(contains(message_of([&] { check_precision_for_role(h3, resolve_precision("nvfp4"), "precision"); }),
                 "int8_convrot"));
  CHECK(field_of([&] { check_precision_for_role(resolve_model("flux-vae"), resolve_precision("int8_convrot"),
                                                "precision"); }) == "precision");
}

TEST_CASE("api::catalog lists models, precisions and GPUs", "[catalog]") {
  auto c = api::catalog();
  CHECK(c["models"].size() == models_in_data_file());
  CHECK(c["precisions"].size() >= 16);
  CHECK(c["gpus"].size() >= 10);
  bool found = false;
  for (const auto& m : c["models"])
    if (m["name"] == "wan2.2-t2v-a14b") {
      found = true;
      CHECK(m["experts"] == 2);
      CHECK(m["companions"]["text_encoders"][0] == "umt5-xxl");
      CHECK(m["companions"]["vae"] == "wan2.1-vae");
    }
  CHECK(found);
}

TEST_CASE("every catalog model estimates with its defaults and on every precision its role allows", "[catalog][estimate]") {
  for (const auto& m : catalog_data().models) {
    INFO(m.name);
    if (m.role == Role::ModelPatch) {  // sampled with the model it patches: alone it is refused, naming the field
      CHECK(field_of([&] { api::estimate({{"model", m.name}}); }) == "model");
      continue;
    }
    json r = api::estimate({{"model", m.name}});
    CHECK(r["peak_bytes"].get<std::uint64_t>() > 0);
    for (const auto& p : catalog_data().precisions) {
      bool allowed = true;
      try {
        check_precision_for_role(m, p, "precision");
      } catch (const InputError&) {
        allowed = false;
      }
      if (allowed) CHECK_NOTHROW(api::estimate({{"model", m.name}, {"precision", p.name}}));
    }
  }
}

TEST_CASE("every constant in models.json cites its source", "[catalog]") {
  for (const auto& m : catalog_data().models) {
    const json& d = *m.data;
    INFO(m.name);
    CHECK(d.contains("params_source"));
    for (const char* section : {"arch", "activation", "decode", "encode", "comfy_memory_usage_factor", "comfy_decode_constant"}) {
      if (!d.contains(section)) continue;
      bool cited = false;
      for (const auto& kv : d[section].items())
        if (kv.key() == "source" || (kv.key().size() > 7 && kv.key().compare(kv.key().size() - 7, 7, "_source") == 0))
          cited = true;
      INFO(section);
      CHECK(cited);
    }
  }
  for (const auto& kv : catalog_data().runtime->items()) {
    INFO(kv.key());
    CHECK(kv.value().contains("source"));
    CHECK(kv.value()["value"].is_number());
  }
}
