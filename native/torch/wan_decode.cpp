// PLACEHOLDER written by the lead so the KL work can link; the Wan owner replaces this whole file.
#include "torch/wan_decode.hpp"

#include "core/error.hpp"

namespace headroom::torch_ops {
torch::Tensor decode_wan(const std::string& family, const StateDict&, const torch::Tensor&, const DecodeOptions&,
                         DecodeInfo*) {
  throw headroom::Error("decode_wan(" + family + "): not implemented yet");
}
}  // namespace headroom::torch_ops
