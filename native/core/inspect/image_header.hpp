#pragma once
// The pixel size of an image file, read from its header only (PNG, JPEG, WebP, GIF, BMP): what ComfyUI's
// LoadImage will hand to the graph, so a workflow whose latent follows a loaded image is sized by the
// image the user really loads instead of being left unknown.
#include <cstdint>
#include <string>

#include "core/base/file_reader.hpp"

namespace headroom {

struct ImageHeader {
  std::string format;        // "png", "jpeg", "webp", "gif", "bmp"
  std::uint32_t width = 0;   // pixels, both at least 1
  std::uint32_t height = 0;
  // Frames the file holds where the format says (an animated PNG, GIF or WebP); LoadImage turns every
  // frame into one image of a batch. 1 for a still image.
  std::uint32_t frames = 1;
};

// Reads the header through bounded reads (memory and time do not depend on the pixel data behind it).
// Throws FileFormatError naming the source when the bytes are not an image of a known format, are
// truncated, or give a side of 0 or above 65535 px.
ImageHeader read_image_header(ByteSource& source);

}  // namespace headroom
