#pragma once
// "Which catalog model and precision is this?", answered in one place from whatever the caller
// holds: tensor names and shapes (a file header or a loaded state dict), a file name, a ComfyUI
// model config, or the keys of a VAE state dict. The knowledge is data: models.json (recognise,
// file_patterns) and comfy_nodes.json (file_names, model_configs, vae_key_rules); nothing here
// spells a model.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/catalog/file_names.hpp"
#include "core/inspect/inspector.hpp"

namespace headroom {

// From tensor names, dtypes and shapes, against models.json `recognise` (the inspector's summarise
// with the built-in catalog). A file and the state dict loaded from it get the same answer.
Inspection recognise_tensors(const ModelFile& file);

struct NameRecognition {
  std::string model;      // canonical catalog name; "" when not recognised
  std::string precision;  // canonical precision; "" = not in the name (the catalog default applies)
  std::vector<std::string> notes;  // why: every answer from a name is a guess and says so
};
// (The precision alone: precision_from_file_name in catalog/file_names.hpp, the one rule set every reader uses.)

// From a file name, for a loader of `loader_role` ("diffusion", "checkpoint", "text_encoder", "vae",
// "clip_vision"). comfy_nodes.json `file_names` (per role, ordered: the first rule whose file_patterns
// match wins) are asked first, because they carry the caveats of near relatives (Flux Fill, Wan VACE);
// a name they do not know goes to models.json `file_patterns` (the longest match wins). Both are the one
// pattern format and matcher of catalog/file_names.hpp.
// A rule naming a model the catalog lacks (a trimmed HEADROOM_DATA_DIR) is ignored.
NameRecognition recognise_file_name(const std::string& file, const std::string& loader_role);

// A ComfyUI model config as a loaded MODEL carries it (comfy/supported_models.py class name, the
// unet_config width and input channels).
struct ComfyModelConfig {
  std::string config_class;
  std::optional<long long> dim;
  std::optional<long long> in_channels;
};
// The catalog model of that config: the first model of the first matching comfy_nodes.json
// `model_configs` rule that the catalog holds; "" when unknown.
std::string recognise_comfy_config(const ComfyModelConfig& config);

// Native decoder family of a VAE state dict from its keys alone, by comfy_nodes.json `vae_key_rules`
// (first match wins): "flux2" (AutoencoderKL plus FLUX.2's latent BatchNorm), "kl" (AutoencoderKL:
// Flux, SD3, SDXL, SD1.5), "wan2.2" or "wan2.1"; "" when none. The only place a VAE family is decided:
// native/torch's decode() dispatches on this answer.
std::string vae_decoder_family(const std::function<bool(const std::string&)>& has_key);

// One comfy_nodes.json `vae_key_rules` entry: the family whose every key in `all` is present.
struct VaeKeyRule {
  std::string family;
  std::vector<std::string> all;
};
// Ordered rules; throws Error naming `file`, the rule and the key on a missing or mistyped field.
std::vector<VaeKeyRule> load_vae_key_rules(const nlohmann::json& comfy_nodes, const std::string& file);
const std::vector<VaeKeyRule>& vae_key_rules();  // from comfy_nodes.json, loaded once

// The comfy_nodes.json rules behind the two name recognisers, typed and checked once.
struct NameRule {
  std::string model;
  // The rule's names, in models.json's file_patterns format (catalog/file_names.hpp), matched by the
  // same matcher; the rule matches when any pattern does.
  std::vector<FilePattern> file_patterns;
  std::string note;                            // caveat to report ("" = none)
  // A family Headroom knows by name but cannot size (no public source gives its widths): its files are
  // named as that family and stay unknown, never taken for a near one. Set instead of `model`.
  std::string unsized;
};
struct ConfigRule {
  std::string config_class;
  std::optional<long long> dim, in_channels;
  bool in_channels_unset = false;  // also matches a config that does not say its input channels
  std::vector<std::string> models; // in order of preference
};
struct NameRules {
  std::map<std::string, std::vector<NameRule>> file_names;  // loader role -> ordered rules
  std::vector<ConfigRule> model_configs;
};
// Throws Error naming `file`, the rule and the key on a missing or mistyped field.
NameRules load_name_rules(const nlohmann::json& comfy_nodes, const std::string& file);
const NameRules& name_rules();  // from comfy_nodes.json, loaded once

}  // namespace headroom
