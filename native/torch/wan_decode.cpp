// Wan 2.1 / 2.2 video decode in the requested mode.
//
// full:  one stream over the whole frame, one latent frame at a time.
// exact: the head (conv2, conv1, middle.0, the frame-global attention) runs once per latent frame over
//        the whole frame; the tail runs per spatial tile over ALL frames with the tile's own causal
//        cache, on a region that starts with the receptive-field halo and shrinks layer by layer,
//        then is cropped into place. Equal to full up to float rounding. Never tiles in time.
// blend: the same head; tiles with a feathered overlap whose tails are decoded as independent images.
// Frames go to the CPU output as they are produced.
#include "torch/wan_decode.hpp"

#include <cmath>

#include "core/estimate/decode_plan.hpp"
#include "core/base/error.hpp"
#include "torch/budget.hpp"
#include "torch/state_dict_io.hpp"
#include "torch/tiling.hpp"
#include "torch/wan_layers.hpp"
#include "torch/wan_model.hpp"

namespace headroom::torch_ops {
namespace {

using wan::Region;
using wan::Stream;

struct Job {
  const wan::Model& m;
  const at::Tensor& z;  // [B, C, T, h, w] on the compute device and dtype
  const DecodeOptions& opt;
  at::Tensor out;       // [B*F, H, W, 3] float32 CPU
  int64_t frames = 0, H = 0, W = 0, scale = 1;
  at::Device store{at::kCPU};  // where caches and the head's outputs live
  int64_t query_chunk = 0;
  int done = 0, total = 0;

  void step() {
    ++done;
    if (opt.progress) opt.progress(done, total);
    if (opt.cancelled && opt.cancelled()) throw Cancelled();
  }

  // Writes chunk y ([1, 3, k, h', w'] on output grid region r) cropped to rows [Y0, Y1) x [X0, X1)
  // as frames f0.. of clip b: (y + 1) / 2 clamped to [0, 1].
  // Before any clamp, which would turn an overflow into plausible black or white pixels (KL decodes are
  // checked the same way, decode.cpp to_image).
  void check_finite(const at::Tensor& y) const {
    if (!at::isfinite(y).all().item<bool>())
      throw Error(std::string("decode produced NaN/inf values (") + c10::toString(y.scalar_type()) +
                  " overflow is the usual cause); decode in bf16 or fp32 instead");
  }

  void write(const at::Tensor& y, const Region& r, int64_t b, int64_t f0, int64_t Y0, int64_t Y1, int64_t X0,
             int64_t X1) {
    check_finite(y);
    at::Tensor c = y.narrow(3, Y0 - r.y0, Y1 - Y0).narrow(4, X0 - r.x0, X1 - X0);
    c = c.to(at::kFloat).add(1.0).mul_(0.5).clamp_(0.0, 1.0).squeeze(0).permute({1, 2, 3, 0});
    out.view({-1, frames, H, W, 3})[b].narrow(0, f0, c.size(0)).narrow(1, Y0, Y1 - Y0).narrow(2, X0, X1 - X0).copy_(c);
  }

  at::Tensor latent_frame(int64_t b, int64_t t) const { return z.narrow(0, b, 1).narrow(2, t, 1); }

  void run_full(int64_t b) {
    const int64_t h = z.size(3), w = z.size(4);
    Stream head(store), tail(store);
    int64_t f0 = 0;
    for (int64_t t = 0; t < z.size(2); ++t) {
      head.begin_chunk();
      at::Tensor a = wan::run_head_frame(m, latent_frame(b, t), head, query_chunk);
      head.end_chunk();
      Region r = Region::whole(h, w);
      tail.begin_chunk();
      at::Tensor y = wan::run_tail_chunk(m, std::move(a), r, tail);
      tail.end_chunk();
      write(y, r, b, f0, 0, H, 0, W);
      f0 += y.size(2);
      step();
    }
  }

  std::vector<at::Tensor> run_heads(int64_t b) {
    Stream head(store);
    std::vector<at::Tensor> a;
    for (int64_t t = 0; t < z.size(2); ++t) {
      head.begin_chunk();
      a.push_back(wan::run_head_frame(m, latent_frame(b, t), head, query_chunk).to(store));
      head.end_chunk();
      step();
    }
    return a;
  }

