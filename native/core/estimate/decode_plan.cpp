// Memory model of Headroom's native KL decoder (native/torch/kl_*.cpp), and the tile plan.
//
// Derivation, not calibration: the peaks below count the tensors that the decoder's code keeps
// alive at once (each term names the tensor), times the element size. They were checked against
// measured CPU RSS in tests/bench/bench_kl_decode.py; on CUDA, allocator rounding and cuDNN
// workspaces come on top, covered by the margin constants (uncalibrated until measured on a GPU).
#include <algorithm>
#include <cmath>

#include "core/estimate/decode_plan.hpp"

#include "core/catalog/catalog.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

// Caching-allocator rounding and fragmentation on top of the counted tensors (uncalibrated margin).
constexpr double kAllocatorMargin = 1.10;
// Fixed allowance for convolution workspaces, the CUDA context's share and small tensors (uncalibrated).
constexpr std::uint64_t kFixedBytes = 64ull << 20;
// fp32 attention-score block the decoder allows itself (kl_decoder.hpp attn_chunk_bytes).
constexpr double kAttnChunkBytes = 256.0 * 1024 * 1024;
// Convolution workspace: about one copy of the conv's input (CPU, oneDNN reorder; fitted to the
// measured peak RSS of a 512^2 fp32 Flux-architecture full decode, tests/bench/bench_kl_decode.py,
// 2026-11-29: 1139 MB measured vs 1023 MB without this term). Counted in the per-layer terms below.
// Below this tile edge (latent px) keeping activations on the device costs more in per-tile overhead
// than parking them in CPU memory with bigger tiles.
constexpr int kMinUnparkedTile = 16;

struct Arch {
  int z = 16;
  std::vector<double> widths;  // per level
  int blocks = 3;
  double block_in() const { return widths.back(); }
  int levels() const { return static_cast<int>(widths.size()); }
  int upscale() const { return 1 << (levels() - 1); }
};

Arch arch_of(const DecodeRequest& r, const VaeArch& vae) {
  Arch a;
  a.z = r.latent_channels;
  if (!r.level_widths.empty()) {
    for (int w : r.level_widths) a.widths.push_back(w);
  } else {
    // The catalog's widths, or its multipliers (ch_mult) of another first-level width.
    const double scale = r.base_channels > 0 ? static_cast<double>(r.base_channels) / vae.channels.front() : 1.0;
    for (int w : vae.channels) a.widths.push_back(w * scale);
  }
  a.blocks = r.blocks_per_level > 0 ? r.blocks_per_level : vae.res_blocks;
  return a;
}

double weight_elems(const Arch& a) {
  auto conv = [](double ci, double co, double k) { return ci * co * k * k + co; };
  auto res = [&](double ci, double co) {
    return 2 * ci + conv(ci, co, 3) + 2 * co + conv(co, co, 3) + (ci != co ? conv(ci, co, 1) : 0);
  };
  const double bi = a.block_in();
  double n = conv(a.z, a.z, 1) + conv(a.z, bi, 3) + 2 * res(bi, bi) + 2 * bi + 4 * conv(bi, bi, 1);
  double c = bi;
  for (int i = a.levels() - 1; i >= 0; --i) {
    for (int j = 0; j < a.blocks; ++j) {
      n += res(c, a.widths[i]);
      c = a.widths[i];
    }
    if (i) n += conv(c, c, 3);
  }
  return n + 2 * c + conv(c, 3, 3);
}

// Walks the decoder's layers: f(kind, cin, cout, scale) with kind 'r' resblock, 'a' attention,
// 'u' upsample (cin at the lower scale), 'o' norm_out + conv_out, 'i' conv_in.
template <class F>
void walk(const Arch& a, F&& f) {
  const double bi = a.block_in();
  f('i', a.z, bi, 1);
  f('r', bi, bi, 1);
  f('a', bi, bi, 1);
  f('r', bi, bi, 1);
  double c = bi;
  int s = 1;
  for (int i = a.levels() - 1; i >= 0; --i) {
    for (int j = 0; j < a.blocks; ++j) {
      f('r', c, a.widths[i], s);
      c = a.widths[i];
    }
    if (i) {
      f('u', c, c, s);
      s *= 2;
    }
  }
  f('o', c, 3, s);
}

