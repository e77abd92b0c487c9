#include "core/workflow/image_size.hpp"

#include "core/workflow/comfy_nodes.hpp"

namespace headroom::workflow {

namespace {

// comfy_nodes.json bounds widget sizes at 16384 px (ComfyUI's MAX_RESOLUTION).
constexpr long long kMaxSide = 16384;

std::optional<int> side(const Node& n, const ImageSide& s, const IntegerOf& integer_of) {
  if (s.fixed) return s.fixed;
  auto v = integer_of(n, s.widget);
  if (!v || *v < 1 || *v > kMaxSide) return std::nullopt;
  return static_cast<int>(*v);
}

ImageSize unknown(const Node& n, std::string why) { return {std::nullopt, std::nullopt, n.id, n.type, std::move(why)}; }

ImageSize set_by(const Node& n, const ImageSizeRule& rule, const IntegerOf& integer_of) {
  ImageSize out{side(n, rule.width, integer_of), side(n, rule.height, integer_of), n.id, n.type, ""};
  // ImageScale with 0 keeps the image's aspect from one side: the other one is the image's own.
  if (!out.known()) out.why = "its width/height are not both pixel counts the workflow gives";
  return out;
}

}  // namespace

ImageSize image_size_of(const Graph& g, const Node& latent_node, const IntegerOf& integer_of) {
  const ComfyNode* info = comfy_nodes().find(latent_node.type);
  if (info && info->image_size) return set_by(latent_node, *info->image_size, integer_of);
  if (!info || info->image_input.empty())
    return unknown(latent_node, "its latent has the size of an input image that Headroom does not trace");
  const Node* n = &latent_node;
  std::string input = info->image_input;
  // Chains of image nodes are short; the bound only stops a cycle in a hostile workflow.
  for (int hops = 0; hops < 64; ++hops) {
    const Input* in = n->input(input);
    const Node* from = in && in->from_node ? g.node(*in->from_node) : nullptr;
    if (!from) return unknown(*n, "its image input '" + input + "' comes from no node that runs");
    n = from;
    info = comfy_nodes().find(n->type);
    if (!info) return unknown(*n, "a node Headroom does not know");
    // A bypassed node passes its image on unchanged (ComfyUI links its output to the matching input).
    const bool bypassed = n->mode == kModeBypass;
    if (info->image_size && !bypassed) return set_by(*n, *info->image_size, integer_of);
    if (info->image_through.empty())
      return unknown(*n, info->image_size_unknown.empty() ? "a node whose output size Headroom does not derive"
                                                          : info->image_size_unknown);
    input = info->image_through;
  }
  return unknown(*n, "the end of a chain of more than 64 image nodes");
}

}  // namespace headroom::workflow
