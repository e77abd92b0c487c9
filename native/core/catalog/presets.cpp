// Reading native/data/presets.json (see its _about for the meaning of each field).
#include "core/catalog/presets.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/catalog/json_fields.hpp"
#include "core/base/text.hpp"

namespace headroom {

namespace {

// Every field is read typed and in range, naming the file, the entry and the key when it is not: a
// planner search step of 0 or a tile of -1 px would otherwise loop or size tiles nobody can run.
PresetData load() {
  const nlohmann::json& j = data_file("presets.json");
  const std::string file = data_file_label("presets.json");
  const JsonFields top(j, file);
  if (!j.is_object()) throw Error(file + ": expected an object with 'changes', 'search' and 'presets'");
  PresetData d;
  const nlohmann::json& changes = top.array("changes");
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const std::string at = "changes[" + std::to_string(i) + "]";
    if (!changes[i].is_object()) top.fail(at.c_str(), "expected an object {kind, cost, ...}");
    const JsonFields c(changes[i], file, at);
    ChangeSpec spec;
    spec.kind = c.text("kind");
    // Which kinds exist is the planner's registry (plan/changes.cpp), checked when it reads these.
    if (d.change(spec.kind)) c.fail("kind", "'" + spec.kind + "' is listed twice");
    spec.cost = c.integer("cost", {0, 1000});
    spec.widget = c.optional_flag("widget").value_or(false);
    spec.effect = c.optional_text("effect").value_or("");
    spec.precision = c.optional_text("precision").value_or("");
    d.changes.push_back(spec);
  }
  std::stable_sort(d.changes.begin(), d.changes.end(), [](const ChangeSpec& a, const ChangeSpec& b) { return a.cost < b.cost; });
  const JsonFields search = top.object("search");
  d.search.tile_sizes_px = search.integers("tile_sizes_px", {64, 8192});
  d.search.tile_overlap_px = search.integer("tile_overlap_px", {0, 1024});
  for (double scale : search.numbers("resolution_scales")) {
    if (!(scale > 0 && scale < 1))
      search.fail("resolution_scales", "holds " + json_preview(nlohmann::json(scale)) + "; expected scales between 0 and 1 (exclusive)");
    d.search.resolution_scales.push_back(scale);
  }
  d.search.resolution_multiple_px = search.integer("resolution_multiple_px", {1, 1024});
  d.search.min_frames = search.integer("min_frames", {1, 1 << 16});
  d.search.frames_step = search.integer("frames_step", {1, 1024});
  const nlohmann::json& presets = top.array("presets");
  for (std::size_t i = 0; i < presets.size(); ++i) {
    const std::string at = "presets[" + std::to_string(i) + "]";
    if (!presets[i].is_object()) top.fail(at.c_str(), "expected an object {name, description, ...}");
    const JsonFields p(presets[i], file, at);
    PresetSpec ps;
    ps.name = p.text("name");
    if (d.preset(ps.name)) p.fail("name", "'" + ps.name + "' is listed twice");
    ps.description = p.optional_text("description").value_or("");
    ps.target_memory_gb = p.optional_number("target_memory_gb", {0.25, 65536});
    if (auto target = p.optional_text("target")) {
      if (*target != "request") p.fail("target", "expected \"request\" (the user's card), got '" + *target + "'");
      ps.target_request = true;
    }
    if (auto set = p.optional_object("set")) {
      ps.set = presets[i].at("set");
      for (const auto& kv : ps.set.items()) {
        static const std::map<std::string, std::vector<std::string>> allowed = {
            {"weight_dtype", {}}, {"decode", {"full", "tiled"}}, {"text_encoder_device", {"default", "cpu"}}};
        auto rule = allowed.find(kv.key());
        if (rule == allowed.end()) set->fail(kv.key().c_str(), "is not a setting presets apply (expected weight_dtype, decode or text_encoder_device)");
        const std::string value = set->text(kv.key().c_str());
        if (!rule->second.empty() && std::find(rule->second.begin(), rule->second.end(), value) == rule->second.end())
          set->fail(kv.key().c_str(), "is '" + value + "'; expected " + rule->second[0] + " or " + rule->second[1]);
      }
    }
    if (p.has("until_fits")) ps.until_fits = p.texts("until_fits");
    for (const auto& k : ps.until_fits) {
      const ChangeSpec* change = d.change(k);
      if (change == nullptr) p.fail("until_fits", "names unknown change '" + k + "'");
      if (!change->widget) p.fail("until_fits", "uses '" + k + "', which widgets cannot apply");
    }
    d.presets.push_back(ps);
  }
  return d;
}

}  // namespace

const ChangeSpec* PresetData::change(const std::string& kind) const {
  for (const auto& c : changes)
    if (c.kind == kind) return &c;
  return nullptr;
}

const PresetSpec* PresetData::preset(const std::string& name) const {
  for (const auto& p : presets)
    if (lower_ascii(p.name) == lower_ascii(name)) return &p;
  return nullptr;
}

const PresetData& preset_data() {
  static const PresetData d = load();
  return d;
}

}  // namespace headroom
