#include "torch/tiling.hpp"

#include <algorithm>
#include <memory>

#include "core/base/error.hpp"
#include "torch/tiling_kernels.hpp"

namespace headroom::torch_ops {

std::vector<Span> partition(int64_t size, int64_t tile) {
  if (size <= 0) return {};
  tile = std::max<int64_t>(1, std::min(tile, size));
  const int64_t n = (size + tile - 1) / tile;
  std::vector<Span> spans;
  for (int64_t i = 0; i < n; ++i) spans.push_back({size * i / n, size * (i + 1) / n});
  return spans;
}

std::vector<Span> overlapping_tiles(int64_t size, int64_t tile, int64_t overlap) {
  if (size <= 0) return {};
  if (size <= tile) return {{0, size}};
  if (overlap >= tile) throw InputError("overlap", "overlap " + std::to_string(overlap) + " must be smaller than the tile " + std::to_string(tile));
  const int64_t n = 1 + (size - tile + (tile - overlap) - 1) / (tile - overlap);
  std::vector<Span> spans;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = (size - tile) * i / (n - 1);
    spans.push_back({b, b + tile});
  }
  return spans;
}

at::Tensor feather_ramp(int64_t length, int64_t ramp_lo, int64_t ramp_hi) {
  at::Tensor w = at::ones({length}, at::kFloat);
  float* p = w.data_ptr<float>();
  ramp_lo = std::min(ramp_lo, length);
  ramp_hi = std::min(ramp_hi, length);
  for (int64_t i = 0; i < ramp_lo; ++i) p[i] *= float(i + 1) / float(ramp_lo + 1);
  for (int64_t i = 0; i < ramp_hi; ++i) p[length - 1 - i] *= float(i + 1) / float(ramp_hi + 1);
  return w;
}

BlendAccumulator::BlendAccumulator(at::IntArrayRef shape, at::Device device) : shape_(shape.vec()) {
  if (shape.size() < 2) throw InputError("shape", "blend needs at least two (spatial) axes");
  const int64_t H = shape[shape.size() - 2], W = shape[shape.size() - 1];
  int64_t planes = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) planes *= shape[i];
  auto opt = at::TensorOptions().dtype(at::kFloat).device(device);
  acc_ = at::zeros({planes, H, W}, opt);
  wsum_ = at::zeros({H, W}, opt);
}

void BlendAccumulator::add(const at::Tensor& tile, int64_t y, int64_t x, const at::Tensor& wy, const at::Tensor& wx) {
  const int64_t h = tile.size(-2), w = tile.size(-1);
  const int64_t H = acc_.size(1), W = acc_.size(2);
  if (tile.numel() / std::max<int64_t>(1, h * w) != acc_.size(0) || y < 0 || x < 0 || y + h > H || x + w > W ||
      wy.numel() != h || wx.numel() != w)
    throw InputError("tile", "tile of shape [" + std::to_string(tile.numel() / std::max<int64_t>(1, h * w)) + " planes, " +
                                 std::to_string(h) + ", " + std::to_string(w) + "] at (" + std::to_string(y) + ", " +
                                 std::to_string(x) + ") does not fit the output [" + std::to_string(acc_.size(0)) +
                                 " planes, " + std::to_string(H) + ", " + std::to_string(W) + "]");
  at::Tensor t = tile.to(acc_.device(), at::kFloat).contiguous().view({acc_.size(0), h, w});
  at::Tensor ry = wy.to(acc_.device(), at::kFloat).contiguous();
  at::Tensor rx = wx.to(acc_.device(), at::kFloat).contiguous();
  if (tiling_kernels::weighted_accumulate(acc_, wsum_, t, ry, rx, y, x)) return;
  at::Tensor mask = ry.view({h, 1}) * rx.view({1, w});
  acc_.narrow(1, y, h).narrow(2, x, w).add_(t * mask);
  wsum_.narrow(0, y, h).narrow(1, x, w).add_(mask);
}

at::Tensor BlendAccumulator::finish() {
  if (wsum_.le(0).any().item<bool>())
    throw InputError("tiles", "some output pixels were covered by no tile (the tile grid does not cover the image)");
  at::Tensor out = tiling_kernels::normalize_accumulated(acc_, wsum_);
  if (!out.defined()) out = acc_ / wsum_.unsqueeze(0);
  return out.view(shape_);
}

at::Tensor blend_tiles(const at::Tensor& latent, int64_t tile, int64_t overlap, int64_t scale,
                       const std::function<at::Tensor(const at::Tensor&)>& fn,
                       const std::function<void(int, int)>& progress, const std::function<void()>& check_cancel) {
  if (latent.dim() < 3) throw InputError("latent", "blend needs a latent with spatial axes, got " + std::to_string(latent.dim()) + " axes");
  if (tile < 1 || scale < 1 || overlap < 0)
    throw InputError("tile", "tile and scale must be >= 1 and overlap >= 0 (got tile " + std::to_string(tile) +
                                 ", overlap " + std::to_string(overlap) + ", scale " + std::to_string(scale) + ")");
  const int64_t h = latent.size(-2), w = latent.size(-1);
  overlap = std::min(overlap, tile - 1);
  const auto ys = overlapping_tiles(h, tile, overlap), xs = overlapping_tiles(w, tile, overlap);
  const int total = static_cast<int>(ys.size() * xs.size());
  std::unique_ptr<BlendAccumulator> acc;
  int done = 0;
  for (size_t iy = 0; iy < ys.size(); ++iy)
    for (size_t ix = 0; ix < xs.size(); ++ix) {
      if (check_cancel) check_cancel();
      const Span sy = ys[iy], sx = xs[ix];
      at::Tensor out = fn(latent.slice(-2, sy.begin, sy.end).slice(-1, sx.begin, sx.end));
      if (!out.defined() || out.dim() < 2 || out.size(-2) != sy.size() * scale || out.size(-1) != sx.size() * scale)
        throw InputError("fn", "the decode function returned " + std::string(out.defined() ? "a tensor whose last two axes are [" +
                                   std::to_string(out.size(-2)) + ", " + std::to_string(out.size(-1)) + "]" : "nothing") +
                                   " for a latent tile of [" + std::to_string(sy.size()) + ", " + std::to_string(sx.size()) +
                                   "]; expected x" + std::to_string(scale));
      if (!acc) {
        std::vector<int64_t> shape = out.sizes().vec();
        shape[shape.size() - 2] = h * scale;
        shape[shape.size() - 1] = w * scale;
        acc = std::make_unique<BlendAccumulator>(shape, at::Device(at::kCPU));
      }
      // Ramp only where a neighbour overlaps, over the overlap actually shared (in output pixels).
      const int64_t lo_y = iy ? (ys[iy - 1].end - sy.begin) * scale : 0;
      const int64_t hi_y = iy + 1 < ys.size() ? (sy.end - ys[iy + 1].begin) * scale : 0;
      const int64_t lo_x = ix ? (xs[ix - 1].end - sx.begin) * scale : 0;
      const int64_t hi_x = ix + 1 < xs.size() ? (sx.end - xs[ix + 1].begin) * scale : 0;
      acc->add(out.to(at::kCPU), sy.begin * scale, sx.begin * scale, feather_ramp(out.size(-2), lo_y, hi_y),
               feather_ramp(out.size(-1), lo_x, hi_x));
      if (progress) progress(++done, total);
    }
  return acc->finish();
}

}  // namespace headroom::torch_ops
