// Memory model of Headroom's native Wan 2.1 / 2.2 decoders (native/torch/wan_*.cpp) and their tile plan.
//
// Derivation from the decoder's code, not a fitted constant: walking the layers in the order the
// decoder runs them, each step counts the tensors alive at once (named below) for one chunk of
// frames (1 latent frame -> up to 4 output frames) on the region the step sees, plus the causal
// caches (the last 2 input frames of every temporal conv) and, in tiled modes, the stored outputs of
// the frame-global head. Checked against measured CPU peaks in tests/bench/bench_wan_decode.py.
// The layer structure is the released one (ComfyUI comfy/ldm/wan/vae.py, vae2_2.py); its figures
// (base width, multipliers, blocks per stage, temporal upsamples, head channels, stride) are the
// VAE's models.json arch. What differs between 2.1 and 2.2 beyond them is code: 2.2 keeps the width
// through a resample and adds the duplicate-and-upsample shortcut.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/estimate/decode_plan.hpp"

#include "core/catalog/catalog.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

// Allocator rounding, fragmentation and backend conv buffers on top of the counted tensors. Measured:
// CPU fp32 peak RSS was 1.13x (full) of (counted tensors x 1.10 + kFixedBytes) for the Wan 2.1
// architecture at 128x160 x 17 frames (tests/bench/bench_wan_decode.py, 2026-11-29), i.e. about 1.25x
// the counted tensors; 1.3 keeps a little room. With it, measured/planned is 0.77-0.84 for full, exact
// and blend at 256x320 x 5 frames (RSS following live tensors). Uncalibrated on CUDA.
constexpr double kAllocatorMargin = 1.30;
// Convolution workspaces, small tensors, the runtime's share (uncalibrated allowance, as for KL).
constexpr double kFixedBytes = 64.0 * 1024 * 1024;

struct Arch {
  bool v22 = false;
  double z = 16;
  double dims[5] = {};  // decoder widths: stage inputs 0..3 outputs, dims[4] = last stage
  int blocks = 3;
  int temporal_upsamples = 2;  // the first N resamples double time
  double out_channels = 3;     // the head's output channels
  int scale = 8;               // output px per latent px
};

Arch arch_of(const DecodeRequest& r, const VaeArch& vae) {
  Arch a;
  a.v22 = vae.decoder == DecoderKind::Wan22;
  a.z = r.latent_channels;
  const double base = r.base_channels > 0 ? r.base_channels : vae.base_channels;  // dim / dec_dim
  for (int i = 0; i < 5; ++i) a.dims[i] = base * vae.multipliers[i];
  a.blocks = vae.res_blocks;
  a.temporal_upsamples = vae.temporal_upsamples;
  a.out_channels = vae.out_channels;
  a.scale = vae.spatial_stride();
  return a;
}

// One residual block's weights (norms, two 3x3x3 convs, 1x1x1 shortcut when the width changes).
double res_weights(double ci, double co) {
  return ci + co + ci * co * 27 + co + co * co * 27 + co + (ci != co ? ci * co + co : 0);
}

// The layer walk shared by the weight count and the memory model. Calls f(step) in decode order.
struct Step {
  char kind;        // 'r' residual block, 'R' resample, 'h' output head, 'a' head part (conv1, mid0, attention)
  double ci, co;    // channels in / out
  double t_in, t_out;  // frames of the chunk (a later latent frame)
  int level;        // 0 = latent grid, each 'R' adds one
  bool temporal;    // resample doubles time
  bool dup;         // Wan 2.2 block with the duplicate-and-upsample shortcut (on the block's last step)
  double dup_ci;    // its input channels
};

