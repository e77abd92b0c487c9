// Reads the Wan VAE decoder from a state dict. Every width is taken from the tensors and checked
// against the previous layer, so a truncated or foreign file fails with the key that is wrong.
#include "torch/wan_model.hpp"

#include <cmath>

#include "core/base/error.hpp"

namespace headroom::torch_ops::wan {
namespace {

struct Loader {
  const TensorMap& sd;
  at::Device device;
  at::ScalarType dtype;

  at::Tensor cast(const at::Tensor& t) const { return t.to(device, dtype).contiguous(); }

  // A conv whose weight is [Co, Ci, kt, k, k] (3-D) or [Co, Ci, k, k] (2-D); -1 = any size.
  Conv conv(const std::string& p, int64_t co, int64_t ci, int64_t kt, int64_t k, bool two_d = false) const {
    Conv c;
    std::vector<int64_t> shape = two_d ? std::vector<int64_t>{co, ci, k, k} : std::vector<int64_t>{co, ci, kt, k, k};
    at::Tensor w = require(sd, p + "weight", shape);
    if (two_d) w = w.unsqueeze(2);
    c.weight = cast(w);
    c.bias = cast(require(sd, p + "bias", {w.size(0)}));
    return c;
  }

  RmsNorm norm(const std::string& key, int64_t c, bool image) const {
    const at::Tensor& g = require(sd, key, image ? std::vector<int64_t>{c, 1, 1} : std::vector<int64_t>{c, 1, 1, 1});
    RmsNorm n;
    n.scale = cast(g.reshape({1, c, 1, 1, 1}).to(at::kFloat) * std::sqrt(double(c)));
    return n;
  }

  // A residual block taking `cin` channels; returns its width in `cout`.
  ResBlock res(const std::string& p, int64_t cin, int64_t& cout) const {
    ResBlock b;
    b.norm1 = norm(p + "residual.0.gamma", cin, false);
    b.conv1 = conv(p + "residual.2.", -1, cin, 3, 3);
    cout = b.conv1.out_channels();
    b.norm2 = norm(p + "residual.3.gamma", cout, false);
    b.conv2 = conv(p + "residual.6.", cout, cout, 3, 3);
    if (cin != cout) {
      b.has_shortcut = true;
      b.shortcut = conv(p + "shortcut.", cout, cin, 1, 1);
    } else if (has(sd, p + "shortcut.weight")) {
      throw InputError("vae", "'" + p + "shortcut.weight' present although the block keeps its width " +
                                  std::to_string(cin) + " (not a Wan VAE decoder?)");
    }
    return b;
  }

