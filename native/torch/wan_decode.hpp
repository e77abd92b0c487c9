#pragma once
// The Wan 2.1 / 2.2 VAE decoders (causal, one latent frame at a time), called by decode().
#include "torch/decode.hpp"

namespace headroom::torch_ops {

// family: "wan2.1" or "wan2.2". latent [B, C, T, h, w]. Returns IMAGE [B*frames, H, W, 3] float32 CPU.
torch::Tensor decode_wan(const std::string& family, const StateDict& state_dict, const torch::Tensor& latent,
                         const DecodeOptions& options, DecodeInfo* info);

}  // namespace headroom::torch_ops