template <class F>
void walk_tail(const Arch& a, F&& f) {
  f(Step{'r', a.dims[0], a.dims[0], 1, 1, 0, false, false, 0});  // middle.2
  double c = a.dims[0], t = 1;
  int level = 0;
  for (int i = 0; i < 4; ++i) {
    const double block_in = c;
    double cin = c;  // Wan 2.1 halves the width in the resample before, Wan 2.2 keeps it
    for (int j = 0; j < a.blocks; ++j) {
      f(Step{'r', cin, a.dims[i + 1], t, t, level, false, false, 0});
      cin = a.dims[i + 1];
    }
    c = cin;
    if (i < 3) {
      const bool temporal = i < a.temporal_upsamples;
      const double co = a.v22 ? c : c / 2;
      const double t2 = temporal ? 2 * t : t;
      f(Step{'R', c, co, t, t2, level, temporal, a.v22, block_in});
      c = co;
      t = t2;
      ++level;
    }
  }
  f(Step{'h', c, a.out_channels, t, t, level, false, false, 0});
}

double weight_elems(const Arch& a) {
  const double c0 = a.dims[0];
  double n = a.z * a.z + a.z + a.z * c0 * 27 + c0;                    // conv2, conv1
  n += res_weights(c0, c0) + c0 + 3 * c0 * c0 + 3 * c0 + c0 * c0 + c0;  // middle.0, attention
  walk_tail(a, [&](const Step& s) {
    if (s.kind == 'r') n += res_weights(s.ci, s.co);
    if (s.kind == 'R') n += (s.temporal ? 2 * s.ci * s.ci * 3 + 2 * s.ci : 0) + s.ci * s.co * 9 + s.co;
    if (s.kind == 'h') n += s.ci + s.ci * s.co * 27 + s.co;
  });
  return n;
}

// Context (pixels of each step's input level) that step's input needs around a tile: the 3x3 convs
// still to run, halved (rounded up) across each upsample.
std::vector<double> tail_context(const std::vector<Step>& steps) {
  std::vector<double> ctx(steps.size(), 0.0);
  double c = 0;
  for (int k = int(steps.size()) - 1; k >= 0; --k) {
    if (steps[k].kind == 'h') c += 1;
    if (steps[k].kind == 'R') c = std::ceil((c + 1) / 2);
    if (steps[k].kind == 'r') c += 2;
    ctx[k] = c;
  }
  return ctx;
}

// Spatial ops of each tail step ('c' a 3x3 conv, 'u' a 2x upsample), as wan_model.cpp tail_spatial_ops.
std::vector<std::string> step_ops(const Arch& a, const std::vector<Step>& steps) {
  std::vector<std::string> ops;
  for (const Step& s : steps) ops.push_back(s.kind == 'r' ? "cc" : s.kind == 'R' ? "uc" : (a.v22 ? "cu" : "c"));
  return ops;
}

// One exact tile's extent along one axis at the input of every tail step, as the decoder computes it:
// the latent span is wan_model.cpp tail_input_span of the tile's output rows, and each 3x3 conv then
// trims a pixel only on sides away from the image border (wan_layers.cpp conv). A tile whose halo
// reaches the border therefore keeps the whole strip to the border at every level, which can be far
// more than the tile plus its context.
struct AxisRegion {
  std::vector<double> len;  // per step, at the step's input level
  bool border = false;      // touches an image border (its convs pad by copy)
  bool whole = false;       // spans the whole axis (no padding copy needed on this axis)
};

AxisRegion axis_region(const std::vector<std::string>& ops, long size, long begin, long end, long scale) {
  std::string all;
  for (const auto& o : ops) all += o;
  long full = size;
  for (char op : all)
    if (op == 'u') full *= 2;
  long lo = begin * scale, hi = end * scale, n = full;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (*it == 'c') {
      lo = std::max(0L, lo - 1);
      hi = std::min(n, hi + 1);
    } else {
      n /= 2;
      lo /= 2;
      hi = (hi + 1) / 2;
    }
  }
  AxisRegion r;
  r.border = lo == 0 || hi == size;
  r.whole = lo == 0 && hi == size;
  n = size;
  for (const auto& o : ops) {
    r.len.push_back(double(hi - lo));
    for (char op : o) {
      if (op == 'c') {
        lo += lo != 0;
        hi -= hi != n;
      } else {
        lo *= 2;
        hi *= 2;
        n *= 2;
      }
    }
  }
  return r;
}

