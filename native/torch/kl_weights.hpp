#pragma once
// The AutoencoderKL decoder (Flux, SD3, SDXL, SD 1.x VAEs) as plain weight structs, read from a
// state dict under ComfyUI's / the checkpoints' names. Widths, level count and blocks per level
// come from tensor shapes, so reduced-width test VAEs load like the real ones.
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "torch/state_dict_io.hpp"

namespace headroom::torch_ops::kl {

constexpr int64_t kGroups = 32;   // GroupNorm(32) everywhere in this decoder (ldm Normalize)
constexpr double kEps = 1e-6;     // ldm Normalize eps

struct Conv {
  at::Tensor w, b;
  int64_t k() const { return w.size(2); }
  int64_t cin() const { return w.size(1); }
  int64_t cout() const { return w.size(0); }
};
struct Norm {
  at::Tensor g, b;
};
struct ResBlock {
  Norm n1;
  Conv c1;
  Norm n2;
  Conv c2;
  std::optional<Conv> skip;  // nin_shortcut (1x1) when in != out channels
};
struct Attn {
  Norm n;
  Conv q, k, v, proj;
};
struct Level {
  std::vector<ResBlock> blocks;
  std::optional<Conv> upsample;  // nearest x2 then 3x3 conv; absent on level 0
};

struct Weights {
  int64_t z_channels = 0;
  std::optional<Conv> post_quant;
  Conv conv_in;
  ResBlock mid1, mid2;
  Attn attn;
  std::vector<Level> levels;  // index = the checkpoint's level (decoder.up.N); run from last to first
  Norm norm_out;
  Conv conv_out;

  int64_t upscale() const { return int64_t(1) << (levels.size() - 1); }
  std::vector<int64_t> widths() const;  // per level
};

// Reads and checks every decoder tensor (InputError naming the key and the shapes on mismatch),
// converted to `dtype` on `device`.
Weights load_weights(const TensorMap& sd, at::Device device, at::ScalarType dtype);

}  // namespace headroom::torch_ops::kl