  // Exact: tiles own disjoint output rectangles; each is computed from a halo'd latent region.
  void run_exact(int64_t b, int64_t tile) {
    const int64_t h = z.size(3), w = z.size(4);
    const std::string ops = wan::tail_spatial_ops(m);
    std::vector<at::Tensor> heads = run_heads(b);
    for (const Span& ys : partition(h, tile)) {
      for (const Span& xs : partition(w, tile)) {
        const int64_t Y0 = ys.begin * scale, Y1 = ys.end * scale, X0 = xs.begin * scale, X1 = xs.end * scale;
        int64_t ly0, ly1, lx0, lx1;
        wan::tail_input_span(ops, h, Y0, Y1, ly0, ly1);
        wan::tail_input_span(ops, w, X0, X1, lx0, lx1);
        Stream s(store);
        int64_t f0 = 0;
        for (int64_t t = 0; t < z.size(2); ++t) {
          at::Tensor a = heads[t].narrow(3, ly0, ly1 - ly0).narrow(4, lx0, lx1 - lx0).to(z.device());
          Region r{ly0, ly1, lx0, lx1, h, w};
          s.begin_chunk();
          at::Tensor y = wan::run_tail_chunk(m, std::move(a), r, s);
          s.end_chunk();
          write(y, r, b, f0, Y0, Y1, X0, X1);
          f0 += y.size(2);
          step();
        }
      }
    }
  }

  // Blend: overlapping tiles decoded as independent images after the shared head, feathered over
  // the overlap on interior sides.
  void run_blend(int64_t b, int64_t tile, int64_t overlap) {
    const int64_t h = z.size(3), w = z.size(4);
    std::vector<at::Tensor> heads = run_heads(b);
    at::Tensor clip = out.view({-1, frames, H, W, 3})[b];
    clip.zero_();
    at::Tensor wsum = at::zeros({H, W}, at::kFloat);
    for (const Span& ys : overlapping_tiles(h, tile, overlap)) {
      for (const Span& xs : overlapping_tiles(w, tile, overlap)) {
        const int64_t ramp = overlap * scale;
        at::Tensor wy = feather_ramp(ys.size() * scale, ys.begin > 0 ? ramp : 0, ys.end < h ? ramp : 0);
        at::Tensor wx = feather_ramp(xs.size() * scale, xs.begin > 0 ? ramp : 0, xs.end < w ? ramp : 0);
        at::Tensor wt = wy.unsqueeze(1) * wx.unsqueeze(0);  // [th, tw]
        const int64_t Y0 = ys.begin * scale, X0 = xs.begin * scale;
        wsum.narrow(0, Y0, wt.size(0)).narrow(1, X0, wt.size(1)).add_(wt);
        Stream s(store);
        int64_t f0 = 0;
        for (int64_t t = 0; t < z.size(2); ++t) {
          at::Tensor a = heads[t].narrow(3, ys.begin, ys.size()).narrow(4, xs.begin, xs.size()).to(z.device());
          Region r = Region::whole(ys.size(), xs.size());
          s.begin_chunk();
          at::Tensor y = wan::run_tail_chunk(m, std::move(a), r, s);
          s.end_chunk();
          check_finite(y);
          at::Tensor c = y.to(at::kFloat).add(1.0).mul_(0.5).squeeze(0).permute({1, 2, 3, 0}).cpu();  // [k, th, tw, 3]
          clip.narrow(0, f0, c.size(0)).narrow(1, Y0, c.size(1)).narrow(2, X0, c.size(2)).add_(c * wt.unsqueeze(-1));
          f0 += c.size(0);
          step();
        }
      }
    }
    clip.div_(wsum.unsqueeze(-1)).clamp_(0.0, 1.0);
  }
};

at::ScalarType weights_dtype(const StateDict& sd) {
  auto it = sd.find("decoder.conv1.weight");
  return it == sd.end() ? at::kFloat : it->second.scalar_type();
}

void check_latent(const at::Tensor& latent, const wan::Model& m) {
  if (!latent.defined()) throw InputError("latent", "no latent tensor given");
  if (latent.dim() != 5)
    throw InputError("latent", "Wan VAEs decode video latents [B, C, T, h, w] (5-D, as ComfyUI's Save Latent writes "
                               "them); got a " + std::to_string(latent.dim()) + "-D tensor " +
                               shape_string(latent.sizes()) + " (for one image add a time axis of 1)");
  if (latent.size(1) != m.z_dim)
    throw InputError("latent", "has " + std::to_string(latent.size(1)) + " channels but this " + m.family +
                                   " VAE decodes " + std::to_string(m.z_dim) + "-channel latents " +
                                   (m.z_dim == 48 ? "(Wan 2.2 TI2V 5B)" : "(Wan 2.1 / Wan 2.2 A14B / Qwen-Image)") +
                                   "; use the VAE that matches the model that made the latent");
  for (int d = 0; d < 5; ++d)
    if (latent.size(d) < 1) throw InputError("latent", "has an empty axis: " + shape_string(latent.sizes()));
  if (!at::isfinite(latent).all().item<bool>())
    throw InputError("latent", "contains NaN or infinite values (the sampler diverged, or an fp16 overflow); "
                               "decoding it would give a black or garbage video");
}

}  // namespace

torch::Tensor decode_wan(const std::string& family, const StateDict& state_dict, const torch::Tensor& latent,
                         const DecodeOptions& options, DecodeInfo* info) {
  if (!latent.defined()) throw InputError("latent", "no latent tensor given");
  const at::Device device = options.device ? *options.device : latent.device();
  const at::ScalarType dtype = options.dtype ? *options.dtype : weights_dtype(state_dict);
  if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf)
    throw InputError("dtype", std::string("Wan VAE decode runs in fp32, bf16 or fp16, not ") + c10::toString(dtype));
  at::InferenceMode guard;
  const wan::Model m = wan::load_model(family, state_dict, device, dtype);
  check_latent(latent, m);