double attention_elems(double C, double N, double B, double dtype_bytes) {
  // x, x normed, q, k, v, attention output: six [C, N]; plus the score block and its softmax (fp32).
  const double chunk_rows = std::max(1.0, std::min(N, kAttnChunkBytes / std::max(1.0, B * N * 4)));
  return B * 6 * C * N + 2 * B * chunk_rows * N * 4 / dtype_bytes;
}

// Whole-image decode (forward()): the largest set of activations alive at one time, in elements.
double full_activation_elems(const Arch& a, double B, double h, double w, double d) {
  double peak = 0;
  walk(a, [&](char k, double ci, double co, int s) {
    const double S = B * h * w * s * s;
    double e = 0;
    switch (k) {
      // Every conv also holds about one copy of its input as workspace (kConvWorkspace).
      case 'i': e = (2 * ci + co) * S; break;
      case 'r': e = std::max(3 * ci + co, ci + 4 * co) * S; break;   // x, norm1(x), conv1 | x, h, norm2(h), conv2
      case 'a': e = attention_elems(ci, h * w, B, d); break;
      case 'u': e = (ci + 8 * ci + 4 * co) * S; break;               // x, x upsampled (4S), conv out (4S)
      case 'o': e = std::max(3 * ci * S + co * S, co * S * (1 + 3 * 4 / d)); break;  // x, norm, out | out, fp32 IMAGE copies
    }
    peak = std::max(peak, e);
  });
  return peak;
}

// Exact mode, tile edge T latent px: (whole-image buffers kept between layers, per-tile working set).
std::pair<double, double> exact_elems(const Arch& a, double B, double h, double w, double T, double d) {
  double stored = 0, work = 0;
  walk(a, [&](char k, double ci, double co, int s) {
    const double S = B * h * w * s * s;
    const double ty = std::min(T * s, h * s), tx = std::min(T * s, w * s);
    const double halo = B * (ty + 2) * (tx + 2), own = B * ty * tx;
    double st = 0, wk = 0;
    switch (k) {
      case 'i': st = (ci + co) * S; wk = 2 * ci * halo + co * halo; break;
      case 'r':
        st = std::max(ci * S + co * S, ci * S + 2 * co * S);  // in + out | x (residual) + h + out
        // input slice copy, its normed copy, conv out (with its 1-px ring), residual slice, shortcut out.
        // (CPU bf16 adds one fp32 copy of the slice inside the norm; CUDA uses the fused kernel.)
        wk = std::max(3 * ci * halo + co * halo, ci * halo + co * halo + ci * own + co * own);
        break;
      case 'a': {
        // keys + values of every position; per band of min(T, h) rows: x, normed, q, output, proj
        // out ([C, band]) and the scores (dtype) with their fp32 softmax and its cast.
        const double band = B * std::min(T, h) * w, N = h * w;
        st = 2 * ci * S;
        wk = 2 * B * ci * N + 5 * ci * band + band * N * (2 + 4 / d);
        break;
      }
      case 'u': st = ci * S + 4 * ci * S; wk = ci * B * (ty / 2 + 2) * (tx / 2 + 2) + 2 * ci * halo + co * halo; break;
      case 'o': st = ci * S + co * S; wk = 3 * ci * halo + co * halo; break;
    }
    stored = std::max(stored, st);
    work = std::max(work, wk);
  });
  return {stored, work};
}

std::uint64_t bytes(double elems_times_dtype) {
  return static_cast<std::uint64_t>(std::ceil(elems_times_dtype * kAllocatorMargin)) + kFixedBytes;
}

// One decode's figures, shared by the tile searches of each mode.
struct KlSizing {
  Arch a;
  double d, B, h, w, wbytes;
  std::uint64_t budget;
  int up, max_tile, requested;  // requested: the asked tile edge in latent px, 0 = choose

