// libFuzzer target: the image header reader (the images LoadImage nodes load from ComfyUI's input folder).
#include "core/inspect/image_header.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  return headroom_fuzz::run("fuzz.image", data, size, [](headroom::ByteSource& s) { headroom::read_image_header(s); });
}
