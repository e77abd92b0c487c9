// libFuzzer target: the GGUF header parser (and the inspector summary of what it accepts).
#include "core/inspect/gguf_header.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  return headroom_fuzz::run("fuzz.gguf", data, size, [](headroom::ByteSource& s) { headroom::read_gguf_header(s); });
}