  std::uint64_t exact_peak(int T, bool park) const {
    auto [st, wk] = exact_elems(a, B, h, w, T, d);
    return bytes(wbytes + ((park ? 0.0 : st) + wk) * d);
  }
  // fast / blend: one forward() per tile region (fast adds the receptive-field halo of ~18 latent px).
  std::uint64_t tile_forward_peak(int T, int halo) const {
    const double th = std::min<double>(h, T + 2 * halo), tw = std::min<double>(w, T + 2 * halo);
    return bytes(wbytes + full_activation_elems(a, B, th, tw, d) * d);
  }
  bool fits(std::uint64_t need) const { return budget == 0 || need <= budget; }
  InputError budget_error(const std::string& what, std::uint64_t need) const {
    return InputError("budget", format_bytes(budget) + " is too small for " + what + ", which needs about " +
                                    format_bytes(need) + "; raise the budget (free VRAM) or lower the tile");
  }
};

// Exact mode: the largest tile that fits with activations kept on the device, else parked in CPU memory.
void plan_exact(const KlSizing& k, DecodePlan& p) {
  p.halo_latent = 1;
  if (k.requested) {
    const int T = std::min(k.requested, k.max_tile);
    p.tile_latent = T;
    if (k.fits(k.exact_peak(T, false))) {
      p.park_on_cpu = false;
    } else if (k.fits(k.exact_peak(T, true))) {
      p.park_on_cpu = true;
    } else {
      throw k.budget_error("exact tiles of " + std::to_string(k.requested * k.up) +
                               " px even with activations parked in CPU memory",
                           k.exact_peak(T, true));
    }
  } else {
    int best_unparked = 0, best_parked = 0;
    for (int T = k.max_tile; T >= 1 && !best_unparked; --T)
      if (k.fits(k.exact_peak(T, false))) best_unparked = T;
    for (int T = k.max_tile; T >= 1 && !best_parked; --T)
      if (k.fits(k.exact_peak(T, true))) best_parked = T;
    if (best_unparked >= std::min(kMinUnparkedTile, k.max_tile)) {
      p.tile_latent = best_unparked;
    } else if (best_parked) {
      p.tile_latent = best_parked;
      p.park_on_cpu = true;
    } else {
      throw k.budget_error("any exact tile (1 latent px, activations parked in CPU memory)", k.exact_peak(1, true));
    }
  }
  p.peak_bytes = k.exact_peak(p.tile_latent, p.park_on_cpu);
}

// Fast and blend: the largest tile whose forward() fits (fast adds the decoder's receptive field as halo).
void plan_tile_forward(const KlSizing& k, DecodeTiling mode, const VaeArch& vae, DecodePlan& p) {
  const int halo = mode == DecodeTiling::Fast ? vae.receptive_field_latent_px : 0;
  int T = k.requested ? std::min(k.requested, k.max_tile) : 0;
  if (!T) {
    // Down to 8 latent px, or the whole latent when it is smaller: a latent under 8 px a side once got
    // no tile at all, whatever the budget ("0 B is too small" without one).
    const int smallest = std::min(8, k.max_tile);
    for (int t = k.max_tile; t >= smallest && !T; --t)
      if (k.fits(k.tile_forward_peak(t, halo))) T = t;
    if (!T)
      throw k.budget_error("a " + p.mode + " tile of " + std::to_string(smallest) + " latent px",
                           k.tile_forward_peak(smallest, halo));
  } else if (!k.fits(k.tile_forward_peak(T, halo))) {
    throw k.budget_error(p.mode + " tiles of " + std::to_string(T * k.up) + " px", k.tile_forward_peak(T, halo));
  }
  p.tile_latent = T;
  p.halo_latent = mode == DecodeTiling::Fast ? halo : std::max(1, std::min(8, T / 4));
  p.peak_bytes = k.tile_forward_peak(T, halo);
}

