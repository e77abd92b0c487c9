// Exact tiled decoding by layer-wise halo exchange.
//
// Why this shape: exact GroupNorm needs whole-image statistics before any tile may pass a norm layer,
// so every tile reaches every norm layer together anyway. Keeping each layer's whole-image output
// (on the device, or parked in CPU memory) lets a tile read the one-pixel border its 3x3 conv needs
// straight from its neighbours' results: no receptive-field halo is recomputed, and the result is the
// full decode's up to summation order. The statistics for the next norm are pooled while tiles write
// their owned pixels, so no pixel is counted twice.
#include <algorithm>
#include <cmath>

#include "torch/kl_decoder.hpp"
#include "torch/tiling.hpp"

namespace headroom::torch_ops::kl {
namespace {

// A whole-image activation with the moments of its pixels (for the norm that reads it next).
struct Act {
  at::Tensor t;       // [B, C, H, W] on the store device
  GroupMoments m;     // on the compute device
  int64_t scale = 1;  // resolution relative to the latent
};

class Engine {
 public:
  Engine(const Weights& w, const at::Tensor& z, const TileRunOptions& opt)
      : w_(w), opt_(opt), dev_(z.device()), store_(opt.park_on_cpu ? at::Device(at::kCPU) : z.device()),
        T_(std::max<int64_t>(1, opt.tile_latent)), h_(z.size(2)), wd_(z.size(3)) {
    ny_ = static_cast<int>(partition(h_, T_).size());
    nx_ = static_cast<int>(partition(wd_, T_).size());
    int stages = 1 /*conv_in*/ + 2 + 1 + 2 /*mid*/ + 1 /*conv_out*/ + (w.post_quant ? 1 : 0);
    for (const auto& l : w.levels) stages += 2 * static_cast<int>(l.blocks.size()) + (l.upsample ? 1 : 0);
    total_ = stages * ny_ * nx_;
  }

  at::Tensor run(const at::Tensor& z) {
    Act a{z.to(store_), {}, 1};
    if (w_.post_quant) a = stage(a, nullptr, false, false, *w_.post_quant, nullptr, nullptr, false);
    a = stage(a, nullptr, false, false, w_.conv_in, nullptr, nullptr, true);
    a = resblock(w_.mid1, std::move(a));
    a = attention(std::move(a));
    a = resblock(w_.mid2, std::move(a));
    for (int i = static_cast<int>(w_.levels.size()) - 1; i >= 0; --i) {
      for (const auto& b : w_.levels[i].blocks) a = resblock(b, std::move(a));
      if (w_.levels[i].upsample) a = stage(a, nullptr, false, true, *w_.levels[i].upsample, nullptr, nullptr, true);
    }
    NormAffine na = norm_affine(a.m, w_.norm_out.g, w_.norm_out.b, kEps);
    return stage(a, &na, true, false, w_.conv_out, nullptr, nullptr, false).t;
  }

  int tiles() const { return ny_ * nx_; }
  std::uint64_t stored_peak() const { return stored_peak_; }

 private:
  Act resblock(const ResBlock& r, Act x) {
    NormAffine n1 = norm_affine(x.m, r.n1.g, r.n1.b, kEps);
    Act h = stage(x, &n1, true, false, r.c1, nullptr, nullptr, true);
    NormAffine n2 = norm_affine(h.m, r.n2.g, r.n2.b, kEps);
    const Conv* skip = r.skip ? &*r.skip : nullptr;
    Act out = stage(h, &n2, true, false, r.c2, &x.t, skip, true, /*extra_held=*/bytes(x.t));
    return out;
  }

  static std::uint64_t bytes(const at::Tensor& t) { return static_cast<std::uint64_t>(t.numel()) * t.element_size(); }

  void tick() {
    if (opt_.progress) opt_.progress(++done_, total_);
  }