// The decoder's exact tiles along one axis (torch/tiling.cpp partition: n near-equal spans).
std::vector<AxisRegion> axis_tiles(const std::vector<std::string>& ops, long size, long tile, long scale) {
  tile = std::max(1L, std::min(tile, size));
  const long n = (size + tile - 1) / tile;
  std::vector<AxisRegion> v;
  for (long i = 0; i < n; ++i) v.push_back(axis_region(ops, size, size * i / n, size * (i + 1) / n, scale));
  return v;
}

// Elements alive while one tail chunk runs on a region whose extent at each step's input is
// ph[k] x pw[k] px, plus the tail's causal cache; `pad` when the convs pad the region by copy.
// Returns {working peak, cache}.
std::pair<double, double> tail_elems(const std::vector<Step>& steps, const std::vector<double>& ph,
                                     const std::vector<double>& pw, bool pad_copy) {
  double work = 0, cache = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    const double P = ph[k] * pw[k];
    const double pad = pad_copy ? 1.0 : 0.0;  // border tiles pad by copy; whole frames pad inside the conv
    double e = 0;
    if (s.kind == 'r') {
      // conv1: x kept, normed source, causal concat (t+2), its padded copy, output
      const double c1 = s.ci * s.t_in * P + s.ci * s.t_in * P + s.ci * (s.t_in + 2) * P * (1 + pad) + s.co * s.t_in * P;
      // conv2: x kept, normed h, concat, padded copy, output
      const double c2 = s.ci * s.t_in * P + s.co * s.t_in * P + s.co * (s.t_in + 2) * P * (1 + pad) + s.co * s.t_in * P;
      e = std::max(c1, c2);
      cache += 2 * (s.ci + s.co) * P;
    } else if (s.kind == 'R') {
      // time conv: input, concat (t+2), 2C output, interleaved copy; then the 2x grid: upsampled input,
      // its padded copy, conv output; Wan 2.2 adds the block input and two copies of its repeated shortcut
      const double t2 = s.t_out, P4 = 4 * P;
      double tc = 0;
      if (s.temporal) {
        tc = s.ci * s.t_in * P + s.ci * (s.t_in + 2) * P + 2 * s.ci * s.t_in * P + s.ci * t2 * P;
        cache += 2 * s.ci * P;
      }
      const double up = s.ci * t2 * P + s.ci * t2 * P4 * (1 + pad) + s.co * t2 * P4;
      e = std::max(tc, up);
      if (s.dup) e = std::max(e, s.dup_ci * s.t_in * P + s.co * t2 * P4 * 3);
    } else {  // head: x, normed, concat, padded copy, output, float copy of the output on the way out
      e = s.ci * s.t_in * P * 2 + s.ci * (s.t_in + 2) * P * (1 + pad) + s.co * s.t_in * P * (1 + 4 / 2.0);
      cache += 2 * s.ci * P;
    }
    work = std::max(work, e);
  }
  return {work, cache};
}

// Whole-frame regions (full decode, or blend tiles decoded as independent images of h x w).
std::pair<double, double> tail_elems_whole(const std::vector<Step>& steps, double h, double w) {
  std::vector<double> ph, pw;
  for (const Step& s : steps) {
    ph.push_back(h * std::pow(2.0, s.level));
    pw.push_back(w * std::pow(2.0, s.level));
  }
  return tail_elems(steps, ph, pw, false);
}

// The largest exact tile of tile x tile latent px over an h x w latent (every tile is counted).
std::pair<double, double> tail_elems_exact(const Arch& a, const std::vector<Step>& steps, long h, long w, long tile) {
  const std::vector<std::string> ops = step_ops(a, steps);
  const std::vector<AxisRegion> ys = axis_tiles(ops, h, tile, a.scale);
  const std::vector<AxisRegion> xs = axis_tiles(ops, w, tile, a.scale);
  std::pair<double, double> best{0, 0};
  for (const AxisRegion& y : ys)
    for (const AxisRegion& x : xs) {
      const bool pad = (y.border || x.border) && !(y.whole && x.whole);
      const auto e = tail_elems(steps, y.len, x.len, pad);
      if (e.first + e.second > best.first + best.second) best = e;
    }
  return best;
}

