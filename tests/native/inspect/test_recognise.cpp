// The one recogniser, from each kind of input: tensors, a file name, a ComfyUI model config, the keys
// of a VAE state dict; and its data (comfy_nodes.json file_names/model_configs/vae_key_rules) failing at load.
#include <set>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/catalog/catalog.hpp"
#include "core/inspect/recognise.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

// A state dict holding exactly the keys and shapes of a models.json entry's `recognise` section.
ModelFile file_from_recognise_section(const std::string& model, const std::string& path) {
  for (const auto& m : data_file("models.json")["models"]) {
    if (m["name"] != model) continue;
    ModelFile f;
    f.path = path;
    f.format = "safetensors";
    std::set<std::string> done;
    const json& rec = m["recognise"];
    for (const auto& [key, shape] : rec["shapes"].items()) {
      TensorRecord t{key, "bf16", shape.get<std::vector<std::uint64_t>>(), 1, 2, false};
      f.tensors.push_back(t);
      done.insert(key);
    }
    for (const auto& k : rec["all_keys"])
      if (!done.count(k.get<std::string>())) f.tensors.push_back(TensorRecord{k.get<std::string>(), "bf16", {4}, 4, 8, false});
    return f;
  }
  FAIL("no models.json entry " << model);
  return {};
}