  // One conv layer over the whole image, tile by tile:
  //   out = conv(pad0(up2?(silu?(norm(in))))) [+ skip?(residual)]
  Act stage(const Act& in, const NormAffine* na, bool silu, bool up2, const Conv& c, const at::Tensor* residual,
            const Conv* skip, bool want_moments, std::uint64_t extra_held = 0) {
    const int64_t B = in.t.size(0), Hi = in.t.size(2), Wi = in.t.size(3);
    const int64_t f = up2 ? 2 : 1, Ho = Hi * f, Wo = Wi * f;
    const int64_t scale = in.scale * f, tile = T_ * scale, p = c.k() / 2;
    Act out{at::empty({B, c.cout(), Ho, Wo}, in.t.options().device(store_)), {}, scale};
    stored_peak_ = std::max(stored_peak_, bytes(in.t) + bytes(out.t) + extra_held);
    for (const auto& sy : partition(Ho, tile))
      for (const auto& sx : partition(Wo, tile)) {
        if (opt_.check_cancel) opt_.check_cancel();
        // Rows/cols of the conv's input (in output space) that this tile reads, clipped to the image.
        const int64_t ay = std::max<int64_t>(0, sy.begin - p), by = std::min(Ho, sy.end + p);
        const int64_t ax = std::max<int64_t>(0, sx.begin - p), bx = std::min(Wo, sx.end + p);
        at::Tensor x = in.t.slice(2, ay / f, (by + f - 1) / f).slice(3, ax / f, (bx + f - 1) / f).to(dev_);
        if (na) x = apply_norm(x, *na, silu);
        if (up2) {
          x = at::upsample_nearest2d(x, {x.size(2) * 2, x.size(3) * 2});
          x = x.slice(2, ay % 2, ay % 2 + (by - ay)).slice(3, ax % 2, ax % 2 + (bx - ax));
        }
        // The conv's own zero padding is right on image borders; on interior sides the ring it pads
        // only feeds output pixels outside this tile, which are cropped away (no padded copy needed).
        at::Tensor y = at::conv2d(x, c.w, c.b, {1, 1}, {p, p})
                           .slice(2, sy.begin - ay, sy.end - ay)
                           .slice(3, sx.begin - ax, sx.end - ax);
        x.reset();
        if (residual) {
          at::Tensor r = residual->slice(2, sy.begin, sy.end).slice(3, sx.begin, sx.end).to(dev_);
          if (skip) r = at::conv2d(r, skip->w, skip->b);
          y.add_(r);
        }
        if (want_moments) merge_moments(out.m, group_moments(y, kGroups));
        out.t.slice(2, sy.begin, sy.end).slice(3, sx.begin, sx.end).copy_(y);
        tick();
      }
    return out;
  }

  // Mid-block attention over the whole latent. Keys and values for every position live on the
  // device (latent resolution: small); queries go in row bands so the score block stays bounded.
  Act attention(Act x) {
    const Attn& a = w_.attn;
    const int64_t B = x.t.size(0), C = x.t.size(1), H = x.t.size(2), W = x.t.size(3), N = H * W;
    NormAffine na = norm_affine(x.m, a.n.g, a.n.b, kEps);
    // Query bands as tall as a tile: the score block (band x all keys) then scales with the tile
    // size like every other per-tile buffer, so a smaller budget shrinks it too.
    const int64_t band = std::max<int64_t>(1, std::min<int64_t>(H, T_));
    at::Tensor k = at::empty({B, C, H, W}, x.t.options().device(dev_));
    at::Tensor v = at::empty_like(k);
    for (int64_t r = 0; r < H; r += band) {
      const int64_t n = std::min(band, H - r);
      at::Tensor xn = apply_norm(x.t.slice(2, r, r + n).to(dev_).contiguous(), na, false);
      k.slice(2, r, r + n).copy_(at::conv2d(xn, a.k.w, a.k.b));
      v.slice(2, r, r + n).copy_(at::conv2d(xn, a.v.w, a.v.b));
    }
    at::Tensor kf = k.view({B, C, N}), vf = v.view({B, C, N});
    const double scale = 1.0 / std::sqrt(static_cast<double>(C));
    Act out{at::empty_like(x.t), {}, x.scale};
    stored_peak_ = std::max(stored_peak_, 2 * bytes(x.t));
    const int per_band_ticks = ny_ * nx_;
    int ticks = 0;
    const int64_t bands = (H + band - 1) / band;
    for (int64_t r = 0, bi = 0; r < H; r += band, ++bi) {
      if (opt_.check_cancel) opt_.check_cancel();
      const int64_t n = std::min(band, H - r);
      at::Tensor xs = x.t.slice(2, r, r + n).to(dev_).contiguous();
      at::Tensor q = at::conv2d(apply_norm(xs, na, false), a.q.w, a.q.b).view({B, C, n * W}).transpose(1, 2);
      at::Tensor s = at::bmm(q, kf).mul_(scale);
      at::Tensor pr = xs.scalar_type() == at::kFloat ? at::softmax(s, -1)
                                                     : at::softmax(s, -1, at::kFloat).to(xs.scalar_type());
      s.reset();
      at::Tensor o = at::bmm(vf, pr.transpose(1, 2)).view({B, C, n, W});
      at::Tensor y = at::conv2d(o, a.proj.w, a.proj.b).add_(xs);
      merge_moments(out.m, group_moments(y, kGroups));
      out.t.slice(2, r, r + n).copy_(y);
      // Keep the progress count per "tile of a layer" even though attention goes by bands.
      const int target = static_cast<int>((bi + 1) * per_band_ticks / bands);
      while (ticks < target) {
        ++ticks;
        tick();
      }
    }
    return out;
  }

  const Weights& w_;
  const TileRunOptions& opt_;
  at::Device dev_, store_;
  int64_t T_, h_, wd_;
  int ny_ = 1, nx_ = 1, total_ = 0, done_ = 0;
  std::uint64_t stored_peak_ = 0;
};

}  // namespace

at::Tensor forward_exact(const Weights& w, const at::Tensor& z, const TileRunOptions& opt, TileRunInfo* info) {
  Engine e(w, z, opt);
  at::Tensor out = e.run(z);
  if (info) *info = {e.tiles(), 1, e.stored_peak()};
  return out;
}

}  // namespace headroom::torch_ops::kl