DecodePlan plan_kl(const DecodeRequest& r) {
  if (r.latent_height < 1 || r.latent_width < 1 || r.batch < 1)
    throw InputError("latent", "latent must have batch, height and width >= 1 (got batch " + std::to_string(r.batch) +
                                   ", " + std::to_string(r.latent_height) + "x" + std::to_string(r.latent_width) + ")");
  if (r.dtype_bytes != 2 && r.dtype_bytes != 4) throw InputError("dtype", "dtype_bytes must be 2 or 4");
  const VaeArch& vae = decode_arch(r);
  KlSizing k{arch_of(r, vae), static_cast<double>(r.dtype_bytes), static_cast<double>(r.batch),
             static_cast<double>(r.latent_height), static_cast<double>(r.latent_width), 0, r.budget_bytes, 0, 0, 0};
  k.wbytes = weight_elems(k.a) * k.d;
  k.up = k.a.upscale();
  k.max_tile = static_cast<int>(std::max(k.h, k.w));
  k.requested = r.tile_px > 0 ? std::max(1, r.tile_px / k.up) : 0;
  DecodePlan p;
  p.weights_bytes = static_cast<std::uint64_t>(k.wbytes);
  p.full_peak_bytes = bytes(k.wbytes + full_activation_elems(k.a, k.B, k.h, k.w, k.d) * k.d);

  DecodeTiling mode = decode_tiling_from_name(r.mode, "mode");
  if (mode == DecodeTiling::Auto)
    mode = (k.requested == 0 && k.fits(p.full_peak_bytes)) ? DecodeTiling::Full : DecodeTiling::Exact;
  p.mode = decode_tiling_name(mode);

  if (mode == DecodeTiling::Full) {
    if (!k.fits(p.full_peak_bytes)) throw k.budget_error("a full decode (use mode exact or auto)", p.full_peak_bytes);
    p.peak_bytes = p.full_peak_bytes;
    return p;
  }
  if (mode == DecodeTiling::Exact) plan_exact(k, p);
  else plan_tile_forward(k, mode, vae, p);
  const int ny = (r.latent_height + p.tile_latent - 1) / p.tile_latent;
  const int nx = (r.latent_width + p.tile_latent - 1) / p.tile_latent;
  p.tiles = ny * nx;
  return p;
}

}  // namespace

const char* decode_tiling_name(DecodeTiling tiling) {
  switch (tiling) {
    case DecodeTiling::Full: return "full";
    case DecodeTiling::Exact: return "exact";
    case DecodeTiling::Fast: return "fast";
    case DecodeTiling::Blend: return "blend";
    case DecodeTiling::Auto: break;
  }
  return "auto";
}

DecodeTiling decode_tiling_from_name(const std::string& name, const std::string& field) {
  for (DecodeTiling t : {DecodeTiling::Auto, DecodeTiling::Full, DecodeTiling::Exact, DecodeTiling::Fast, DecodeTiling::Blend})
    if (name == decode_tiling_name(t)) return t;
  throw InputError(field, "unknown mode '" + name + "' (use full, exact, fast, blend or auto)");
}

const VaeArch& decode_arch(const DecodeRequest& request) {
  const auto kind = decoder_kind_from_name(request.family);
  if (!kind) throw InputError("family", "unknown VAE family '" + request.family + "' (kl, flux2, wan2.1 or wan2.2)");
  if (request.arch) {
    if (request.arch->decoder != *kind)
      throw InputError("family", "'" + request.family + "' does not match the VAE figures given (a " +
                                     decoder_kind_name(request.arch->decoder) + " decoder)");
    return *request.arch;
  }
  const ModelInfo* m = vae_with_decoder(*kind);
  if (!m) throw InputError("family", "no VAE in models.json has the decoder '" + request.family + "'");
  return *m->vae;
}

DecodePlan plan_decode(const DecodeRequest& request) {
  return kl_decoder(decode_arch(request).decoder) ? plan_kl(request) : plan_decode_wan(request);
}

}  // namespace headroom