  // Resample of a `c`-channel input; returns its output width in `cout`.
  Resample resample(const std::string& p, int64_t c, int64_t& cout) const {
    Resample r;
    r.temporal = has(sd, p + "time_conv.weight");
    if (r.temporal) r.time_conv = conv(p + "time_conv.", 2 * c, c, 3, 1);
    r.conv = conv(p + "resample.1.", -1, c, 1, 3, /*two_d=*/true);
    cout = r.conv.out_channels();
    return r;
  }
};

[[noreturn]] void unknown_layer(const std::string& p) {
  throw InputError("vae", "'" + p + "*' is neither a residual block nor a resample (attention inside the up "
                          "blocks is not part of the released Wan VAEs and is not supported)");
}

// Wan 2.1's up blocks: a flat list of residual blocks, each run closed by a resample. `c` is the width in and out.
void load_ups_wan21(const TensorMap& sd, const Loader& L, Model& m, int64_t& c) {
  int64_t cout = 0;
  UpBlock cur;
  for (int i = 0;; ++i) {
    const std::string p = "decoder.upsamples." + std::to_string(i) + ".";
    if (has(sd, p + "residual.0.gamma")) {
      cur.res.push_back(L.res(p, c, cout));
      c = cout;
    } else if (has(sd, p + "resample.1.weight")) {
      cur.has_resample = true;
      cur.resample = L.resample(p, c, cout);
      c = cout;
      m.ups.push_back(std::move(cur));
      cur = UpBlock{};
    } else if (has(sd, p + "norm.gamma")) {
      unknown_layer(p);
    } else {
      break;
    }
  }
  if (!cur.res.empty()) m.ups.push_back(std::move(cur));
}

// Wan 2.2's up blocks: nested lists, each closed by a width-keeping resample with a repeated shortcut.
void load_ups_wan22(const TensorMap& sd, const Loader& L, Model& m, int64_t& c) {
  int64_t cout = 0;
  for (int i = 0;; ++i) {
    const std::string p = "decoder.upsamples." + std::to_string(i) + ".upsamples.";
    if (!has(sd, p + "0.residual.0.gamma")) break;
    UpBlock u;
    const int64_t cin = c;
    for (int j = 0;; ++j) {
      const std::string q = p + std::to_string(j) + ".";
      if (has(sd, q + "residual.0.gamma")) {
        u.res.push_back(L.res(q, c, cout));
        c = cout;
      } else if (has(sd, q + "resample.1.weight")) {
        u.has_resample = true;
        u.resample = L.resample(q, c, cout);
        if (cout != c) throw InputError("vae", "'" + q + "resample.1.weight' changes the width; Wan 2.2 keeps it");
        break;
      } else if (has(sd, q + "norm.gamma")) {
        unknown_layer(q);
      } else {
        break;
      }
    }
    if (u.has_resample) {
      u.dup_shortcut = true;
      u.dup_out = c;
      u.dup_factor_t = u.resample.temporal ? 2 : 1;
      if ((u.dup_out * u.dup_factor_t * 4) % cin != 0)
        throw InputError("vae", "decoder.upsamples." + std::to_string(i) + ": shortcut from " + std::to_string(cin) +
                                    " to " + std::to_string(c) + " channels is not a whole repeat");
    }
    m.ups.push_back(std::move(u));
  }
}

}  // namespace

int64_t Model::spatial_scale() const {
  int64_t s = patch;
  for (const auto& u : ups)
    if (u.has_resample) s *= 2;
  return s;
}

int64_t Model::time_upsamples() const {
  int64_t n = 0;
  for (const auto& u : ups)
    if (u.has_resample && u.resample.temporal) ++n;
  return n;
}

int64_t Model::output_frames(int64_t latent_frames) const {
  // each temporal doubling maps t frames to 1 + 2 (t - 1)
  int64_t t = latent_frames;
  for (int64_t i = 0; i < time_upsamples(); ++i) t = 1 + 2 * (t - 1);
  return t;
}

Model load_model(const std::string& family, const TensorMap& sd, at::Device device, at::ScalarType dtype) {
  if (family != "wan2.1" && family != "wan2.2")
    throw InputError("vae", "family '" + family + "' is not a Wan VAE (expected wan2.1 or wan2.2)");
  Loader L{sd, device, dtype};
  Model m;
  m.family = family;
  const at::Tensor& c2 = require(sd, "conv2.weight", {-1, -1, 1, 1, 1});
  m.z_dim = c2.size(1);
  m.conv2 = L.conv("conv2.", m.z_dim, m.z_dim, 1, 1);
  m.conv1 = L.conv("decoder.conv1.", -1, m.z_dim, 3, 3);
  int64_t c = m.conv1.out_channels(), cout = 0;
  m.mid0 = L.res("decoder.middle.0.", c, cout);
  if (cout != c) throw InputError("vae", "decoder.middle.0 changes the width; not a Wan VAE decoder");
  m.attn.norm = L.norm("decoder.middle.1.norm.gamma", c, true);
  m.attn.to_qkv = L.conv("decoder.middle.1.to_qkv.", 3 * c, c, 1, 1, true);
  m.attn.proj = L.conv("decoder.middle.1.proj.", c, c, 1, 1, true);
  m.mid2 = L.res("decoder.middle.2.", c, cout);
  if (cout != c) throw InputError("vae", "decoder.middle.2 changes the width; not a Wan VAE decoder");

  if (family == "wan2.1") load_ups_wan21(sd, L, m, c);
  else load_ups_wan22(sd, L, m, c);
  if (m.ups.empty())
    throw InputError("vae", "state dict has no decoder.upsamples.* blocks (expected the Wan VAE decoder)");
  m.head_norm = L.norm("decoder.head.0.gamma", c, false);
  m.head = L.conv("decoder.head.2.", -1, c, 3, 3);
  const int64_t oc = m.head.out_channels();
  if (oc == 3) {
    m.patch = 1;
  } else if (oc == 12) {
    m.patch = 2;
  } else {
    throw InputError("vae", "'decoder.head.2.weight' gives " + std::to_string(oc) +
                                " output channels; expected 3 (Wan 2.1) or 12 (Wan 2.2, 2x2 patches)");
  }
  return m;
}

std::string tail_spatial_ops(const Model& m) {
  std::string ops = "cc";  // middle.2
  for (const auto& u : m.ups) {
    for (size_t i = 0; i < u.res.size(); ++i) ops += "cc";
    if (u.has_resample) ops += "uc";
  }
  ops += "c";  // head
  if (m.patch == 2) ops += "u";
  return ops;
}

void tail_input_span(const std::string& ops, int64_t latent_size, int64_t out_lo, int64_t out_hi, int64_t& lo,
                     int64_t& hi) {
  int64_t size = latent_size;
  for (char op : ops)
    if (op == 'u') size *= 2;
  lo = out_lo;
  hi = out_hi;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (*it == 'c') {
      lo = std::max<int64_t>(0, lo - 1);
      hi = std::min<int64_t>(size, hi + 1);
    } else {
      size /= 2;
      lo = lo / 2;
      hi = (hi + 1) / 2;
    }
  }
}

}  // namespace headroom::torch_ops::wan