std::string error_of(const json& rules) {
  try {
    load_name_rules(rules, "rules-test.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("recognise: from tensors, the same answer as the inspector", "[recognise]") {
  Inspection i = recognise_tensors(file_from_recognise_section("flux-vae", "/m/ae.safetensors"));
  CHECK(i.whole.model == "flux-vae");
  CHECK(i.whole.role == "vae");
  CHECK(i.whole.precision == "bf16");
  Inspection wan = recognise_tensors(file_from_recognise_section("wan2.2-vae", "/m/wan2.2_vae.safetensors"));
  CHECK(wan.whole.model == "wan2.2-vae");
}

TEST_CASE("recognise: from a file name, the template rules before the catalog patterns", "[recognise]") {
  NameRecognition fill = recognise_file_name("flux1-fill-dev.safetensors", "diffusion");
  CHECK(fill.model == "flux1-dev");
  REQUIRE(fill.notes.size() == 2);
  CHECK_THAT(fill.notes[1], Catch::Contains("Fill"));  // the caveat of the near relative
  CHECK(fill.precision.empty());

  // A catalog model the rules never name (VACE has its own entry since 2026) is matched by its own
  // file patterns, not by the rule that used to take it for the T2V model of its size.
  NameRecognition vace = recognise_file_name("wan2.1_vace_1.3B_fp16.safetensors", "diffusion");
  CHECK(vace.model == "wan2.1-vace-1.3b");
  CHECK(vace.precision == "fp16");
  CHECK(vace.notes.size() == 2);  // model (catalog file patterns), precision
  CHECK_THAT(vace.notes[0], Catch::Contains("catalog file patterns"));
  // A new family is never taken for an older one by a generic rule.
  CHECK(recognise_file_name("flux2_dev_fp8mixed.safetensors", "diffusion").model == "flux2-dev");
  CHECK(recognise_file_name("flux2_dev_fp8mixed.safetensors", "diffusion").precision == "fp8mixed");
  CHECK(recognise_file_name("flux2-vae.safetensors", "vae").model == "flux2-vae");
  CHECK(recognise_file_name("flux1-dev-nvfp4.safetensors", "diffusion").precision == "nvfp4");
  CHECK(recognise_file_name("t5xxl_fp8_e4m3fn_scaled.safetensors", "text_encoder").precision == "fp8_scaled");
  CHECK(recognise_file_name("flux1-dev-Q4_K_M.gguf", "diffusion").precision == "gguf-q4_k");
  CHECK(recognise_file_name("full_precision_model.safetensors", "diffusion").precision.empty());

  CHECK(recognise_file_name("ae.safetensors", "vae").model == "flux-vae");
  CHECK(recognise_file_name("wan_2.1_vae.safetensors", "vae").model == "wan2.1-vae");
  CHECK(recognise_file_name("flux1-dev-fp8.safetensors", "checkpoint").precision == "fp8_e4m3fn");
  CHECK(recognise_file_name("flux1-dev-Q4_K_M.gguf", "diffusion").precision == "gguf-q4_k");

  // No template rule knows "kontext" without "flux"; models.json file_patterns do.
  NameRecognition k = recognise_file_name("my_kontext_merge.safetensors", "diffusion");
  CHECK(k.model == "flux1-kontext-dev");
  CHECK_THAT(k.notes[0], Catch::Contains("catalog file patterns"));

  // A text encoder's name given to a VAE loader names no VAE; the precision in the name still counts.
  NameRecognition wrong = recognise_file_name("umt5_xxl_fp8_e4m3fn_scaled.safetensors", "vae");
  CHECK(wrong.model.empty());
  CHECK(wrong.precision == "fp8_scaled");
  CHECK(recognise_file_name("sd_xl_base_1.0.safetensors", "checkpoint").model == "sdxl-base");
}

TEST_CASE("recognise: a name that only shares its family word with catalog models names none", "[recognise]") {
  // Issue 19, item 5: a 2.5 GB latent upscaler named "..._flux1_..." was taken for flux1-dev (22 GiB) by
  // a rule that took "flux" plus "flux1" for a model. A family or version word alone (flux, flux1, wan,
  // wan2.2...) says which family a file belongs to, not which model it is: every family word of the
  // catalog (each diffusion model's family and the version its name starts with), in the spellings file
  // names use, is put in names that say nothing else.
  std::set<std::string> families;
  for (const auto& m : data_file("models.json")["models"]) {
    if (m["role"] != "diffusion_model") continue;
    const std::string name = m["name"].get<std::string>();
    const std::string version = name.substr(0, name.find('-'));
    for (const std::string& w : {m["family"].get<std::string>(), version}) {
      families.insert(w);
      std::string underscored = w, squashed;
      for (char& c : underscored)
        if (c == '.') c = '_';
      for (char c : w)
        if (c != '.') squashed += c;
      families.insert(underscored);
      families.insert(squashed);
    }
  }
  REQUIRE(families.count("flux1"));
  REQUIRE(families.count("wan2.2"));
  for (const std::string& w : families)
    for (const std::string& file : {w + ".safetensors", "latent_upscaler_" + w + "_2x.safetensors",
                                    "my_" + w + "_merge.safetensors", "4x_" + w + "_upscale_model.pth"})
      for (const char* role : {"diffusion", "checkpoint"}) {
        INFO(file << " as " << role);
        NameRecognition r = recognise_file_name(file, role);
        CHECK(r.model.empty());
        for (const auto& n : r.notes) CHECK_THAT(n, !Catch::Contains("taken for"));
      }
  // The words that tell a model of the family apart still name it.
  CHECK(recognise_file_name("my_flux1_dev_merge.safetensors", "diffusion").model == "flux1-dev");
  CHECK(recognise_file_name("flux1-dev-fp8.safetensors", "checkpoint").model == "flux1-dev");
  CHECK(recognise_file_name("wan2.1_i2v_upscaled_14B.safetensors", "diffusion").model == "wan2.1-i2v-14b");
  // api::recognise, which the nodes ask, gives the same answer.
  json a = api::recognise(json{{"file_name", "latent_upscaler_flux1_2x.safetensors"}, {"role", "diffusion"}});
  CHECK(a["model"].is_null());
}

TEST_CASE("recognise: from a ComfyUI model config", "[recognise]") {
  CHECK(recognise_comfy_config({"Flux", 3072, std::nullopt}) == "flux1-dev");
  CHECK(recognise_comfy_config({"FluxSchnell", std::nullopt, std::nullopt}) == "flux1-schnell");
  // WAN21_T2V covers Wan 2.1 and 2.2's 14B experts: width and input channels tell them apart.
  CHECK(recognise_comfy_config({"WAN21_T2V", 1536, 16}) == "wan2.1-t2v-1.3b");
  CHECK(recognise_comfy_config({"WAN21_T2V", 1536, std::nullopt}) == "wan2.1-t2v-1.3b");
  CHECK(recognise_comfy_config({"WAN21_T2V", 5120, 36}) == "wan2.2-i2v-a14b");
  CHECK(recognise_comfy_config({"WAN21_T2V", 5120, std::nullopt}) == "wan2.1-t2v-14b");
  CHECK(recognise_comfy_config({"WAN21_T2V", 2048, 16}).empty());
  CHECK(recognise_comfy_config({"SDXL", 320, 4}).empty());
}

TEST_CASE("recognise: a VAE's native decoder family from its state-dict keys", "[recognise]") {
  auto family = [](std::set<std::string> keys) {
    return vae_decoder_family([&](const std::string& k) { return keys.count(k) > 0; });
  };
  CHECK(family({"decoder.conv_in.weight", "decoder.up.0.block.0.conv1.weight"}) == "kl");
  CHECK(family({"decoder.conv_in.weight"}).empty());  // half a KL decoder is no KL decoder
  CHECK(family({"decoder.middle.0.residual.0.gamma"}) == "wan2.1");
  CHECK(family({"decoder.middle.0.residual.0.gamma", "decoder.upsamples.0.upsamples.0.residual.2.weight"}) == "wan2.2");
  CHECK(family({}).empty());
}

TEST_CASE("recognise: a FLUX.2 VAE is its own family, never plain KL", "[recognise]") {
  auto family = [](std::set<std::string> keys) {
    return vae_decoder_family([&](const std::string& k) { return keys.count(k) > 0; });
  };
  // The keys of BFL's AutoEncoder (black-forest-labs/flux2 src/flux2/autoencoder.py): an AutoencoderKL
  // with post_quant_conv inside the decoder, plus the latent BatchNorm2d's buffers.
  std::set<std::string> flux2 = {"encoder.conv_in.weight", "quant_conv.weight", "decoder.post_quant_conv.weight",
                                 "decoder.conv_in.weight", "decoder.mid.block_1.conv1.weight",
                                 "decoder.up.0.block.0.conv1.weight", "decoder.up.3.block.2.conv2.weight",
                                 "decoder.conv_out.weight", "bn.running_mean", "bn.running_var",
                                 "bn.num_batches_tracked"};
  CHECK(family(flux2) == "flux2");
  // The same file as ComfyUI holds it (post_quant_conv moved to the top level) is still FLUX.2.
  flux2.erase("decoder.post_quant_conv.weight");
  flux2.insert("post_quant_conv.weight");
  CHECK(family(flux2) == "flux2");
  // Without the BatchNorm it is an ordinary KL decoder (Flux.1's ae.safetensors has the same keys).
  flux2.erase("bn.running_mean");
  CHECK(family(flux2) == "kl");
  // The BatchNorm alone, or with half a KL decoder, is neither.
  CHECK(family({"bn.running_mean", "bn.running_var"}).empty());
  CHECK(family({"bn.running_mean", "decoder.conv_in.weight"}).empty());
}

TEST_CASE("recognise: every vae_key_rules rule can match", "[recognise]") {
  // First match wins, so a rule after one whose keys it holds all of could never answer.
  const auto& rules = vae_key_rules();
  REQUIRE(rules.size() >= 4);
  for (std::size_t j = 0; j < rules.size(); ++j) {
    const std::set<std::string> later(rules[j].all.begin(), rules[j].all.end());
    CHECK(vae_decoder_family([&](const std::string& k) { return later.count(k) > 0; }) == rules[j].family);
  }
}

TEST_CASE("recognise: vae_key_rules data errors name the rule and the key", "[recognise]") {
  auto error = [](const json& data) {
    try {
      load_vae_key_rules(data, "rules-test.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const json good = {{"vae_key_rules", {{"rules", {{{"family", "kl"}, {"all", {"decoder.conv_in.weight"}}}}}}}};
  CHECK(error(good).empty());
  CHECK(load_vae_key_rules(good, "rules-test.json").at(0).all.at(0) == "decoder.conv_in.weight");
  CHECK(error(json::object()).find("'vae_key_rules' expected an object") != std::string::npos);
  CHECK(error({{"vae_key_rules", {{"rules", json::array()}}}}).find("'rules' expected a non-empty array") != std::string::npos);
  json empty_all = good;
  empty_all["vae_key_rules"]["rules"][0]["all"] = json::array();
  CHECK(error(empty_all).find("vae_key_rules.rules[0]: 'all' expected at least one key") != std::string::npos);
  json typo = good;
  typo["vae_key_rules"]["rules"][0]["any"] = json::array({"x"});
  CHECK(error(typo).find("vae_key_rules.rules[0]: 'any' is not a known key") != std::string::npos);
  json no_family = good;
  no_family["vae_key_rules"]["rules"][0].erase("family");
  CHECK(error(no_family).find("'family' is missing") != std::string::npos);
}

TEST_CASE("recognise: api::recognise answers for a file name and a config", "[recognise][api]") {
  json f = api::recognise({{"file_name", "wan2.2_ti2v_5B_fp16.safetensors"}});
  CHECK(f["model"] == "wan2.2-ti2v-5b");
  CHECK(f["role"] == "diffusion");
  CHECK(f["precision"] == "fp16");
  json v = api::recognise({{"file_name", "ae.safetensors"}, {"role", "vae"}});
  CHECK(v["model"] == "flux-vae");
  json c = api::recognise({{"comfy_config", {{"config_class", "WAN21_T2V"}, {"dim", 5120}, {"in_channels", 36}}}});
  CHECK(c["model"] == "wan2.2-i2v-a14b");
  CHECK(api::recognise({{"comfy_config", {{"config_class", "SD15"}}}})["model"].is_null());
  CHECK_THROWS_AS(api::recognise({{"file_name", "a"}, {"comfy_config", json::object()}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"role", "vae"}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"file_name", "a"}, {"role", "lora"}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"comfy_config", {{"config_class", "Flux"}, {"dim", "wide"}}}}), InputError);
}

TEST_CASE("recognise: a typed card name, answered without throwing for the nodes' settings", "[recognise][api][gpu]") {
  json exact = api::recognise({{"gpu", "rtx 4090"}});
  CHECK(exact["gpu"] == "RTX 4090 24GB");
  CHECK(exact["memory_bytes"] == resolve_gpu("RTX 4090 24GB").memory_bytes);
  json several = api::recognise({{"gpu", "RTX 407"}});
  CHECK(several["gpu"].is_null());
  CHECK(several["matches"] == json({"RTX 4070 12GB", "RTX 4070 Ti SUPER 16GB"}));
  json none = api::recognise({{"gpu", "banana"}});
  CHECK(none["gpu"].is_null());
  CHECK(none["matches"].empty());
  CHECK(none["closest"].size() == 3);
  CHECK_THROWS_AS(api::recognise({{"gpu", 12}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"gpu", "x"}, {"file_name", "a"}}), InputError);
}

TEST_CASE("recognise: api::recognise names a VAE's decoder family from its keys", "[recognise][api]") {
  json f2 = api::recognise({{"vae_keys", {"decoder.conv_in.weight", "decoder.up.0.block.0.conv1.weight", "bn.running_mean"}}});
  CHECK(f2["from"] == "vae_keys");
  CHECK(f2["vae_family"] == "flux2");
  CHECK(api::recognise({{"vae_keys", {"decoder.up.0.block.0.conv1.weight", "decoder.conv_in.weight"}}})["vae_family"] == "kl");
  CHECK(api::recognise({{"vae_keys", {"encoder.conv_in.weight"}}})["vae_family"].is_null());
  CHECK_THROWS_AS(api::recognise({{"vae_keys", json::array()}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"vae_keys", {"decoder.conv_in.weight", 3}}}), InputError);
  CHECK_THROWS_AS(api::recognise({{"vae_keys", {"a"}}, {"file_name", "a"}}), InputError);
}

