// The one recogniser (see recognise.hpp). Name rules are comfy_nodes.json data checked at load, in the
// file-pattern format the catalog reads and matches (catalog/file_names.hpp); the precedence between
// them is the only code here.
#include "core/inspect/recognise.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/data_reader.hpp"
#include "core/catalog/catalog.hpp"

namespace headroom {
namespace {

using nlohmann::json;

// --- comfy_nodes.json: typed, every field checked --------------------------------------------------

using Reader = DataReader;

NameRule read_name_rule(const json& j, const Reader& r) {
  if (!j.is_object()) r.fail("rule", "expected an object");
  r.known(j, {"model", "file_patterns", "note", "unsized"});
  NameRule rule;
  rule.unsized = r.text(j, "unsized", false);
  rule.model = r.text(j, "model", rule.unsized.empty());
  if (!rule.model.empty() && !rule.unsized.empty())
    r.fail("unsized", "and model both set: a rule names a catalog model or a family Headroom cannot size, not both");
  rule.note = r.text(j, "note", !rule.unsized.empty());  // an unsized family says which source its widths lack
  if (!j.contains("file_patterns")) r.fail("file_patterns", "is missing (a rule needs the names it matches)");
  rule.file_patterns = read_file_patterns(j["file_patterns"], "file_patterns",
                                          [&](const std::string& key, const std::string& what) { r.fail(key, what); });
  return rule;
}

ConfigRule read_config_rule(const json& j, const Reader& r) {
  if (!j.is_object()) r.fail("rule", "expected an object");
  r.known(j, {"config_class", "dim", "in_channels", "in_channels_unset", "models", "source"});
  ConfigRule rule;
  rule.config_class = r.text(j, "config_class", true);
  rule.dim = r.integer(j, "dim");
  rule.in_channels = r.integer(j, "in_channels");
  if (j.contains("in_channels_unset")) {
    if (!j["in_channels_unset"].is_boolean()) r.fail("in_channels_unset", "expected true or false");
    rule.in_channels_unset = j["in_channels_unset"].get<bool>();
  }
  if (!j.contains("models")) r.fail("models", "is missing");
  rule.models = r.words(j["models"], "models");
  if (rule.models.empty()) r.fail("models", "expected at least one model");
  return rule;
}

// Canonical names of the catalog, for exact checks without the alias search of find_model.
bool in_catalog(const std::string& name) {
  static const std::unordered_set<std::string> names = [] {
    std::unordered_set<std::string> n;
    for (const auto& m : catalog_data().models) n.insert(m.name);
    return n;
  }();
  return names.count(name) > 0;
}

// Whether a loader of `loader_role` loads a model of m's catalog role (a checkpoint bundles a diffusion model).
bool role_matches(const ModelInfo& m, const std::string& loader_role) {
  static const std::map<std::string, Role> loads = {{"diffusion", Role::DiffusionModel},
                                                    {"checkpoint", Role::DiffusionModel},
                                                    {"text_encoder", Role::TextEncoder},
                                                    {"clip_vision", Role::ClipVision},
                                                    {"vae", Role::Vae},
                                                    {"audio_encoder", Role::AudioEncoder},
                                                    {"model_patch", Role::ModelPatch}};
  const auto it = loads.find(loader_role);
  return it != loads.end() && it->second == m.role;
}

}  // namespace

NameRules load_name_rules(const json& data, const std::string& file) {
  NameRules out;
  Reader top{file, "top level"};
  if (!data.is_object()) top.fail("(document)", "expected an object");
  auto fn = data.find("file_names");
  if (fn == data.end() || !fn->is_object()) top.fail("file_names", "expected an object {role: [rules]}");
  for (const auto& [role, rules] : fn->items()) {
    if (role == "source") continue;
    Reader r{file, "file_names." + role};
    if (!rules.is_array()) r.fail(role, "expected an array of rules");
    auto& list = out.file_names[role];
    for (std::size_t i = 0; i < rules.size(); ++i)
      list.push_back(read_name_rule(rules[i], Reader{file, "file_names." + role + "[" + std::to_string(i) + "]"}));
  }
  auto mc = data.find("model_configs");
  if (mc == data.end() || !mc->is_array()) top.fail("model_configs", "expected an array of rules");
  for (std::size_t i = 0; i < mc->size(); ++i)
    out.model_configs.push_back(read_config_rule((*mc)[i], Reader{file, "model_configs[" + std::to_string(i) + "]"}));
  return out;
}

const NameRules& name_rules() {
  static const NameRules rules = load_name_rules(data_file("comfy_nodes.json"), data_file_label("comfy_nodes.json"));
  return rules;
}

Inspection recognise_tensors(const ModelFile& file) { return summarise(file, data_file("models.json")); }

static bool named_by_rules(const std::string& role, const std::string& model) {
  auto it = name_rules().file_names.find(role);
  if (it == name_rules().file_names.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const NameRule& r) { return r.model == model; });
}

