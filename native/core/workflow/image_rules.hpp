#pragma once
// How a ComfyUI node sets the size of the image it outputs, as comfy_nodes.json states it: one rule per
// kind (a fixed size, a factor, a side scaled keeping the aspect, padding, a multiple, another input's size,
// an upscale model's factor). A node with a mode widget (ResizeImageMaskNode's dynamic combo resize_type)
// has one rule per mode, each with the widgets_values order that mode writes.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/data_reader.hpp"

namespace headroom::workflow {

// One side of an image a node sets: a widget it reads, or a fixed figure (the largest of the Kontext
// rescale's resolutions, whatever the image).
struct ImageSide {
  std::string widget;
  std::optional<int> fixed;
};

struct ImageSizeRule {
  ImageSide width, height;
  // The image whose aspect a side of 0 keeps (both 0: its size, unchanged); "": a 0 leaves the size unknown.
  std::string aspect_input;
};

// A node that scales its input image by a factor widget (ImageScaleBy): each side round(side x factor).
struct ScaleByRule {
  std::string factor, input;
};

// A node that scales its input image to a pixel count, keeping the aspect (ImageScaleToTotalPixels):
// widget names of the megapixels (of 1024 x 1024) and of the multiple both sides round to ("": 1).
struct TotalPixelsRule {
  // The pixel count: `megapixels` x 1024^2 (ImageScaleToTotalPixels), or the square of the `side` widget
  // (TextEncodeQwenImage21's resolution, whose 0 keeps the input's own size). One of the two is set.
  std::string megapixels, side, steps, input;
  int fixed_steps = 0;  // a multiple the node always rounds to, where no widget gives it
  // ResizeImageMaskNode truncates megapixels x 1024^2 to a whole pixel count before the square root.
  bool whole_count = false;
};

// A node that scales one side to a widget's pixels keeping the aspect (ImageScaleToMaxDimension: the longer).
enum class SideKind { Longer, Shorter, Width, Height };
struct SideRule {
  std::string widget, input;
  SideKind side = SideKind::Longer;
};

// A node that pads its input by four widgets' pixels (ImagePadForOutpaint).
struct PadRule {
  std::string left, top, right, bottom, input;
};

// A node that crops its input down to a multiple of a widget (ResizeImageMaskNode's "scale to multiple").
struct MultipleRule {
  std::string multiple, input;
};

// A node that upscales its input by the factor of the upscale model linked to `model` (ImageUpscaleWithModel),
// read from the loader's file name (`4x-UltraSharp`, `RealESRGAN_x2plus`).
struct ModelScaleRule {
  std::string model, input;
};

// Every kind a node (or one mode of it) may set its output size by; at most one is set.
struct SizeRules {
  std::optional<ImageSizeRule> size;
  std::optional<TotalPixelsRule> total_pixels;
  std::optional<ScaleByRule> scale_by;
  std::optional<SideRule> side;
  std::optional<PadRule> pad;
  std::optional<MultipleRule> multiple;
  std::optional<ModelScaleRule> model_scale;
  std::string match;  // the input whose size the output takes (ResizeImageMaskNode's "match size")
  bool any() const { return size || total_pixels || scale_by || side || pad || multiple || model_scale || !match.empty(); }
  // The image input the node resizes: what a bypassed node hands on. "" where the rule has none (EmptyImage).
  std::string input() const;
};

// One mode of a mode widget: the widgets_values order it writes, and how it sets the size (none: unknown).
struct ImageMode {
  std::vector<std::string> widgets;
  SizeRules rules;
};

// comfy_nodes.json image_modes: the widget choosing the mode, the image input the node resizes (what it hands
// on when bypassed, whatever the mode) and each mode's rule.
struct ImageModes {
  std::string widget, input;
  std::map<std::string, ImageMode> modes;
};

// Reads the size-rule keys of `j` (image_size, image_total_pixels, image_scale_by, image_side, image_pad,
// image_multiple, image_model_scale, image_match) into `out`; more than one kind fails naming both.
void read_size_rules(const nlohmann::json& j, const DataReader& r, SizeRules& out);
// image_modes: {widget, modes: {mode: {widgets, <one size-rule key>}}}.
ImageModes read_image_modes(const nlohmann::json& j, const DataReader& r);

// The scale factor an upscale model's file name states: a whole `Nx` or `xN` token (N from 1 to 16) at a word
// start (`4x-UltraSharp`, `4xNMKD`, `RealESRGAN_x4plus`, `2x_foo`); nullopt when none or two disagree.
std::optional<int> upscale_factor_of_name(const std::string& file_name);

}  // namespace headroom::workflow
