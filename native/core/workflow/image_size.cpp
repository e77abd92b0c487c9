#include "core/workflow/image_size.hpp"

#include "core/workflow/comfy_nodes.hpp"
#include "core/workflow/image_walk.hpp"

#include <algorithm>
#include <cmath>

namespace headroom::workflow {

namespace {

constexpr long long kMaxSide = kMaxImageSide;
using Readers = ImageReaders;

// A side's pixels; 0 only where `zero_ok` (a side that keeps the aspect), nullopt for anything else.
std::optional<int> side(const Node& n, const ImageSide& s, const IntegerOf& integer_of, bool zero_ok = false) {
  if (s.fixed) return s.fixed;
  auto v = integer_of(n, s.widget);
  if (!v || *v < (zero_ok ? 0 : 1) || *v > kMaxSide) return std::nullopt;
  return static_cast<int>(*v);
}

ImageSize walk(const Graph& g, const Node* n, std::string input, const Readers& rd, int hops);

ImageSize set_by(const Graph& g, const Node& n, const ImageSizeRule& rule, const Readers& rd, int hops) {
  const IntegerOf& integer_of = rd.integer_of;
  const bool zero_ok = !rule.aspect_input.empty();
  ImageSize out{side(n, rule.width, integer_of, zero_ok), side(n, rule.height, integer_of, zero_ok), n.id, n.type, "", ""};
  if (out.known() && (*out.width == 0 || *out.height == 0))
    return aspect_kept(g, n, *out.width, *out.height, rule.aspect_input, rd, hops);
  // ImageScale with 0 keeps the image's aspect from one side: the other one is the image's own.
  if (!out.known()) out.why = "its width/height are not both pixel counts the workflow gives";
  return out;
}

// Chains of image nodes are short; the bound only stops a cycle in a hostile workflow.
constexpr int kMaxHops = 64;

// ComfyUI's ImageScaleToTotalPixels: scale = sqrt(megapixels x 1024^2 / (w x h)), each side
// round(side x scale / steps) x steps (Python's round: half to even, as std::nearbyint). Where the input's
// aspect is unknown (a loaded image) the pixel count still is known, and a DiT's tokens follow the pixel
// count, not the aspect: the job is sized as the square of that count, and the note says so.
// TextEncodeQwenImage21: a resolution of 0 keeps the input image's own size, each side rounded to the
// multiple; with no image linked the latent is a resolution square.
ImageSize side_rule_without_scale(const Graph& g, const Node& n, const TotalPixelsRule& rule, long long side,
                                  long long steps, const Readers& rd, int hops) {
  const Input* linked = n.input(rule.input);
  if (!linked || !linked->from_node) {
    if (side == 0) return unknown_image_size(n, "its " + rule.side + " is 0 and no image is linked to " + rule.input);
    return {static_cast<int>(side), static_cast<int>(side), n.id, n.type, "", ""};
  }
  const ImageSize in = walk(g, &n, rule.input, rd, hops + 1);
  if (!in.known()) return in;
  const auto snap = [steps](int v) {
    return static_cast<int>(std::max<long long>(steps, static_cast<long long>(std::nearbyint(double(v) / steps)) * steps));
  };
  return image_of(n, snap(*in.width), snap(*in.height), in.origin, in.note);
}

ImageSize scaled_to_total(const Graph& g, const Node& n, const TotalPixelsRule& rule, const Readers& rd, int hops) {
  long long steps = rule.fixed_steps > 0 ? rule.fixed_steps : 1;
  if (!rule.steps.empty()) {
    if (auto s = rd.integer_of(n, rule.steps)) steps = *s;
    if (steps < 1 || steps > kMaxSide) return unknown_image_size(n, "its " + rule.steps + " is not a whole number from 1 to 16384");
  }
  double total = 0;
  if (!rule.side.empty()) {
    const auto side = rd.integer_of(n, rule.side);
    if (!side || *side < 0 || *side > kMaxSide)
      return unknown_image_size(n, "its " + rule.side + " is not a whole number of pixels from 0 to 16384 that the workflow gives");
    const Input* linked = n.input(rule.input);
    if (*side == 0 || !linked || !linked->from_node)
      return side_rule_without_scale(g, n, rule, *side, steps, rd, hops);
    total = static_cast<double>(*side) * static_cast<double>(*side);
  } else {
    const auto mp = rd.number_of(n, rule.megapixels);
    if (!mp || !(*mp > 0) || *mp > 16)
      return unknown_image_size(n, "its " + rule.megapixels + " is not a number of megapixels above 0 and at most 16 (ComfyUI's range) that the workflow gives");
    total = *mp * 1024.0 * 1024.0;
    if (rule.whole_count) total = std::floor(total);
  }
  const auto snap = [steps](double side) {
    return std::max<long long>(steps, static_cast<long long>(std::nearbyint(side / steps)) * steps);
  };
  const ImageSize in = walk(g, &n, rule.input, rd, hops + 1);
  long long w = 0, h = 0;
  std::string note;
  if (in.known() && in.origin == SizeOrigin::Exact) {
    const double scale = std::sqrt(total / (static_cast<double>(*in.width) * *in.height));
    w = snap(*in.width * scale);
    h = snap(*in.height * scale);
  } else {
    // The count does not depend on the input's size, only the aspect does: a bound or a count of the input is
    // as good as nothing here.
    w = h = snap(std::sqrt(total));
    const std::string what = in.known() ? "known only as " + std::string(size_origin_name(in.origin)) + " (" + in.note + ")"
                                        : "unknown (" + in.node_type + " #" + in.node_id + ": " + in.why + ")";
    note = n.type + " #" + n.id + ": the input image's aspect is " + what + "; sized as a " + std::to_string(w) + "x" +
           std::to_string(h) + " square of the same pixel count (size_origin pixel_count), which gives a DiT the " +
           "same number of tokens to within rounding";
    if (w > kMaxSide) return unknown_image_size(n, "it scales past ComfyUI's 16384 px side");
    return image_of(n, w, h, SizeOrigin::PixelCount, note);
  }
  if (w > kMaxSide || h > kMaxSide) return unknown_image_size(n, "it scales past ComfyUI's 16384 px side");
  return image_of(n, w, h);
}

// ComfyUI's ImageScaleBy: each side round(side x factor) (Python's round: half to even, as std::nearbyint).
ImageSize scaled_by(const Graph& g, const Node& n, const ScaleByRule& rule, const Readers& rd, int hops) {
  const auto factor = rd.number_of(n, rule.factor);
  if (!factor || !(*factor > 0) || *factor > 8)
    return unknown_image_size(n, "its " + rule.factor + " is not a factor above 0 and at most 8 that the workflow gives");
  const ImageSize in = walk(g, &n, rule.input, rd, hops + 1);
  if (!in.known()) return in;
  const long long w = static_cast<long long>(std::nearbyint(*in.width * *factor));
  const long long h = static_cast<long long>(std::nearbyint(*in.height * *factor));
  return image_of(n, w, h, in.origin, in.note);  // a bound or a count scales with the sides
}

// The rules a node sets its output size by, in the mode its mode widget reads; nullptr (and `why`) where the
// mode is not one the data derives.
const SizeRules* rules_of(const Node& n, const ComfyNode& info, const Readers& rd, std::string& why) {
  if (!info.image_modes) return &info.image;
  const auto mode = rd.text_of(n, info.image_modes->widget);
  const auto it = mode ? info.image_modes->modes.find(*mode) : info.image_modes->modes.end();
  if (it != info.image_modes->modes.end() && it->second.rules.any()) return &it->second.rules;
  why = "its " + info.image_modes->widget + " is '" + mode.value_or("") + "', a mode whose output size Headroom does not derive";
  return nullptr;
}

// The size node `n` sets by `r` (one kind of rule is set).
ImageSize apply(const Graph& g, const Node& n, const SizeRules& r, const Readers& rd, int hops) {
  if (r.size) return set_by(g, n, *r.size, rd, hops);
  if (r.scale_by) return scaled_by(g, n, *r.scale_by, rd, hops);
  if (r.total_pixels) return scaled_to_total(g, n, *r.total_pixels, rd, hops);
  if (r.side) return side_scaled(g, n, *r.side, rd, hops);
  if (r.pad) return padded(g, n, *r.pad, rd, hops);
  if (r.multiple) return to_multiple(g, n, *r.multiple, rd, hops);
  if (r.model_scale) return model_scaled(g, n, *r.model_scale, rd, hops);
  return walk(g, &n, r.match, rd, hops + 1);  // "match size": the other input's size, crop or not
}

// What a bypassed node hands on: its resized input (ComfyUI links the output to the input of its type), else
// the input it keeps the size of; "" when it has none (EmptyImage).
std::string bypassed_input(const ComfyNode& info) {
  if (info.image_modes) return info.image_modes->input;
  const std::string resized = info.image.input();
  return resized.empty() ? info.image_through : resized;
}

ImageSize walk(const Graph& g, const Node* n, std::string input, const Readers& rd, int hops) {
  for (; hops < kMaxHops; ++hops) {
    const Input* in = n->input(input);
    const Node* from = in && in->from_node ? g.node(*in->from_node) : nullptr;
    if (!from) return unknown_image_size(*n, "its image input '" + input + "' comes from no node that runs");
    n = from;
    const ComfyNode* info = comfy_nodes().find(n->type);
    if (!info) return unknown_image_size(*n, "a node Headroom does not know");
    // A bypassed node passes its image on unchanged (ComfyUI links its output to the matching input).
    if (n->mode == kModeBypass) {
      input = bypassed_input(*info);
      if (input.empty())
        return unknown_image_size(*n, info->image_size_unknown.empty() ? "a bypassed node with no image input to hand on"
                                                                       : info->image_size_unknown);
      continue;
    }
    std::string why;
    const SizeRules* rules = rules_of(*n, *info, rd, why);
    if (!rules) return unknown_image_size(*n, why);
    if (rules->any()) return apply(g, *n, *rules, rd, hops);
    // A loaded image: its file's header in ComfyUI's input folder, where the request gave that folder.
    if (!info->image_file.empty() && rd.loaded) return rd.loaded(*n, info->image_file);
    if (info->image_through.empty())
      return unknown_image_size(*n, info->image_size_unknown.empty() ? "a node whose output size Headroom does not derive"
                                                          : info->image_size_unknown);
    input = info->image_through;
  }
  return unknown_image_size(*n, "the end of a chain of more than 64 image nodes");
}

}  // namespace

ImageSize unknown_image_size(const Node& n, std::string why) {
  return {std::nullopt, std::nullopt, n.id, n.type, std::move(why), ""};
}

const char* size_origin_name(SizeOrigin o) {
  switch (o) {
    case SizeOrigin::PixelCount: return "pixel_count";
    case SizeOrigin::AtMost: return "at_most";
    case SizeOrigin::Exact: break;
  }
  return "exact";
}

ImageSize image_into(const Graph& g, const Node& n, const std::string& input, const ImageReaders& rd, int hops) {
  return walk(g, &n, input, rd, hops + 1);
}

ImageSize image_of(const Node& n, long long w, long long h, SizeOrigin origin, std::string note) {
  if (w < 1 || h < 1 || w > kMaxSide || h > kMaxSide) return unknown_image_size(n, "it sizes its image outside 1 to 16384 px a side");
  ImageSize out{static_cast<int>(w), static_cast<int>(h), n.id, n.type, "", std::move(note)};
  out.origin = origin;
  return out;
}

ImageSize image_size_of(const Graph& g, const Node& latent_node, const IntegerOf& integer_of,
                        const NumberOf& number_of, const TextOf& text_of, const LoadedImageSize& loaded) {
  const Readers rd{integer_of, number_of, text_of, loaded};
  const ComfyNode* info = comfy_nodes().find(latent_node.type);
  if (info && info->image.size) return set_by(g, latent_node, *info->image.size, rd, 0);
  // A node that scales its own input image before making the latent (TextEncodeQwenImage21).
  if (info && info->image.total_pixels) return scaled_to_total(g, latent_node, *info->image.total_pixels, rd, 0);
  if (!info || info->image_input.empty())
    return unknown_image_size(latent_node, "its latent has the size of an input image that Headroom does not trace");
  return walk(g, &latent_node, info->image_input, rd, 0);
}

}  // namespace headroom::workflow
