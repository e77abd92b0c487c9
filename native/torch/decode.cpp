// decode(): picks the decoder family, checks the inputs, asks the core's plan_decode() for a mode
// and tile that fit the budget, runs it, and returns ComfyUI's IMAGE.
#include "torch/decode.hpp"

#include "core/estimate/decode_plan.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"
#include "core/catalog/model_arch.hpp"
#include "core/inspect/recognise.hpp"
#include "torch/budget.hpp"
#include "torch/flux2_vae.hpp"
#include "torch/kl_decoder.hpp"
#include "torch/kl_weights.hpp"
#include "torch/state_dict_io.hpp"
#include "torch/tiling.hpp"
#include "torch/wan_decode.hpp"

namespace headroom::torch_ops {
namespace {

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "fp32";
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "fp16";
    default: return c10::toString(t);
  }
}

at::ScalarType compute_dtype(const StateDict& sd, const DecodeOptions& o, const at::Device& dev) {
  at::ScalarType t = o.dtype ? *o.dtype : sd.at("decoder.conv_in.weight").scalar_type();
  if (!o.dtype && t != at::kFloat && t != at::kBFloat16 && t != at::kHalf) t = at::kFloat;
  if (t != at::kFloat && t != at::kBFloat16 && t != at::kHalf)
    throw InputError("dtype", dtype_name(t) + " is not a decode dtype (use fp32, bf16 or fp16)");
  if (t == at::kHalf && dev.is_cpu())
    throw InputError("dtype", "fp16 convolutions are not implemented on the CPU by LibTorch; use fp32 or bf16 on the CPU");
  return t;
}

// `channels_hint` says which latents carry how many channels, for the wrong-model message.
void check_latent(const at::Tensor& z, int64_t channels, const std::string& channels_hint) {
  if (!z.defined() || z.dim() != 4)
    throw InputError("latent", "expected a [batch, channels, height, width] latent for this VAE, got " +
                                   (z.defined() ? std::to_string(z.dim()) + " axes " + shape_string(z.sizes()) : std::string("nothing")));
  if (z.size(1) != channels)
    throw InputError("latent", "has " + std::to_string(z.size(1)) + " channels but this VAE decodes " + std::to_string(channels) +
                                   "-channel latents (" + channels_hint + "); is it from another model family?");
  if (z.numel() == 0) throw InputError("latent", "is empty " + shape_string(z.sizes()));
  if (!at::isFloatingType(z.scalar_type())) throw InputError("latent", "must be a floating-point tensor, got " + dtype_name(z.scalar_type()));
  if (!at::isfinite(z).all().item<bool>())
    throw InputError("latent", "contains NaN or infinite values (the sampler diverged, or the latent was saved from a failed run)");
}

at::Tensor to_image(const at::Tensor& x) {
  at::Tensor f = x.to(at::kFloat);
  if (!at::isfinite(f).all().item<bool>())
    throw Error("decode produced NaN/inf values (" + dtype_name(x.scalar_type()) +
                " overflow is the usual cause); decode in bf16 or fp32 instead");
  return f.add_(1.0).mul_(0.5).clamp_(0.0, 1.0).permute({0, 2, 3, 1}).to(at::kCPU).contiguous();
}

