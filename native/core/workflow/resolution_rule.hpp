#pragma once
// ComfyUI's ResolutionSelector (comfy_extras/nodes_resolution.py) as data and arithmetic: the node turns
// an aspect-ratio choice and a megapixel target into a width and a height, and those outputs, not the
// stale copies the receiving nodes keep, set the latent's size.
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace headroom::workflow {

// Widget names of the node, and each aspect choice's [width, height] ratio (comfy_nodes.json "resolution").
struct ResolutionRule {
  std::string aspect_ratio, megapixels, multiple, minimum;
  std::map<std::string, std::pair<int, int>> ratios;
};

// The sides ComfyUI computes: ratio x sqrt(megapixels x 1024^2 / (w x h)), each rounded half to even (Python's
// round) to `multiple`; when a side falls below `minimum` (0: none) both become the smallest multiple of the
// ratio that reaches it and keeps each side a multiple of `multiple`. Nothing for a non-positive input.
std::optional<std::pair<long long, long long>> resolution_sides(std::pair<int, int> ratio, double megapixels,
                                                                long long multiple, long long minimum);

}  // namespace headroom::workflow
