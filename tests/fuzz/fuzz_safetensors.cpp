// libFuzzer target: the safetensors header parser (and the inspector summary of what it accepts).
#include "core/inspect/safetensors_header.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  return headroom_fuzz::run("fuzz.safetensors", data, size,
                            [](headroom::ByteSource& s) { headroom::read_safetensors_header(s); });
}