  DecodeRequest req;
  req.family = family;
  req.latent_channels = int(m.z_dim);
  req.batch = int(latent.size(0));
  req.latent_frames = int(latent.size(2));
  req.latent_height = int(latent.size(3));
  req.latent_width = int(latent.size(4));
  req.base_channels = int(m.head.in_channels());
  req.dtype_bytes = int(c10::elementSize(dtype));
  req.mode = options.mode;  // plan_decode_wan reads fast as blend
  req.tile_px = options.tile_px;
  if (options.budget_bytes) {
    req.budget_bytes = *options.budget_bytes;
  } else if (auto free = free_device_bytes(device)) {
    req.budget_bytes = *free;
  }
  const DecodePlan plan = plan_decode_wan(req);

  const at::Tensor z = latent.to(device, dtype).contiguous();
  Job job{m, z, options};
  job.scale = m.spatial_scale();
  job.frames = m.output_frames(z.size(2));
  job.H = z.size(3) * job.scale;
  job.W = z.size(4) * job.scale;
  job.store = plan.park_on_cpu ? at::Device(at::kCPU) : device;
  job.query_chunk = wan::attention_query_chunk(1, z.size(3) * z.size(4), req.dtype_bytes,
                                               int64_t(kWanAttentionScratchBytes));
  job.out = at::empty({z.size(0) * job.frames, job.H, job.W, 3}, at::kFloat);
  const int64_t T = z.size(2), B = z.size(0);
  const DecodeTiling tiling = plan.tiling();
  if (tiling == DecodeTiling::Full) {
    job.total = int(B * T);
  } else {
    job.total = int(B * T * (1 + plan.tiles));
  }
  try {
    for (int64_t b = 0; b < B; ++b) {
      if (tiling == DecodeTiling::Full) {
        job.run_full(b);
      } else if (tiling == DecodeTiling::Exact) {
        job.run_exact(b, plan.tile_latent);
      } else if (tiling == DecodeTiling::Blend) {
        job.run_blend(b, plan.tile_latent, plan.halo_latent);
      } else {
        throw Error("plan_decode_wan returned unknown mode '" + plan.mode + "'");
      }
    }
  } catch (const c10::Error& e) {
    // e.g. CPU LibTorch builds without half-precision conv3d kernels
    const std::string what = e.what_without_backtrace();
    if (what.find("not implemented for '") != std::string::npos)
      throw InputError("dtype", std::string(c10::toString(dtype)) + " is not supported on " + device.str() +
                                    " by this LibTorch (" + what.substr(0, what.find('\n')) + "); use fp32 or bf16");
    throw;
  }
  if (info) {
    info->family = family;
    info->mode = plan.mode;
    info->tile_latent = plan.tile_latent;
    info->halo_latent = plan.halo_latent;
    info->tiles = plan.tiles;
    info->planned_peak_bytes = plan.peak_bytes;
  }
  return job.out;
}

}  // namespace headroom::torch_ops
