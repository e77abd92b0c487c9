#pragma once
// The AutoencoderKL decoder's forward passes: whole-image (full), statistics-frozen tiles (fast),
// and the exact tiled engine (kl_exact.cpp). All return the raw decoder output [B, 3, H, W] in the
// compute dtype; decode.cpp turns it into ComfyUI's IMAGE.
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/ATen.h>

#include "torch/groupnorm.hpp"
#include "torch/kl_weights.hpp"

namespace headroom::torch_ops::kl {

// How a forward pass normalises: given the layer and its input, return silu?(norm(x)).
using NormFn = std::function<at::Tensor(const Norm& layer, const at::Tensor& x, bool silu)>;

// The plain forward pass with `norm` (default: GroupNorm over the whole tensor, stats in fp32).
// attn_chunk_bytes bounds the fp32 attention-score block (queries are processed in row bands).
at::Tensor forward(const Weights& w, const at::Tensor& z, const NormFn& norm = nullptr,
                   int64_t attn_chunk_bytes = 256ll << 20);

// Latent pixels of context each side that a tile needs for its centre to see its whole
// convolutional receptive field (attention excluded): sum over 3x3 convs of 1 / (their scale).
int64_t receptive_halo_latent(const Weights& w);

struct TileRunOptions {
  int64_t tile_latent = 64;   // edge of the region a tile owns, in latent pixels
  bool park_on_cpu = false;   // exact: keep whole-image activations in CPU memory between layers
  int64_t attn_chunk_bytes = 256ll << 20;
  std::function<void(int, int)> progress;
  std::function<void()> check_cancel;  // called between tiles; throws to abort (decode.cpp: Cancelled)
};

// What a tiled run did.
struct TileRunInfo {
  int tiles = 0;            // tiles per layer (exact) or per image (fast)
  int halo_latent = 0;
  std::uint64_t stored_bytes_peak = 0;  // largest set of whole-image activations held at once
};

// exact: every layer runs tile by tile over whole-image activations, exchanging 1-pixel halos
// between neighbouring tiles, with GroupNorm statistics pooled exactly over owned pixels.
at::Tensor forward_exact(const Weights& w, const at::Tensor& z, const TileRunOptions& opt, TileRunInfo* info);

// fast: GroupNorm statistics from one pass over a copy of the latent downscaled to at most
// `tile_latent`, then one pass per tile with a receptive-field halo; attention sees only its tile.
at::Tensor forward_fast(const Weights& w, const at::Tensor& z, const TileRunOptions& opt, TileRunInfo* info);

}  // namespace headroom::torch_ops::kl
