// Layers of the Wan VAE decoder on one chunk of frames and one spatial region (see wan_layers.hpp).
#include "torch/wan_layers.hpp"

#include <algorithm>
#include <cmath>

#include <ATen/Config.h>
#include <ATen/Context.h>

namespace headroom::torch_ops::wan {
namespace {

// F.normalize over channels (x / max(|x|, 1e-12)) times sqrt(C) * gamma, optionally followed by SiLU.
at::Tensor rms_norm(const at::Tensor& x, const RmsNorm& n, bool silu) {
  at::Tensor norm = at::norm(x, 2, {1}, /*keepdim=*/true).clamp_min_(1e-12);
  at::Tensor y = at::mul(x, n.scale);
  y.div_(norm);
  if (silu) at::silu_(y);
  return y;
}

// conv3d, stride 1. ATen sends CPU float convs with batch 1 and few rows (N*C*T*H <= 20480, i.e. our
// latent-grid layers) to its unfold+gemm fallback, measured 5-10x slower here than oneDNN, so CPU
// fp32 goes to oneDNN directly.
at::Tensor conv3d(const at::Tensor& x, const Conv& c, int64_t pad_hw = 0) {
#if AT_MKLDNN_ENABLED()
  if (x.device().is_cpu() && x.scalar_type() == at::kFloat && at::globalContext().userEnabledMkldnn())
    return at::mkldnn_convolution(x.contiguous(), c.weight, c.bias, {0, pad_hw, pad_hw}, {1, 1, 1}, {1, 1, 1}, 1);
#endif
  return at::conv3d(x, c.weight, c.bias, {1, 1, 1}, {0, pad_hw, pad_hw});
}

at::Tensor crop(const at::Tensor& t, const Region& from, const Region& to) {
  return t.narrow(3, to.y0 - from.y0, to.h()).narrow(4, to.x0 - from.x0, to.w());
}

// Causal in time (kt - 1 cached or zero frames in front), zero padding in space only on grid borders.
at::Tensor conv(const Conv& c, at::Tensor x, Region& r, Stream* s) {
  const int64_t kt = c.kt();
  if (kt > 1) {
    at::Tensor& slot = s->slot();
    at::Tensor hist = slot.defined() ? slot.to(x.device())
                                     : at::zeros({x.size(0), x.size(1), kt - 1, x.size(3), x.size(4)}, x.options());
    x = at::cat({hist, x}, 2);
    // a copy, so the cache does not pin the whole concatenation
    slot = x.narrow(2, x.size(2) - (kt - 1), kt - 1).to(s->cache_device(), x.scalar_type(), false, /*copy=*/true);
  }
  if (c.k() == 1) return conv3d(x, c);
  const int64_t pt = r.y0 == 0, pb = r.y1 == r.H, pl = r.x0 == 0, pr = r.x1 == r.W;
  at::Tensor y;
  if (pt && pb && pl && pr) {
    y = conv3d(x, c, 1);
  } else {
    if (pt || pb || pl || pr) x = at::constant_pad_nd(x, {pl, pr, pt, pb, 0, 0}, 0);
    y = conv3d(x, c);
  }
  r.y0 += 1 - pt;
  r.y1 -= 1 - pb;
  r.x0 += 1 - pl;
  r.x1 -= 1 - pr;
  return y;
}

at::Tensor residual(const ResBlock& b, const at::Tensor& x, Region& r, Stream& s) {
  const Region r_in = r;
  at::Tensor h = rms_norm(x, b.norm1, true);
  h = conv(b.conv1, h, r, &s);
  h = rms_norm(h, b.norm2, true);
  h = conv(b.conv2, h, r, &s);
  at::Tensor sc = crop(x, r_in, r);
  if (b.has_shortcut) sc = conv3d(sc, b.shortcut);
  return h.add_(sc);
}

at::Tensor upsample2x(const at::Tensor& x, Region& r) {
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), h = x.size(3), w = x.size(4);
  r = {2 * r.y0, 2 * r.y1, 2 * r.x0, 2 * r.x1, 2 * r.H, 2 * r.W};
  return x.reshape({B, C, T, h, 1, w, 1}).expand({B, C, T, h, 2, w, 2}).reshape({B, C, T, 2 * h, 2 * w});
}

// Frame 0 of the clip passes through; every later frame becomes two through the causal time conv,
// whose 2C output channels hold the first sub-frame in [0, C) and the second in [C, 2C).
at::Tensor time_upsample(const Conv& tc, const at::Tensor& x, Stream& s) {
  at::Tensor& slot = s.slot();
  at::Tensor first, rest = x;
  if (s.first_chunk()) {
    first = x.narrow(2, 0, 1);
    rest = x.narrow(2, 1, x.size(2) - 1);
    if (rest.size(2) == 0) return first;
  }
  const int64_t B = rest.size(0), C = rest.size(1), T = rest.size(2), h = rest.size(3), w = rest.size(4);
  at::Tensor hist = slot.defined() ? slot.to(x.device()) : at::zeros({B, C, 2, h, w}, x.options());
  at::Tensor in = at::cat({hist, rest}, 2);
  slot = in.narrow(2, in.size(2) - 2, 2).to(s.cache_device(), x.scalar_type(), false, true);
  at::Tensor y = conv3d(in, tc);  // (3,1,1): no spatial context, the region stays
  y = y.view({B, 2, C, T, h, w}).permute({0, 2, 3, 1, 4, 5}).reshape({B, C, 2 * T, h, w});
  return first.defined() ? at::cat({first, y}, 2) : y;
}

at::Tensor resample(const Resample& rs, at::Tensor x, Region& r, Stream& s) {
  if (rs.temporal) x = time_upsample(rs.time_conv, x, s);
  x = upsample2x(x, r);
  return conv(rs.conv, x, r, nullptr);
}

// Wan 2.2 shortcut: channels repeated, then spread over (time, y, x) sub-positions of the 2x grid.
at::Tensor dup_up(const at::Tensor& x, int64_t out_ch, int64_t ft, bool first_chunk) {
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t factor = ft * 4;
  at::Tensor y = x.repeat_interleave(out_ch * factor / C, 1);
  y = y.view({B, out_ch, ft, 2, 2, T, h, w}).permute({0, 1, 5, 2, 6, 3, 7, 4}).reshape({B, out_ch, T * ft, 2 * h, 2 * w});
  if (first_chunk && ft > 1) y = y.narrow(2, ft - 1, y.size(2) - (ft - 1));
  return y;
}

at::Tensor attention(const Attention& a, const at::Tensor& x, int64_t query_chunk) {
  const int64_t B = x.size(0), C = x.size(1), h = x.size(3), w = x.size(4), N = h * w;
  at::Tensor qkv = conv3d(rms_norm(x, a.norm, false), a.to_qkv);
  at::Tensor q = qkv.narrow(1, 0, C).reshape({B, C, N}).transpose(1, 2);
  at::Tensor k = qkv.narrow(1, C, C).reshape({B, C, N});
  at::Tensor v = qkv.narrow(1, 2 * C, C).reshape({B, C, N}).transpose(1, 2);
  at::Tensor out = at::empty({B, N, C}, x.options());
  const double scale = 1.0 / std::sqrt(double(C));
  const int64_t step = std::max<int64_t>(1, std::min(query_chunk, N));
  for (int64_t i = 0; i < N; i += step) {
    const int64_t n = std::min(step, N - i);
    at::Tensor p = at::softmax(at::bmm(q.narrow(1, i, n), k).mul_(scale), -1);
    out.narrow(1, i, n).copy_(at::bmm(p, v));
  }
  at::Tensor o = out.transpose(1, 2).reshape({B, C, 1, h, w});
  return conv3d(o, a.proj).add_(x);
}

}  // namespace

