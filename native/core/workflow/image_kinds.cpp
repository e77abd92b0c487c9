// The image size rule kinds past a fixed size, a factor and a pixel count (image_size.cpp): each computes the
// output size as ComfyUI's node does, rounding included, and says how much of it is known (SizeOrigin).
#include <algorithm>
#include <cmath>

#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/image_walk.hpp"
#include "core/workflow/workflow_values.hpp"

namespace headroom::workflow {

namespace {

// Python's round (half to even) of a double, as ComfyUI rounds its sides: std::nearbyint in the default mode.
long long py_round(double v) { return static_cast<long long>(std::nearbyint(v)); }

// A whole widget value from `lo` to 16384, or nullopt.
std::optional<long long> pixels(const Node& n, const std::string& widget, const ImageReaders& rd, long long lo) {
  const auto v = rd.integer_of(n, widget);
  if (!v || *v < lo || *v > kMaxImageSide) return std::nullopt;
  return v;
}

ImageSize bad_widget(const Node& n, const std::string& widget, long long lo) {
  return unknown_image_size(n, "its " + widget + " is not a whole number of pixels from " + std::to_string(lo) +
                                   " to 16384 that the workflow gives");
}

// The input's size where it is known exactly; otherwise the reason, naming `n` where the input is only bounded.
bool exact_input(const Node& n, const ImageSize& in, ImageSize& why) {
  if (in.known() && in.origin == SizeOrigin::Exact) return true;
  why = in.known() ? unknown_image_size(n, "its output follows its input's aspect, which is known only as " +
                                               std::string(size_origin_name(in.origin)) + " (" + in.note + ")")
                   : in;
  return false;
}

}  // namespace

// ImageScaleToMaxDimension and ResizeImageMaskNode's longer/shorter/width/height modes (comfy_extras/
// nodes_images.py, nodes_post_processing.py): longer, if h > w: w = round(w / h x L), h = L, and the mirror;
// a square becomes L x L. width: h = max(1, round(h x W / w)), and the mirror. A longer side of an image of
// unknown size is at most L, so L x L bounds it (at_most); the other kinds need the input's aspect.
ImageSize side_scaled(const Graph& g, const Node& n, const SideRule& rule, const ImageReaders& rd, int hops) {
  const bool plain_side = rule.side == SideKind::Width || rule.side == SideKind::Height;
  const auto target = pixels(n, rule.widget, rd, plain_side ? 0 : 1);
  if (!target) return bad_widget(n, rule.widget, plain_side ? 0 : 1);
  const ImageSize in = image_into(g, n, rule.input, rd, hops);
  if (rule.side == SideKind::Longer && !(in.known() && in.origin == SizeOrigin::Exact)) {
    const std::string what = in.known() ? "known only as " + std::string(size_origin_name(in.origin))
                                        : "unknown (" + in.node_type + " #" + in.node_id + ": " + in.why + ")";
    return image_of(n, *target, *target, SizeOrigin::AtMost,
                    n.type + " #" + n.id + ": the input image's size is " + what + "; its longer side becomes " +
                        std::to_string(*target) + " px, so it is sized as the " + std::to_string(*target) + "x" +
                        std::to_string(*target) + " square that holds it (size_origin at_most: an upper bound, so "
                        "the peak is not under the run's; a 'does not fit' may be pessimistic)");
  }
  ImageSize why;
  if (!exact_input(n, in, why)) return why;
  const double w = *in.width, h = *in.height, t = static_cast<double>(*target);
  switch (rule.side) {
    case SideKind::Longer:
      if (h > w) return image_of(n, py_round((w / h) * t), *target);
      if (w > h) return image_of(n, *target, py_round((h / w) * t));
      return image_of(n, *target, *target);
    case SideKind::Shorter:
      if (h < w) return image_of(n, py_round((w / h) * t), *target);
      if (w < h) return image_of(n, *target, py_round((h / w) * t));
      return image_of(n, *target, *target);
    case SideKind::Width:
      if (*target == 0) return in;  // ComfyUI's scale_dimensions(0, 0) hands the image on
      return image_of(n, *target, std::max(1LL, py_round(h * t / w)));
    case SideKind::Height:
      if (*target == 0) return in;
      return image_of(n, std::max(1LL, py_round(w * t / h)), *target);
  }
  return in;
}

// ImageScale's and ResizeImageMaskNode's "scale dimensions" with a 0 side: it keeps the input's aspect,
// max(1, round(w x H / h)) (and the mirror); both 0 hand the input on unchanged.
ImageSize aspect_kept(const Graph& g, const Node& n, long long w, long long h, const std::string& input,
                      const ImageReaders& rd, int hops) {
  const ImageSize in = image_into(g, n, input, rd, hops);
  if (w == 0 && h == 0) return in;
  ImageSize why;
  if (!exact_input(n, in, why)) return why;
  if (w == 0) return image_of(n, std::max(1LL, py_round(static_cast<double>(*in.width) * h / *in.height)), h);
  return image_of(n, w, std::max(1LL, py_round(static_cast<double>(*in.height) * w / *in.width)));
}

// ImagePadForOutpaint (nodes.py): (w + left + right) x (h + top + bottom). A bound of the input pads to a bound.
ImageSize padded(const Graph& g, const Node& n, const PadRule& rule, const ImageReaders& rd, int hops) {
  long long sides[4] = {0, 0, 0, 0};
  const std::string* names[4] = {&rule.left, &rule.top, &rule.right, &rule.bottom};
  for (int k = 0; k < 4; ++k) {
    const auto v = pixels(n, *names[k], rd, 0);
    if (!v) return bad_widget(n, *names[k], 0);
    sides[k] = *v;
  }
  const ImageSize in = image_into(g, n, rule.input, rd, hops);
  if (!in.known()) return in;
  if (in.origin == SizeOrigin::PixelCount)
    return unknown_image_size(n, "it pads an image whose aspect is unknown (" + in.note + ")");
  return image_of(n, *in.width + sides[0] + sides[2], *in.height + sides[1] + sides[3], in.origin, in.note);
}

// ResizeImageMaskNode's "scale to multiple" (scale_to_multiple_cover): each side floor(side / m) x m, the image
// scaled to cover it and cropped; m <= 1, or a side that would be 0, hands the input on. Flooring keeps a bound.
ImageSize to_multiple(const Graph& g, const Node& n, const MultipleRule& rule, const ImageReaders& rd, int hops) {
  const auto m = pixels(n, rule.multiple, rd, 1);
  if (!m) return bad_widget(n, rule.multiple, 1);
  const ImageSize in = image_into(g, n, rule.input, rd, hops);
  if (!in.known() || *m <= 1) return in;
  if (in.origin == SizeOrigin::PixelCount)
    return unknown_image_size(n, "it crops to a multiple an image whose aspect is unknown (" + in.note + ")");
  const long long w = *in.width / *m * *m, h = *in.height / *m * *m;
  if (w == 0 || h == 0) return in;
  return image_of(n, w, h, in.origin, in.note);
}

// ImageUpscaleWithModel (comfy_extras/nodes_upscale_model.py): tiled_scale by the model's scale, each side x
// scale. The scale is the model's own; the file name's `4x`/`x2` token states it (unknown without one).
ImageSize model_scaled(const Graph& g, const Node& n, const ModelScaleRule& rule, const ImageReaders& rd, int hops) {
  const Node* loader = source_of(g, n, rule.model);
  const ComfyNode* info = loader ? comfy_nodes().find(loader->type) : nullptr;
  if (!loader || !info || info->upscale_model_file.empty())
    return unknown_image_size(n, "its " + rule.model + " comes from no upscale model loader Headroom reads");
  const auto file = rd.text_of(*loader, info->upscale_model_file);
  const auto factor = file ? upscale_factor_of_name(*file) : std::nullopt;
  if (!factor)
    return unknown_image_size(*loader, "its " + info->upscale_model_file + " '" + file.value_or("") +
                                           "' states no scale factor (a token such as 4x or x2); the upscale is unknown");
  const ImageSize in = image_into(g, n, rule.input, rd, hops);
  if (!in.known()) return in;
  return image_of(n, static_cast<long long>(*in.width) * *factor, static_cast<long long>(*in.height) * *factor,
                  in.origin, in.note);
}

}  // namespace headroom::workflow