// KL VAEs, and FLUX.2's (flux2 = true): its front end (inverse BatchNorm, 2x2 unpatchify; flux2_vae.hpp)
// turns ComfyUI's [B, 128, H/16, W/16] latent into the decoder's [B, 32, H/8, W/8] once, over the whole
// latent, and everything after it (plan, modes, tiles) is the KL decoder's on that latent. Tile sizes
// in DecodeInfo count pixels of that unpatchified latent (1/8 of the image).
torch::Tensor decode_kl(const StateDict& sd, const torch::Tensor& latent, const DecodeOptions& o, DecodeInfo* info,
                        bool flux2) {
  const at::Device dev = o.device ? *o.device : latent.device();
  const at::ScalarType dt = compute_dtype(sd, o, dev);
  kl::Weights w = kl::load_weights(sd, dev, dt);
  std::optional<flux2::Front> front;
  if (flux2) {
    front = flux2::load_front(sd, dev);
    check_latent(latent, front->packed_channels(),
                 "FLUX.2: " + std::to_string(front->packed_channels()) + ", its " + std::to_string(w.z_channels) +
                     " channels patchified 2x2 at 1/16 of the image; Flux/SD3: 16, SD1.5/SDXL: 4");
  } else {
    check_latent(latent, w.z_channels, "Flux/SD3: 16, SD1.5/SDXL: 4, FLUX.2: 128");
  }
  const int64_t side = flux2 ? flux2::kPatch : 1;

  DecodeRequest req;
  req.family = "kl";  // FLUX.2: the KL plan of the unpatchified latent (the front end's buffers are latent-sized)
  req.latent_channels = static_cast<int>(w.z_channels);
  req.batch = static_cast<int>(latent.size(0));
  req.latent_height = static_cast<int>(latent.size(2) * side);
  req.latent_width = static_cast<int>(latent.size(3) * side);
  for (int64_t c : w.widths()) req.level_widths.push_back(static_cast<int>(c));
  req.blocks_per_level = static_cast<int>(w.levels[0].blocks.size());
  req.dtype_bytes = dt == at::kFloat ? 4 : 2;
  req.mode = o.mode;
  req.tile_px = o.tile_px;
  if (o.budget_bytes) {
    req.budget_bytes = *o.budget_bytes;
  } else if (auto free = free_device_bytes(dev)) {
    req.budget_bytes = std::max<std::uint64_t>(1, *free);
  }
  const DecodePlan plan = plan_decode(req);

  at::Tensor z = front ? flux2::unpack_latent(*front, latent, dt) : latent.to(dev, dt);
  kl::TileRunOptions run;
  run.tile_latent = plan.tile_latent;
  run.park_on_cpu = plan.park_on_cpu;
  run.progress = o.progress;
  if (o.cancelled) run.check_cancel = [&o] {
    if (o.cancelled()) throw Cancelled();
  };
  kl::TileRunInfo tinfo;
  at::Tensor raw;
  const DecodeTiling tiling = plan.tiling();
  if (tiling == DecodeTiling::Full) {
    if (run.check_cancel) run.check_cancel();
    raw = kl::forward(w, z);
    if (o.progress) o.progress(1, 1);
  } else if (tiling == DecodeTiling::Exact) {
    raw = kl::forward_exact(w, z, run, &tinfo);
  } else if (tiling == DecodeTiling::Fast) {
    raw = kl::forward_fast(w, z, run, &tinfo);
  } else {  // blend
    raw = blend_tiles(
        z, plan.tile_latent, plan.halo_latent, w.upscale(), [&w](const at::Tensor& t) { return kl::forward(w, t); },
        o.progress, run.check_cancel);
  }
  if (info) {
    info->family = decoder_kind_name(flux2 ? DecoderKind::Flux2 : DecoderKind::Kl);
    info->mode = plan.mode;
    info->tile_latent = plan.tile_latent;
    info->halo_latent = plan.halo_latent;
    info->tiles = plan.tiles;
    info->planned_peak_bytes = plan.peak_bytes;
    info->full_peak_bytes = plan.full_peak_bytes;
    info->park_on_cpu = plan.park_on_cpu;
    info->budget_bytes = req.budget_bytes;
    info->parked_bytes_peak = tinfo.stored_bytes_peak;
  }
  return to_image(raw);
}

}  // namespace

std::string detect_vae_family(const StateDict& sd) {
  // The core's one recogniser decides (comfy_nodes.json vae_key_rules); the decoders below only check
  // that the weights of the family they were given have the shapes they need.
  const std::string family = vae_decoder_family([&sd](const std::string& key) { return has(sd, key); });
  if (family.empty())
    throw InputError("vae", "not a VAE Headroom can decode natively: expected 'decoder.conv_in.weight' and "
                            "'decoder.up.0.block.0.conv1.weight' (Flux/SD3/SDXL/SD1.5 AutoencoderKL; FLUX.2 adds "
                            "'bn.running_mean') or "
                            "'decoder.middle.0.residual.0.gamma' (Wan 2.1/2.2); for other VAEs use blend mode with a "
                            "Python decode function");
  if (!decoder_kind_from_name(family))
    throw Error("comfy_nodes.json: vae_key_rules: family '" + family +
                "' has no native decoder (expected kl, flux2, wan2.1 or wan2.2)");
  return family;
}

torch::Tensor decode(const StateDict& state_dict, const torch::Tensor& latent, const DecodeOptions& options,
                     DecodeInfo* info) {
  const std::string family = detect_vae_family(state_dict);
  const DecoderKind kind = *decoder_kind_from_name(family);  // detect_vae_family refuses any other
  if (kl_decoder(kind)) return decode_kl(state_dict, latent, options, info, kind == DecoderKind::Flux2);
  return decode_wan(family, state_dict, latent, options, info);
}

}  // namespace headroom::torch_ops
