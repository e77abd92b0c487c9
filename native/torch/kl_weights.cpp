#include "torch/kl_weights.hpp"

#include "core/base/error.hpp"

namespace headroom::torch_ops::kl {
namespace {

struct Loader {
  const TensorMap& sd;
  at::TensorOptions opt;

  at::Tensor get(const std::string& key, const std::vector<int64_t>& shape) {
    return require(sd, key, shape).to(opt);
  }
  Conv conv(const std::string& p, int64_t cout, int64_t cin, int64_t k) {
    Conv c;
    auto it = sd.find(p + ".weight");
    // Diffusers-converted attention projections are sometimes stored as [C, C] linears.
    if (k == 1 && it != sd.end() && it->second.dim() == 2)
      c.w = get(p + ".weight", {cout, cin}).view({cout, cin, 1, 1});
    else
      c.w = get(p + ".weight", {cout, cin, k, k});
    c.b = get(p + ".bias", {cout});
    return c;
  }
  Norm norm(const std::string& p, int64_t c) {
    if (c % kGroups != 0)
      throw InputError("vae", "'" + p + ".weight' has " + std::to_string(c) + " channels, not a multiple of the " +
                                  std::to_string(kGroups) + " GroupNorm groups");
    return {get(p + ".weight", {c}), get(p + ".bias", {c})};
  }
  ResBlock res(const std::string& p, int64_t cin, int64_t cout) {
    ResBlock r;
    r.n1 = norm(p + ".norm1", cin);
    r.c1 = conv(p + ".conv1", cout, cin, 3);
    r.n2 = norm(p + ".norm2", cout);
    r.c2 = conv(p + ".conv2", cout, cout, 3);
    if (cin != cout) r.skip = conv(p + ".nin_shortcut", cout, cin, 1);
    return r;
  }
};

}  // namespace

std::vector<int64_t> Weights::widths() const {
  std::vector<int64_t> w;
  for (const auto& l : levels) w.push_back(l.blocks.front().c1.cout());
  return w;
}

Weights load_weights(const TensorMap& sd, at::Device device, at::ScalarType dtype) {
  Loader L{sd, at::TensorOptions().device(device).dtype(dtype)};
  Weights w;
  const at::Tensor& cin_w = require(sd, "decoder.conv_in.weight", {-1, -1, 3, 3});
  w.z_channels = cin_w.size(1);
  const int64_t block_in = cin_w.size(0);
  const int levels = count_indexed(sd, "decoder.up.", ".block.0.conv1.weight");
  const int blocks = count_indexed(sd, "decoder.up.0.block.", ".conv1.weight");
  if (levels < 1 || blocks < 1)
    throw InputError("vae", "state dict has no 'decoder.up.0.block.0.conv1.weight': not an AutoencoderKL decoder");
  if (levels > 8) throw InputError("vae", std::to_string(levels) + " decoder levels is not a supported AutoencoderKL");
  // ComfyUI's VAE state dict keeps post_quant_conv at the top level; Black Forest Labs' files (FLUX.2's
  // AutoEncoder) keep it inside the decoder. Same layer, applied first either way.
  if (has(sd, "post_quant_conv.weight")) w.post_quant = L.conv("post_quant_conv", w.z_channels, w.z_channels, 1);
  else if (has(sd, "decoder.post_quant_conv.weight"))
    w.post_quant = L.conv("decoder.post_quant_conv", w.z_channels, w.z_channels, 1);
  w.conv_in = L.conv("decoder.conv_in", block_in, w.z_channels, 3);
  w.mid1 = L.res("decoder.mid.block_1", block_in, block_in);
  w.attn.n = L.norm("decoder.mid.attn_1.norm", block_in);
  w.attn.q = L.conv("decoder.mid.attn_1.q", block_in, block_in, 1);
  w.attn.k = L.conv("decoder.mid.attn_1.k", block_in, block_in, 1);
  w.attn.v = L.conv("decoder.mid.attn_1.v", block_in, block_in, 1);
  w.attn.proj = L.conv("decoder.mid.attn_1.proj_out", block_in, block_in, 1);
  w.mid2 = L.res("decoder.mid.block_2", block_in, block_in);
  w.levels.resize(levels);
  int64_t c = block_in;
  for (int i = levels - 1; i >= 0; --i) {
    const std::string p = "decoder.up." + std::to_string(i);
    const int64_t width = require(sd, p + ".block.0.conv1.weight", {-1, c, 3, 3}).size(0);
    for (int j = 0; j < blocks; ++j) {
      w.levels[i].blocks.push_back(L.res(p + ".block." + std::to_string(j), c, width));
      c = width;
    }
    if (i != 0) w.levels[i].upsample = L.conv(p + ".upsample.conv", c, c, 3);
  }
  w.norm_out = L.norm("decoder.norm_out", c);
  w.conv_out = L.conv("decoder.conv_out", 3, c, 3);
  return w;
}

}  // namespace headroom::torch_ops::kl