// The frame-global head on one latent frame: conv2, conv1, middle.0, attention. {working peak, cache}.
std::pair<double, double> head_elems(const Arch& a, double h, double w, double d) {
  const double N = h * w, C = a.dims[0];
  const double rows = std::max(1.0, std::min(N, double(kWanAttentionScratchBytes) / (2 * N * d)));
  const double attn = C * N * 6 + 2 * rows * N;  // x, normed, qkv (3C), output; scores + softmax
  const double res = C * N * 2 + C * 3 * N * 2 + C * N;
  const double cache = 2 * a.z * N + 4 * C * N;
  return {std::max(attn, res), cache};
}

std::uint64_t to_bytes(double elems, double d) {
  return static_cast<std::uint64_t>(std::ceil(elems * d * kAllocatorMargin + kFixedBytes));
}

int count_overlapping(int size, int tile, int overlap) {
  if (size <= tile) return 1;
  return 1 + (size - tile + (tile - overlap) - 1) / (tile - overlap);
}

// The request's figures, checked; returns its mode with "fast" read as "blend" (Wan has no halo mode).
DecodeTiling checked_wan_mode(const DecodeRequest& r, const VaeArch& vae) {
  if (vae.decoder != DecoderKind::Wan21 && vae.decoder != DecoderKind::Wan22)
    throw InputError("family", "plan_decode_wan: '" + r.family + "' is not wan2.1 or wan2.2");
  if (r.latent_height < 1 || r.latent_width < 1 || r.latent_frames < 1 || r.batch < 1)
    throw InputError("latent", "Wan latents need batch, frames, height and width >= 1 (got " + std::to_string(r.batch) +
                                   "x" + std::to_string(r.latent_frames) + "x" + std::to_string(r.latent_height) + "x" +
                                   std::to_string(r.latent_width) + ")");
  if (r.dtype_bytes != 2 && r.dtype_bytes != 4) throw InputError("dtype", "dtype_bytes must be 2 or 4");
  const DecodeTiling mode = decode_tiling_from_name(r.mode, "mode");
  return mode == DecodeTiling::Fast ? DecodeTiling::Blend : mode;
}

// One Wan decode's figures, shared by the full and tiled plans.
struct WanSizing {
  Arch a;
  std::vector<Step> steps;
  double d, h, w, weights;
  double head_work, head_cache, stored_heads;  // stored_heads: the head's outputs kept per latent frame
  long latent_h, latent_w;
  std::uint64_t budget;

  // tiled: the head pass (its cache, the stored outputs so far), then one tile's tail at a time
  std::uint64_t tiled_peak(int tile, bool exact, bool park) const {
    const auto [work, cache] = exact ? tail_elems_exact(a, steps, latent_h, latent_w, tile)
                                     : tail_elems_whole(steps, std::min<double>(h, tile), std::min<double>(w, tile));
    const double stored = park ? 0 : stored_heads;
    const double head_phase = (park ? 0 : head_cache) + head_work + stored;
    const double tail_phase = stored + (park ? 0 : cache) + work + (park ? cache / 4 : 0);  // parked: one slot on the device
    return to_bytes(weights + std::max(head_phase, tail_phase), d);
  }
  bool fits(std::uint64_t need) const { return budget == 0 || need <= budget; }
  InputError budget_error(const std::string& what, std::uint64_t need) const {
    return InputError("budget", format_bytes(budget) + " is too small for " + what + ", which needs about " +
                                    format_bytes(need) + "; free VRAM (unload models) or raise the budget");
  }
};

WanSizing wan_sizing(const DecodeRequest& r, const VaeArch& vae) {
  WanSizing k{arch_of(r, vae), {}, static_cast<double>(r.dtype_bytes), static_cast<double>(r.latent_height),
              static_cast<double>(r.latent_width), 0, 0, 0, 0, r.latent_height, r.latent_width, r.budget_bytes};
  k.weights = weight_elems(k.a);
  walk_tail(k.a, [&](const Step& s) { k.steps.push_back(s); });
  const std::pair<double, double> head = head_elems(k.a, k.h, k.w, k.d);
  k.head_work = head.first;
  k.head_cache = head.second;
  k.stored_heads = r.latent_frames * k.a.dims[0] * k.h * k.w;
  return k;
}

