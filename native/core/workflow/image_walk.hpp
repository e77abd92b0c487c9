#pragma once
// The parts of the image size walk (image_size.cpp) that each rule kind (image_kinds.cpp) uses: the readers of
// a node's values and the walk up one of its image inputs.
#include <string>

#include "core/workflow/image_rules.hpp"
#include "core/workflow/image_size.hpp"

namespace headroom::workflow {

struct ImageReaders {
  const IntegerOf& integer_of;
  const NumberOf& number_of;
  const TextOf& text_of;
  const LoadedImageSize& loaded;
};

// comfy_nodes.json bounds widget sizes at 16384 px (ComfyUI's MAX_RESOLUTION).
constexpr long long kMaxImageSide = 16384;

// The size of the image that feeds input `input` of `n`, `hops` nodes into the walk.
ImageSize image_into(const Graph& g, const Node& n, const std::string& input, const ImageReaders& rd, int hops);

// A size computed by node `n`: unknown (naming `n`) when a side falls outside 1 to 16384 px.
ImageSize image_of(const Node& n, long long w, long long h, SizeOrigin origin = SizeOrigin::Exact, std::string note = "");

// The kinds of image_kinds.cpp: a side kept to a widget's pixels, padding, a multiple, an upscale model's factor,
// and a fixed size whose 0 sides keep the aspect of `aspect_input`.
ImageSize side_scaled(const Graph& g, const Node& n, const SideRule& rule, const ImageReaders& rd, int hops);
ImageSize padded(const Graph& g, const Node& n, const PadRule& rule, const ImageReaders& rd, int hops);
ImageSize to_multiple(const Graph& g, const Node& n, const MultipleRule& rule, const ImageReaders& rd, int hops);
ImageSize model_scaled(const Graph& g, const Node& n, const ModelScaleRule& rule, const ImageReaders& rd, int hops);
ImageSize aspect_kept(const Graph& g, const Node& n, long long w, long long h, const std::string& input,
                      const ImageReaders& rd, int hops);

}  // namespace headroom::workflow
