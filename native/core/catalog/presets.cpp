// Reading native/data/presets.json (see its _about for the meaning of each field).
#include "core/catalog/presets.hpp"

#include <algorithm>
#include <cctype>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"

namespace headroom {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

PresetData load() {
  const nlohmann::json& j = data_file("presets.json");
  auto fail = [](const std::string& what) { throw Error("presets.json: " + what); };
  PresetData d;
  if (!j.contains("changes") || !j["changes"].is_array()) fail("'changes' must be an array");
  for (const auto& c : j["changes"]) {
    ChangeSpec s;
    if (!c.is_object() || !c.contains("kind") || !c["kind"].is_string() || !c.contains("cost") ||
        !c["cost"].is_number_integer())
      fail("each change needs a string 'kind' and an integer 'cost': " + c.dump());
    s.kind = c["kind"].get<std::string>();
    // Which kinds exist is the planner's registry (plan/changes.cpp), checked when it reads these.
    if (d.change(s.kind)) fail("change kind '" + s.kind + "' is listed twice");
    s.cost = c["cost"].get<int>();
    s.widget = c.value("widget", false);
    s.effect = c.value("effect", "");
    s.precision = c.value("precision", "");
    d.changes.push_back(s);
  }
  std::stable_sort(d.changes.begin(), d.changes.end(), [](const ChangeSpec& a, const ChangeSpec& b) { return a.cost < b.cost; });
  const nlohmann::json& s = j.at("search");
  d.search.tile_sizes_px = s.at("tile_sizes_px").get<std::vector<int>>();
  d.search.tile_overlap_px = s.at("tile_overlap_px").get<int>();
  d.search.resolution_scales = s.at("resolution_scales").get<std::vector<double>>();
  d.search.resolution_multiple_px = s.at("resolution_multiple_px").get<int>();
  d.search.min_frames = s.at("min_frames").get<int>();
  d.search.frames_step = s.at("frames_step").get<int>();
  if (d.search.tile_sizes_px.empty() || d.search.resolution_multiple_px <= 0 || d.search.frames_step <= 0)
    fail("'search' needs tile sizes and positive steps");
  if (!j.contains("presets") || !j["presets"].is_array()) fail("'presets' must be an array");
  for (const auto& p : j["presets"]) {
    PresetSpec ps;
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) fail("each preset needs a 'name'");
    ps.name = p["name"].get<std::string>();
    ps.description = p.value("description", "");
    if (p.contains("target_memory_gb")) ps.target_memory_gb = p["target_memory_gb"].get<double>();
    ps.target_request = p.value("target", "") == "request";
    if (p.contains("set")) ps.set = p["set"];
    if (p.contains("until_fits")) ps.until_fits = p["until_fits"].get<std::vector<std::string>>();
    for (const auto& k : ps.until_fits) {
      auto it = std::find_if(d.changes.begin(), d.changes.end(), [&](const ChangeSpec& c) { return c.kind == k; });
      if (it == d.changes.end()) fail("preset '" + ps.name + "' names unknown change '" + k + "'");
      if (!it->widget) fail("preset '" + ps.name + "' uses '" + k + "', which widgets cannot apply");
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
    if (lower(p.name) == lower(name)) return &p;
  return nullptr;
}

const PresetData& preset_data() {
  static const PresetData d = load();
  return d;
}

}  // namespace headroom