NameRecognition recognise_file_name(const std::string& file, const std::string& loader_role) {
  NameRecognition g;
  const std::string stem = model_file_stem(file);
  // A checkpoint is named after the diffusion model it bundles.
  const std::string rules_role = loader_role == "checkpoint" ? "diffusion" : loader_role;
  const NameRule* hit = nullptr;
  auto it = name_rules().file_names.find(rules_role);
  if (it != name_rules().file_names.end())
    for (const auto& rule : it->second)
      if (file_patterns_score(rule.file_patterns, stem) > 0) {
        hit = &rule;
        break;
      }
  const NameRule* unsized = hit && !hit->unsized.empty() ? hit : nullptr;
  if (hit && !in_catalog(hit->model)) hit = nullptr;
  // The catalog's own file patterns, asked once: they decide when no rule matches, and also when they
  // name a catalog model the rules never name (a family added since, such as a FLUX.2 file that a
  // "flux" rule would take for FLUX.1), so a new family is never taken for an older one.
  const ModelInfo* by_pattern = nullptr;
  if (const ModelInfo* info = model_from_file_name(file); info && role_matches(*info, loader_role)) by_pattern = info;
  if (by_pattern && !named_by_rules(rules_role, by_pattern->name)) hit = nullptr;
  if (hit) {
    g.model = hit->model;
    g.notes.push_back("'" + file + "' taken for " + g.model + " from its file name");
    if (!hit->note.empty()) g.notes.push_back(hit->note);
  } else if (by_pattern) {
    g.model = by_pattern->name;
    g.notes.push_back("'" + file + "' taken for " + g.model + " from its file name (catalog file patterns)");
  } else if (unsized) {
    g.notes.push_back("'" + file + "' is " + unsized->unsized + ", whose architecture Headroom does not know: " + unsized->note);
  }
  g.precision = precision_from_file_name(file).value_or("");
  if (!g.precision.empty())
    g.notes.push_back("precision " + g.precision + " of '" + file + "' taken from its file name");
  return g;
}

std::string recognise_comfy_config(const ComfyModelConfig& c) {
  for (const auto& rule : name_rules().model_configs) {
    if (rule.config_class != c.config_class) continue;
    if (rule.dim && (!c.dim || *c.dim != *rule.dim)) continue;
    if (rule.in_channels) {
      const bool unset = !c.in_channels || *c.in_channels == 0;
      if (unset ? !rule.in_channels_unset : *c.in_channels != *rule.in_channels) continue;
    }
    for (const auto& m : rule.models)
      if (in_catalog(m)) return m;
  }
  return "";
}

std::vector<VaeKeyRule> load_vae_key_rules(const json& data, const std::string& file) {
  Reader top{file, "top level"};
  if (!data.is_object()) top.fail("(document)", "expected an object");
  auto section = data.find("vae_key_rules");
  if (section == data.end() || !section->is_object())
    top.fail("vae_key_rules", "expected an object {\"source\": ..., \"rules\": [{family, all}]}");
  Reader sr{file, "vae_key_rules"};
  sr.known(*section, {"source", "rules"});
  auto rules = section->find("rules");
  if (rules == section->end() || !rules->is_array() || rules->empty())
    sr.fail("rules", "expected a non-empty array of {family, all} rules");
  std::vector<VaeKeyRule> out;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const json& j = (*rules)[i];
    Reader r{file, "vae_key_rules.rules[" + std::to_string(i) + "]"};
    if (!j.is_object()) r.fail("rule", "expected an object {family, all}");
    r.known(j, {"family", "all"});
    VaeKeyRule rule;
    rule.family = r.text(j, "family", true);
    if (!j.contains("all")) r.fail("all", "is missing");
    rule.all = r.words(j["all"], "all");
    if (rule.all.empty()) r.fail("all", "expected at least one key (an empty rule would take every state dict)");
    out.push_back(std::move(rule));
  }
  return out;
}

const std::vector<VaeKeyRule>& vae_key_rules() {
  static const std::vector<VaeKeyRule> rules = load_vae_key_rules(data_file("comfy_nodes.json"), data_file_label("comfy_nodes.json"));
  return rules;
}

std::string vae_decoder_family(const std::function<bool(const std::string&)>& has_key) {
  // Ordered: a rule that extends another (FLUX.2 = KL + its latent BatchNorm) comes first.
  for (const auto& rule : vae_key_rules())
    if (std::all_of(rule.all.begin(), rule.all.end(), has_key)) return rule.family;
  return "";
}

}  // namespace headroom
