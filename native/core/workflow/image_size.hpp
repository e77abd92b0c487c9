#pragma once
// The size of the image a latent follows (an inpaint or InstructPix2Pix conditioning encodes its input
// image): read from the node that sets it (ImageScale, EmptyImage, the Kontext rescale, as
// comfy_nodes.json's image_size says), through nodes that keep an image's size (image_through). A
// loaded image (unless its file is read, loaded_image.hpp) or a node Headroom does not know ends the
// walk: the size is then unknown, never 1024x1024.
#include <functional>
#include <optional>
#include <string>

#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

// How much a known size is known: exactly; only its pixel count (a square of that count stands for an image of
// unknown aspect, which gives a DiT the same tokens); or an upper bound (a max-dimension node of an image of
// unknown size: the square of that dimension holds at least its pixels, so a peak sized at it is not smaller
// than the run's, and a "fits" holds, while a "does not fit" may be pessimistic).
enum class SizeOrigin { Exact, PixelCount, AtMost };
const char* size_origin_name(SizeOrigin o);  // "exact", "pixel_count", "at_most"

struct ImageSize {
  std::optional<int> width, height;  // both set: the size is known
  std::string node_id, node_type;    // the node that sets it, or where the walk stopped
  std::string why;                   // when unknown: why that node's size is not known
  std::string note;                  // when known but not exactly: what is known and how it is sized
  SizeOrigin origin = SizeOrigin::Exact;
  bool known() const { return width && height; }
};

// The size is not known: `n` is where the walk stopped, `why` says why.
ImageSize unknown_image_size(const Node& n, std::string why);

// A positive whole widget value of a node, through value nodes (PrimitiveInt and the like)...
using IntegerOf = std::function<std::optional<long long>(const Node&, const std::string&)>;
// ...and any number (ImageScaleToTotalPixels' megapixels).
using NumberOf = std::function<std::optional<double>(const Node&, const std::string&)>;

// ...and a text widget (a mode a size rule holds in: ResizeImageMaskNode's resize_type).
using TextOf = std::function<std::optional<std::string>(const Node&, const std::string&)>;

// ...and the size of the image a loading node (comfy_nodes.json image_file) loads, from its file.
using LoadedImageSize = std::function<ImageSize(const Node&, const std::string& widget)>;

// Starts at `latent_node` (a comfy_nodes.json latent_from_image node) and walks its image_input. Without
// `loaded` (no input folder given) a loaded image ends the walk unknown.
ImageSize image_size_of(const Graph& g, const Node& latent_node, const IntegerOf& integer_of,
                        const NumberOf& number_of, const TextOf& text_of, const LoadedImageSize& loaded = {});

}  // namespace headroom::workflow
