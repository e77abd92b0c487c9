#pragma once
// The FLUX.2 VAE's front end: ComfyUI's FLUX.2 LATENT [B, 4C, h, w] (C = 32) -> the [B, C, 2h, 2w] latent
// its AutoencoderKL decoder reads. The decoder itself is the KL one (kl_*.cpp) with 32 latent channels
// and post_quant_conv, so every mode and the exact-tiling guarantee carry over unchanged: the front end
// is pointwise per channel plus a fixed 2x2 pixel rearrangement, so it runs once over the whole latent
// and no tile ever needs a neighbour's part of it.
//
// Layout, from black-forest-labs/flux2 src/flux2/autoencoder.py (AutoEncoder, snapshot 2025-12):
//  - encode: mean latent [B, C, H/8, W/8] -> rearrange "... c (i pi) (j pj) -> ... (c pi pj) i j"
//    (ps = [2, 2]) -> BatchNorm2d(4C, eps 1e-4, affine=False, running statistics) in eval mode.
//  - decode (what we do): inv_normalize FIRST, on the 4C patchified channels: z * sqrt(running_var + 1e-4)
//    + running_mean; THEN unpatchify "... (c pi pj) i j -> ... c (i pi) (j pj)", i.e. packed channel
//    c*4 + pi*2 + pj is pixel (2i + pi, 2j + pj) of latent channel c; then Decoder.forward, which starts
//    with post_quant_conv.
// ComfyUI (comfy/sd.py VAE.__init__, versions with FLUX.2 support) recognises the same file by 'bn.running_mean', renames
// 'decoder.post_quant_conv.' to 'post_quant_conv.' and multiplies latent channels by 4 and the scale by 2;
// its Flux2 latent format has no scale or shift, and its preview reshape (latent_rgb_factors_reshape:
// view [B, 32, 2, 2, h, w], permute to [B, 32, h, 2, w, 2]) is the same channel order as BFL's.
#include <cstdint>

#include <ATen/ATen.h>

#include "torch/state_dict_io.hpp"

namespace headroom::torch_ops::flux2 {

constexpr int64_t kPatch = 2;      // AutoEncoder.ps = [2, 2]
constexpr double kBnEps = 1e-4;    // AutoEncoder.bn_eps

struct Front {
  at::Tensor mean, var;  // running statistics [4C], float32 on the compute device
  int64_t z_channels = 0;
  int64_t packed_channels() const { return z_channels * kPatch * kPatch; }
};

// A FLUX.2 VAE is recognised by the core (vae_decoder_family: the KL decoder keys plus 'bn.running_mean');
// this reads and checks bn.running_mean / bn.running_var against the decoder's latent channels
// (InputError("vae", ...) naming the key and both shapes; negative or non-finite variances refused).
Front load_front(const TensorMap& sd, at::Device device);

// [B, 4C, h, w] -> [B, C, 2h, 2w] in `dtype`: the inverse BatchNorm in fp32, then the 2x2 unpatchify.
at::Tensor unpack_latent(const Front& front, const at::Tensor& packed, at::ScalarType dtype);

}  // namespace headroom::torch_ops::flux2