TEST_CASE("recognise: a state dict in torch's dtype spelling", "[recognise][api]") {
  json t = api::recognise({{"tensors", {{"decoder.conv_in.weight", {{"dtype", "torch.float16"}, {"shape", json::array({4u, 4u})}}}}}});
  CHECK(t["dtype_mix"].contains("fp16"));
  CHECK(t["dtype_mix"]["fp16"]["bytes"] == 4 * 4 * 2);  // 16 elements of 2 bytes
}

TEST_CASE("recognise: broken name rules fail at load naming file, rule and key", "[recognise]") {
  const json good = {{"file_names", {{"vae", json::array({{{"model", "flux-vae"}, {"file_patterns", {{"~fluxae"}}}}})}}},
                     {"model_configs", json::array({{{"config_class", "Flux"}, {"models", {"flux1-dev"}}}})}};
  CHECK(error_of(good).empty());
  json no_model = good;
  no_model["file_names"]["vae"][0].erase("model");
  std::string e = error_of(no_model);
  CHECK_THAT(e, Catch::Contains("rules-test.json") && Catch::Contains("file_names.vae[0]") && Catch::Contains("'model'"));
  json typo = good;
  typo["model_configs"][0]["dims"] = 5120;
  e = error_of(typo);
  CHECK_THAT(e, Catch::Contains("model_configs[0]") && Catch::Contains("'dims'"));
  json empty_rule = good;
  empty_rule["file_names"]["vae"][0].erase("file_patterns");
  CHECK_THAT(error_of(empty_rule), Catch::Contains("file_names.vae[0]") && Catch::Contains("'file_patterns'"));
  // The old grammar's keys are refused by name, so a rule written in it does not silently match nothing.
  json old_grammar = good;
  old_grammar["file_names"]["vae"][0]["all"] = {"fluxae"};
  CHECK_THAT(error_of(old_grammar), Catch::Contains("'all'") && Catch::Contains("not a known key"));
  json bad_pattern = good;
  bad_pattern["file_names"]["vae"][0]["file_patterns"] = {"a", "b"};  // parts, not lists of parts
  CHECK_THAT(error_of(bad_pattern), Catch::Contains("file_names.vae[0]") && Catch::Contains("'file_patterns[0]'"));
  json refusals_only = good;
  refusals_only["file_names"]["vae"][0]["file_patterns"] = {{"!~lora"}};  // would match every other name
  CHECK_THAT(error_of(refusals_only), Catch::Contains("'file_patterns[0]'") && Catch::Contains("refusal"));
  // An unsized family names no model and says which source its widths lack.
  json unsized = good;
  unsized["file_names"]["vae"][0] = {{"unsized", "Acme VAE"}, {"file_patterns", {{"~acme"}}}, {"note", "no public widths"}};
  CHECK(error_of(unsized).empty());
  json both = unsized;
  both["file_names"]["vae"][0]["model"] = "flux-vae";
  CHECK_THAT(error_of(both), Catch::Contains("file_names.vae[0]") && Catch::Contains("'unsized'"));
  json silent = unsized;
  silent["file_names"]["vae"][0].erase("note");
  CHECK_THAT(error_of(silent), Catch::Contains("file_names.vae[0]") && Catch::Contains("'note'"));
}

TEST_CASE("recognise: every comfy_nodes.json file_names pattern answers for a name made of its own parts", "[recognise]") {
  // A rule that the rules before it always take is dead data: each pattern's positive parts, joined into a
  // file name, must reach that pattern's rule first (order is the rules' priority).
  int checked = 0;
  for (const auto& [role, rules] : name_rules().file_names) {
    for (std::size_t i = 0; i < rules.size(); ++i) {
      for (const auto& pattern : rules[i].file_patterns) {
        std::string name;
        for (const auto& part : pattern) {
          if (part[0] == '!') continue;
          name += (name.empty() ? "" : "_") + part.substr(part.find_first_not_of("=~"));
        }
        const std::string stem = model_file_stem(name + ".safetensors");
        std::size_t first = rules.size();
        for (std::size_t j = 0; j < rules.size() && first == rules.size(); ++j)
          if (file_patterns_score(rules[j].file_patterns, stem) > 0) first = j;
        INFO(role << ": '" << name << "' should reach rule " << i);
        CHECK(first == i);
        ++checked;
      }
    }
  }
  CHECK(checked > 30);
}