at::Tensor& Stream::slot() {
  if (next_ == cache_.size()) cache_.emplace_back();
  return cache_[next_++];
}

int64_t Stream::cache_bytes() const {
  int64_t n = 0;
  for (const auto& t : cache_)
    if (t.defined()) n += t.numel() * t.element_size();
  return n;
}

int64_t attention_query_chunk(int64_t batch, int64_t tokens, int64_t dtype_bytes, int64_t bytes) {
  // scores and their softmax live at once: 2 * batch * rows * tokens elements
  const int64_t per_row = 2 * batch * tokens * dtype_bytes;
  return std::max<int64_t>(1, std::min(tokens, bytes / std::max<int64_t>(1, per_row)));
}

at::Tensor run_head_frame(const Model& m, const at::Tensor& z, Stream& s, int64_t query_chunk) {
  Region r = Region::whole(z.size(3), z.size(4));
  at::Tensor x = conv(m.conv2, z, r, nullptr);
  x = conv(m.conv1, x, r, &s);
  x = residual(m.mid0, x, r, s);
  return attention(m.attn, x, query_chunk);
}

at::Tensor run_tail_chunk(const Model& m, at::Tensor a, Region& r, Stream& s) {
  at::Tensor x = residual(m.mid2, a, r, s);
  a.reset();
  for (const UpBlock& u : m.ups) {
    at::Tensor x_in;
    Region r_in = r;
    if (u.dup_shortcut) x_in = x;
    for (const ResBlock& b : u.res) x = residual(b, x, r, s);
    if (u.has_resample) x = resample(u.resample, x, r, s);
    if (u.dup_shortcut) {
      at::Tensor sc = dup_up(x_in, u.dup_out, u.dup_factor_t, s.first_chunk());
      x_in.reset();
      Region r2{2 * r_in.y0, 2 * r_in.y1, 2 * r_in.x0, 2 * r_in.x1, 2 * r_in.H, 2 * r_in.W};
      x.add_(crop(sc, r2, r));
    }
  }
  x = rms_norm(x, m.head_norm, true);
  x = conv(m.head, x, r, &s);
  if (m.patch == 2) {  // channel = c * 4 + dx * 2 + dy
    const int64_t B = x.size(0), T = x.size(2), h = x.size(3), w = x.size(4);
    x = x.view({B, 3, 2, 2, T, h, w}).permute({0, 1, 4, 5, 3, 6, 2}).reshape({B, 3, T, 2 * h, 2 * w});
    r = {2 * r.y0, 2 * r.y1, 2 * r.x0, 2 * r.x1, 2 * r.H, 2 * r.W};
  }
  return x;
}

}  // namespace headroom::torch_ops::wan
