#include "torch/kl_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "torch/tiling.hpp"

namespace headroom::torch_ops::kl {
namespace {

at::Tensor conv(const Conv& c, const at::Tensor& x) {
  const int64_t p = c.k() / 2;
  return at::conv2d(x, c.w, c.b, {1, 1}, {p, p});
}

at::Tensor resblock(const ResBlock& r, const at::Tensor& x, const NormFn& norm) {
  at::Tensor h = conv(r.c1, norm(r.n1, x, true));
  h = conv(r.c2, norm(r.n2, h, true));
  if (r.skip) return h.add_(conv(*r.skip, x));
  return h.add_(x);
}

// Single-head attention over all positions, queries in row bands so the score block stays bounded.
at::Tensor attention(const Attn& a, const at::Tensor& x, const NormFn& norm, int64_t chunk_bytes) {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), N = H * W;
  at::Tensor xn = norm(a.n, x, false);
  at::Tensor k = conv(a.k, xn).view({B, C, N});
  at::Tensor v = conv(a.v, xn).view({B, C, N});
  at::Tensor q = conv(a.q, xn).view({B, C, N});
  xn.reset();
  const double scale = 1.0 / std::sqrt(static_cast<double>(C));
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(N, chunk_bytes / std::max<int64_t>(1, B * N * 4)));
  at::Tensor out = at::empty({B, C, N}, x.options());
  for (int64_t s = 0; s < N; s += rows) {
    const int64_t n = std::min(rows, N - s);
    at::Tensor qc = q.narrow(2, s, n).transpose(1, 2);  // [B, n, C]
    at::Tensor scores = at::bmm(qc, k).mul_(scale);    // [B, n, N]
    at::Tensor p = x.scalar_type() == at::kFloat ? at::softmax(scores, -1)
                                                 : at::softmax(scores, -1, at::kFloat).to(x.scalar_type());
    out.narrow(2, s, n).copy_(at::bmm(v, p.transpose(1, 2)));  // [B, C, n]
  }
  return conv(a.proj, out.view({B, C, H, W})).add_(x);
}

at::Tensor upsample(const Conv& c, const at::Tensor& x) {
  return conv(c, at::upsample_nearest2d(x, {x.size(2) * 2, x.size(3) * 2}));
}

NormFn default_norm() {
  return [](const Norm& n, const at::Tensor& x, bool silu) { return group_norm(x, kGroups, n.g, n.b, kEps, silu); };
}

}  // namespace

at::Tensor forward(const Weights& w, const at::Tensor& z0, const NormFn& norm_in, int64_t attn_chunk_bytes) {
  const NormFn norm = norm_in ? norm_in : default_norm();
  at::Tensor z = w.post_quant ? conv(*w.post_quant, z0) : z0;
  at::Tensor h = conv(w.conv_in, z);
  h = resblock(w.mid1, h, norm);
  h = attention(w.attn, h, norm, attn_chunk_bytes);
  h = resblock(w.mid2, h, norm);
  for (int i = static_cast<int>(w.levels.size()) - 1; i >= 0; --i) {
    for (const auto& b : w.levels[i].blocks) h = resblock(b, h, norm);
    if (w.levels[i].upsample) h = upsample(*w.levels[i].upsample, h);
  }
  return conv(w.conv_out, norm(w.norm_out, h, true));
}

int64_t receptive_halo_latent(const Weights& w) {
  // Count 3x3 convs (radius 1) at each scale, from the latent upwards.
  double r = 1.0;  // conv_in
  r += 4.0;        // mid block_1 and block_2, two convs each
  double scale = 1.0;
  for (int i = static_cast<int>(w.levels.size()) - 1; i >= 0; --i) {
    r += 2.0 * w.levels[i].blocks.size() / scale;
    if (w.levels[i].upsample) {
      scale *= 2.0;
      r += 1.0 / scale;
    }
  }
  r += 1.0 / scale;  // conv_out
  return static_cast<int64_t>(std::ceil(r));
}

at::Tensor forward_fast(const Weights& w, const at::Tensor& z, const TileRunOptions& opt, TileRunInfo* info) {
  const int64_t B = z.size(0), h = z.size(2), wd = z.size(3);
  const int64_t T = std::max<int64_t>(1, opt.tile_latent);
  // 1. Statistics of every norm layer (in call order) from a downscaled copy of the latent.
  std::vector<NormAffine> frozen;
  {
    const double f = std::min(1.0, static_cast<double>(T) / static_cast<double>(std::max(h, wd)));
    const int64_t sh = std::max<int64_t>(1, std::llround(h * f)), sw = std::max<int64_t>(1, std::llround(wd * f));
    at::Tensor small = (sh == h && sw == wd) ? z : at::upsample_nearest2d(z, {sh, sw});
    NormFn record = [&frozen](const Norm& n, const at::Tensor& x, bool silu) {
      NormAffine a = norm_affine(group_moments(x, kGroups), n.g, n.b, kEps);
      frozen.push_back(a);
      return apply_norm(x, a, silu);
    };
    forward(w, small, record, opt.attn_chunk_bytes);
  }
  // 2. One pass per tile with those statistics; crop the owned centre.
  const int64_t halo = receptive_halo_latent(w);
  const int64_t up = w.upscale();
  auto ys = partition(h, T), xs = partition(wd, T);
  const int total = static_cast<int>(ys.size() * xs.size());
  if (info) *info = {total, static_cast<int>(halo), 0};
  at::Tensor out = at::empty({B, 3, h * up, wd * up}, z.options());
  int done = 0;
  for (const auto& sy : ys)
    for (const auto& sx : xs) {
      if (opt.check_cancel) opt.check_cancel();
      const int64_t y0 = std::max<int64_t>(0, sy.begin - halo), y1 = std::min(h, sy.end + halo);
      const int64_t x0 = std::max<int64_t>(0, sx.begin - halo), x1 = std::min(wd, sx.end + halo);
      size_t idx = 0;
      NormFn replay = [&frozen, &idx](const Norm&, const at::Tensor& x, bool silu) {
        return apply_norm(x, frozen.at(idx++), silu);
      };
      at::Tensor t = forward(w, z.slice(2, y0, y1).slice(3, x0, x1), replay, opt.attn_chunk_bytes);
      out.slice(2, sy.begin * up, sy.end * up)
          .slice(3, sx.begin * up, sx.end * up)
          .copy_(t.slice(2, (sy.begin - y0) * up, (sy.end - y0) * up).slice(3, (sx.begin - x0) * up, (sx.end - x0) * up));
      if (opt.progress) opt.progress(++done, total);
    }
  return out;
}

}  // namespace headroom::torch_ops::kl
