#pragma once
// The Wan decoder's layers run one chunk of frames at a time on a spatial region, with a causal cache.
//
// A Region is a rectangle of the current level's grid together with that grid's size. A 3x3 conv
// pads with zeros only on sides that touch the grid's border (as the untiled decoder does) and
// gives up one pixel on the other sides, so a tile computes exactly the untiled values on a region
// that shrinks layer by layer; a tile decoded as an independent image simply has a grid equal to
// itself. The causal cache keeps, for every temporal conv, the last kt-1 input frames of the region.
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "torch/wan_model.hpp"

namespace headroom::torch_ops::wan {

struct Region {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;  // [y0, y1) x [x0, x1) of the level grid
  int64_t H = 0, W = 0;                    // the level grid
  static Region whole(int64_t H, int64_t W) { return {0, H, 0, W, H, W}; }
  int64_t h() const { return y1 - y0; }
  int64_t w() const { return x1 - x0; }
};

// Per-stream (one tile over the whole clip) causal state. Slots are taken in a fixed order per chunk.
class Stream {
 public:
  explicit Stream(at::Device cache_device) : cache_device_(cache_device) {}
  void begin_chunk() { next_ = 0; }
  void end_chunk() { first_chunk_ = false; }
  bool first_chunk() const { return first_chunk_; }
  // The cache slot of the next temporal layer (undefined before its first chunk: zeros in front).
  at::Tensor& slot();
  at::Device cache_device() const { return cache_device_; }
  int64_t cache_bytes() const;

 private:
  std::vector<at::Tensor> cache_;
  size_t next_ = 0;
  bool first_chunk_ = true;
  at::Device cache_device_;
};

// conv2, conv1, middle.0 and the mid-block attention of one latent frame over the whole frame
// z: [B, z_dim, 1, h, w] -> [B, C, 1, h, w]. Attention scores are built `query_chunk` rows at a time.
at::Tensor run_head_frame(const Model& m, const at::Tensor& z, Stream& s, int64_t query_chunk);

// middle.2, the up blocks and the output head for one chunk of attention output `a` on region `r`
// (latent grid). Returns [B, 3, frames, h', w'] on the output grid; `r` becomes its region there.
at::Tensor run_tail_chunk(const Model& m, at::Tensor a, Region& r, Stream& s);

// Query rows per attention chunk so that the scores take at most `bytes`.
int64_t attention_query_chunk(int64_t batch, int64_t tokens, int64_t dtype_bytes, int64_t bytes);

}  // namespace headroom::torch_ops::wan
