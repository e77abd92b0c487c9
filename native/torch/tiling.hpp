#pragma once
// Tile grids and feathered blending, shared by the KL and Wan decoders. Works on the last two
// (spatial) axes of any tensor, so [B, C, H, W] images and [B, C, T, H, W] videos use the same code;
// time is never tiled.
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/ATen.h>

namespace headroom::torch_ops {

struct Span {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t size() const { return end - begin; }
};

// Splits [0, size) into ceil(size / tile) contiguous spans whose sizes differ by at most one:
// the regions each tile owns in exact mode (no overlap, no leftover sliver).
std::vector<Span> partition(int64_t size, int64_t tile);

// Tiles of length min(tile, size) covering [0, size), neighbours overlapping by at least `overlap`,
// starts spread evenly (the last tile ends on the border, none is shorter than the others).
// Requires overlap < tile when size > tile.
std::vector<Span> overlapping_tiles(int64_t size, int64_t tile, int64_t overlap);

// Blend weights along one axis of a tile of `length` output pixels: a linear ramp
// (i + 1) / (ramp + 1) over `ramp_lo` pixels at the low end and `ramp_hi` at the high end, 1 elsewhere.
// Pass 0 on a side that touches the image border so borders keep full weight.
at::Tensor feather_ramp(int64_t length, int64_t ramp_lo, int64_t ramp_hi);

// Weighted accumulation of tiles into a full-size float32 output, then division by the summed
// weights. Uses the CUDA kernel when the buffers are CUDA tensors and the build has it, ATen otherwise.
class BlendAccumulator {
 public:
  // shape: the output's full shape [..., H, W]; device: where the (float32) accumulators live.
  BlendAccumulator(at::IntArrayRef shape, at::Device device);
  // tile: [..., h, w] (leading axes equal to the output's), placed at (y, x); wy [h], wx [w].
  void add(const at::Tensor& tile, int64_t y, int64_t x, const at::Tensor& wy, const at::Tensor& wx);
  // acc / weight; positions never covered are an error (InputError) rather than NaN.
  at::Tensor finish();

 private:
  at::Tensor acc_;   // [planes, H, W]
  at::Tensor wsum_;  // [H, W]
  std::vector<int64_t> shape_;
};

// One feathered pass of `fn` over overlapping spatial tiles of `latent` [..., h, w]: each tile's
// output must be [..., tile_h * scale, tile_w * scale] (leading axes free, e.g. a video's frames);
// tiles are blended with linear ramps over the overlap (interior sides only) into a float32 CPU
// tensor [..., h * scale, w * scale]. Used for the `blend` mode and to drive Python decode callables.
at::Tensor blend_tiles(const at::Tensor& latent, int64_t tile, int64_t overlap, int64_t scale,
                       const std::function<at::Tensor(const at::Tensor&)>& fn,
                       const std::function<void(int, int)>& progress = nullptr,
                       const std::function<void()>& check_cancel = nullptr);

}  // namespace headroom::torch_ops
