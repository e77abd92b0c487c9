// comfy_nodes.json's image size rules -> SizeRules / ImageModes, every key checked (a typo fails naming the
// node and the key rather than leaving a size silently unknown).
#include "core/workflow/image_rules.hpp"

#include <cctype>

namespace headroom::workflow {

using nlohmann::json;

namespace {

// {"width": widget name or pixels, "height": ...}: a number is a fixed size, within ComfyUI's 16384.
ImageSizeRule read_image_size(const json& j, const DataReader& r) {
  if (!j.is_object()) r.fail("(entry)", "expected {width, height}, each a widget name or a number of pixels");
  r.known(j, {"width", "height", "aspect_input"});
  auto side = [&](const char* key) {
    ImageSide s;
    auto it = j.find(key);
    if (it == j.end()) r.fail(key, "is missing");
    if (it->is_number_integer()) {
      const long long px = it->get<long long>();
      if (px < 16 || px > 16384) r.fail(key, "expected 16 to 16384 pixels, got " + std::to_string(px));
      s.fixed = static_cast<int>(px);
    } else {
      s.widget = r.text(j, key, true);
    }
    return s;
  };
  return ImageSizeRule{side("width"), side("height"), r.text(j, "aspect_input")};
}

// image_total_pixels: the size a node scales its image input to, from a megapixels or side widget.
TotalPixelsRule read_total_pixels(const json& t, const DataReader& tr) {
  if (!t.is_object()) tr.fail("(entry)", "expected {megapixels or side, steps, input}: widget names and the image input");
  tr.known(t, {"megapixels", "side", "steps", "input", "whole_count"});
  TotalPixelsRule rule;
  rule.megapixels = tr.text(t, "megapixels");
  rule.side = tr.text(t, "side");
  if (rule.megapixels.empty() == rule.side.empty()) tr.fail("megapixels", "and side: expected exactly one of them");
  if (auto s = t.find("steps"); s != t.end() && s->is_number_integer()) {
    rule.fixed_steps = s->get<int>();
    if (rule.fixed_steps < 1 || rule.fixed_steps > 16384) tr.fail("steps", "expected 1 to 16384 pixels or a widget name");
  } else {
    rule.steps = tr.text(t, "steps");
  }
  rule.input = tr.text(t, "input", true);
  rule.whole_count = tr.flag(t, "whole_count");
  return rule;
}

SideRule read_side(const json& j, const DataReader& r) {
  if (!j.is_object()) r.fail("(entry)", "expected {side, widget, input}");
  r.known(j, {"side", "widget", "input"});
  static const std::pair<const char*, SideKind> kSides[] = {
      {"longer", SideKind::Longer}, {"shorter", SideKind::Shorter}, {"width", SideKind::Width}, {"height", SideKind::Height}};
  const std::string side = r.text(j, "side", true);
  for (const auto& [name, kind] : kSides)
    if (side == name) return SideRule{r.text(j, "widget", true), r.text(j, "input", true), kind};
  r.fail("side", "expected longer, shorter, width or height, got '" + side + "'");
}

PadRule read_pad(const json& j, const DataReader& r) {
  if (!j.is_object()) r.fail("(entry)", "expected {left, top, right, bottom, input}: widget names and the image input");
  r.known(j, {"left", "top", "right", "bottom", "input"});
  return {r.text(j, "left", true), r.text(j, "top", true), r.text(j, "right", true), r.text(j, "bottom", true),
          r.text(j, "input", true)};
}

// {<widget key>: widget name, "input": image input} objects of two fields (image_multiple, image_model_scale).
std::pair<std::string, std::string> read_pair(const json& j, const DataReader& r, const char* key) {
  if (!j.is_object()) r.fail("(entry)", std::string("expected {") + key + ", input}");
  r.known(j, {key, "input"});
  return {r.text(j, key, true), r.text(j, "input", true)};
}

// Counts the kinds set so far: a second one fails naming the key.
void one_kind(const SizeRules& out, const DataReader& r, const char* key) {
  if (out.any()) r.fail(key, "and another size rule both set the size: keep one");
}

}  // namespace

std::string SizeRules::input() const {
  if (size) return size->aspect_input;
  if (total_pixels) return total_pixels->input;
  if (scale_by) return scale_by->input;
  if (side) return side->input;
  if (pad) return pad->input;
  if (multiple) return multiple->input;
  if (model_scale) return model_scale->input;
  return "";
}

void read_size_rules(const json& j, const DataReader& r, SizeRules& out) {
  const auto sub = [&](const char* key) { return DataReader{r.file, r.where + "." + key}; };
  if (auto it = j.find("image_size"); it != j.end()) out.size = read_image_size(*it, sub("image_size"));
  if (auto it = j.find("image_total_pixels"); it != j.end()) {
    one_kind(out, r, "image_total_pixels");
    out.total_pixels = read_total_pixels(*it, sub("image_total_pixels"));
  }
  if (auto it = j.find("image_scale_by"); it != j.end()) {
    one_kind(out, r, "image_scale_by");
    const DataReader sr = sub("image_scale_by");
    if (!it->is_object()) sr.fail("(entry)", "expected {factor, input}: the factor widget and the image input");
    sr.known(*it, {"factor", "input"});
    out.scale_by = ScaleByRule{sr.text(*it, "factor", true), sr.text(*it, "input", true)};
  }
  if (auto it = j.find("image_side"); it != j.end()) {
    one_kind(out, r, "image_side");
    out.side = read_side(*it, sub("image_side"));
  }
  if (auto it = j.find("image_pad"); it != j.end()) {
    one_kind(out, r, "image_pad");
    out.pad = read_pad(*it, sub("image_pad"));
  }
  if (auto it = j.find("image_multiple"); it != j.end()) {
    one_kind(out, r, "image_multiple");
    const auto [multiple, input] = read_pair(*it, sub("image_multiple"), "multiple");
    out.multiple = MultipleRule{multiple, input};
  }
  if (auto it = j.find("image_model_scale"); it != j.end()) {
    one_kind(out, r, "image_model_scale");
    const auto [model, input] = read_pair(*it, sub("image_model_scale"), "model");
    out.model_scale = ModelScaleRule{model, input};
  }
  if (j.contains("image_match")) {
    one_kind(out, r, "image_match");
    out.match = r.text(j, "image_match", true);
  }
}

ImageModes read_image_modes(const json& j, const DataReader& r) {
  if (!j.is_object()) r.fail("(entry)", "expected {widget, input, modes: {mode: {widgets, size rule}}}");
  r.known(j, {"widget", "input", "modes"});
  ImageModes out{r.text(j, "widget", true), r.text(j, "input", true), {}};
  const auto modes = j.find("modes");
  if (modes == j.end() || !modes->is_object() || modes->empty()) r.fail("modes", "expected {mode: {widgets, size rule}}");
  for (const auto& [name, m] : modes->items()) {
    const DataReader mr{r.file, r.where + ".modes." + name};
    if (!m.is_object()) mr.fail("(entry)", "expected {widgets, and one size rule or none}");
    mr.known(m, {"widgets", "image_size", "image_total_pixels", "image_scale_by", "image_side", "image_pad",
                 "image_multiple", "image_model_scale", "image_match"});
    ImageMode mode;
    if (!m.contains("widgets")) mr.fail("widgets", "is missing: the widgets_values order this mode writes");
    mode.widgets = mr.words(m["widgets"], "widgets", true);
    if (mode.widgets.empty() || mode.widgets[0] != out.widget)
      mr.fail("widgets", "expected the mode widget '" + out.widget + "' first, then the mode's own widgets");
    read_size_rules(m, mr, mode.rules);
    out.modes.emplace(name, std::move(mode));
  }
  return out;
}

std::optional<int> upscale_factor_of_name(const std::string& file_name) {
  std::string s;
  for (char c : file_name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const auto slash = s.find_last_of("/\\"); slash != std::string::npos) s = s.substr(slash + 1);
  const auto alnum = [&](std::size_t i) { return i < s.size() && std::isalnum(static_cast<unsigned char>(s[i])); };
  const auto digit = [&](std::size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); };
  std::optional<int> found;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && alnum(i - 1)) continue;  // a token starts a word: `x4` in `_x4plus`, not in `flux4`
    std::size_t d = i, end = i;
    if (s[i] == 'x' && digit(i + 1)) {  // xN
      d = i + 1;
      for (end = d; digit(end);) ++end;
    } else if (digit(i)) {  // Nx
      for (end = i; digit(end);) ++end;
      if (end >= s.size() || s[end] != 'x') continue;
      if (digit(end + 1)) continue;  // `2x2` is a grid, not a factor
    } else {
      continue;
    }
    if (end - d > 2) continue;
    const int n = std::stoi(s.substr(d, end - d));
    if (n < 1 || n > 16) continue;
    if (found && *found != n) return std::nullopt;
    found = n;
  }
  return found;
}

}  // namespace headroom::workflow