// The tile edge (latent px) and whether the cache parks in CPU memory: the asked tile, else the largest that
// fits, parked when that lets a tile of at least 16 px (or a tile at all) fit.
std::pair<int, bool> choose_wan_tile(const WanSizing& k, bool exact, int requested, int max_tile,
                                     const std::string& mode_name) {
  const int scale = k.a.scale;
  int tile = requested ? std::min(requested, max_tile) : 0;
  bool park = false;
  if (tile) {
    if (!k.fits(k.tiled_peak(tile, exact, false))) {
      park = true;
      if (!k.fits(k.tiled_peak(tile, exact, true)))
        throw k.budget_error(mode_name + " tiles of " + std::to_string(tile * scale) +
                                 " px, even with the cache in CPU memory",
                             k.tiled_peak(tile, exact, true));
    }
    return {tile, park};
  }
  const int smallest = std::min(max_tile, 4);
  for (int t = max_tile; t >= smallest && !tile; --t)
    if (k.fits(k.tiled_peak(t, exact, false))) tile = t;
  if (!tile || tile < std::min(max_tile, 16)) {
    // parking the cache and head outputs in CPU memory lets larger tiles fit
    int parked = 0;
    for (int t = max_tile; t >= smallest && !parked; --t)
      if (k.fits(k.tiled_peak(t, exact, true))) parked = t;
    if (parked > tile) {
      tile = parked;
      park = true;
    }
  }
  if (!tile)
    throw k.budget_error(mode_name + " tiles of " + std::to_string(smallest * scale) + " px with the cache in CPU memory",
                         k.tiled_peak(smallest, exact, true));
  return {tile, park};
}

}  // namespace

DecodePlan plan_decode_wan(const DecodeRequest& r) {
  const VaeArch& vae = decode_arch(r);
  DecodeTiling mode = checked_wan_mode(r, vae);
  const WanSizing k = wan_sizing(r, vae);

  DecodePlan p;
  p.weights_bytes = static_cast<std::uint64_t>(k.weights * k.d);
  {
    const auto [work, cache] = tail_elems_whole(k.steps, k.h, k.w);
    p.full_peak_bytes = to_bytes(k.weights + k.head_cache + cache + std::max(k.head_work, work), k.d);
  }
  const int requested = r.tile_px > 0 ? std::max(1, (r.tile_px + k.a.scale - 1) / k.a.scale) : 0;
  const int max_tile = std::max(r.latent_height, r.latent_width);

  if (mode == DecodeTiling::Auto)
    mode = (requested == 0 && k.fits(p.full_peak_bytes)) ? DecodeTiling::Full : DecodeTiling::Exact;
  p.mode = decode_tiling_name(mode);
  if (mode == DecodeTiling::Full) {
    if (!k.fits(p.full_peak_bytes)) throw k.budget_error("a full decode (use mode exact or auto)", p.full_peak_bytes);
    p.peak_bytes = p.full_peak_bytes;
    p.tiles = 1;
    return p;
  }
  const bool exact = mode == DecodeTiling::Exact;
  const auto [tile, park] = choose_wan_tile(k, exact, requested, max_tile, p.mode);
  p.tile_latent = tile;
  p.park_on_cpu = park;
  p.peak_bytes = k.tiled_peak(tile, exact, park);
  if (exact) {
    // receptive field of everything after the attention, in latent px (15 for the released VAEs)
    p.halo_latent = static_cast<int>(tail_context(k.steps).front());
    p.tiles = ((r.latent_height + tile - 1) / tile) * ((r.latent_width + tile - 1) / tile);
  } else {
    // a quarter of the tile, as ComfyUI's 3-D fallback (tile // 4), at most 8 latent px
    const int overlap = tile > 1 ? std::max(1, std::min(8, tile / 4)) : 0;
    p.halo_latent = overlap;
    p.tiles = count_overlapping(r.latent_height, tile, overlap) * count_overlapping(r.latent_width, tile, overlap);
  }
  return p;
}

}  // namespace headroom
