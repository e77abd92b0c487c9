#pragma once
// The Wan 2.1 / 2.2 VAE decoder's weights and shape, read from a state dict with the released key
// names (decoder.conv1, decoder.middle.*, decoder.upsamples.*, decoder.head.*, conv2). Widths and
// block counts come from the tensor shapes, so reduced-width test VAEs load like the real ones.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "torch/state_dict_io.hpp"

namespace headroom::torch_ops::wan {

// A convolution as a 5-D weight [Co, Ci, kt, k, k] (2-D convs get kt = 1), ready for conv3d.
struct Conv {
  at::Tensor weight, bias;
  int64_t kt() const { return weight.size(2); }
  int64_t k() const { return weight.size(3); }
  int64_t in_channels() const { return weight.size(1); }
  int64_t out_channels() const { return weight.size(0); }
};

// RMS norm over channels: x / |x| * sqrt(C) * gamma. `scale` holds sqrt(C) * gamma as [1, C, 1, 1, 1].
struct RmsNorm {
  at::Tensor scale;
};

struct ResBlock {
  RmsNorm norm1, norm2;
  Conv conv1, conv2;
  bool has_shortcut = false;
  Conv shortcut;  // 1x1x1 when the width changes
};

// Spatial 2x nearest upsample + 3x3 conv; with time_conv also doubles time (all frames but the first).
struct Resample {
  bool temporal = false;
  Conv time_conv;  // (3,1,1), 2C outputs: the two sub-frames
  Conv conv;
};

struct Attention {
  RmsNorm norm;
  Conv to_qkv, proj;
};

// Wan 2.1: a run of residual blocks ended by a resample; Wan 2.2 adds the duplicate-and-upsample
// shortcut around the whole block.
struct UpBlock {
  std::vector<ResBlock> res;
  bool has_resample = false;
  Resample resample;
  bool dup_shortcut = false;  // Wan 2.2 only
  int64_t dup_out = 0, dup_factor_t = 1;
};

struct Model {
  std::string family;        // "wan2.1" | "wan2.2"
  int64_t z_dim = 0;         // latent channels
  int64_t patch = 1;         // output unpatchify (2 for Wan 2.2)
  Conv conv2, conv1;
  ResBlock mid0, mid2;
  Attention attn;
  std::vector<UpBlock> ups;
  RmsNorm head_norm;
  Conv head;

  int64_t spatial_scale() const;   // output pixels per latent pixel (8 or 16)
  int64_t time_upsamples() const;  // number of temporal doublings (2 for the released VAEs)
  int64_t output_frames(int64_t latent_frames) const;  // 4T - 3 for two doublings
  at::ScalarType dtype() const { return conv1.weight.scalar_type(); }
  at::Device device() const { return conv1.weight.device(); }
};

// Reads and validates the decoder of `family` from `sd`, casting to `dtype` on `device`.
// Throws InputError("vae", ...) naming the first missing or mis-shaped key.
Model load_model(const std::string& family, const TensorMap& sd, at::Device device, at::ScalarType dtype);

// Spatial structure of the part after the mid-block attention, for planning tile halos:
// 'c' = 3x3 conv (one pixel of context), 'u' = 2x upsample. Unpatchify is a final 'u'.
std::string tail_spatial_ops(const Model& m);

// Latent rows [lo, hi) of the attention output needed to compute output rows [out_lo, out_hi)
// exactly, for an image `latent_size` latent pixels tall (or wide).
void tail_input_span(const std::string& ops, int64_t latent_size, int64_t out_lo, int64_t out_hi, int64_t& lo,
                     int64_t& hi);

}  // namespace headroom::torch_ops::wan
