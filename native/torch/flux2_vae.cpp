#include "torch/flux2_vae.hpp"

#include "core/base/error.hpp"

namespace headroom::torch_ops::flux2 {

Front load_front(const TensorMap& sd, at::Device device) {
  Front f;
  f.z_channels = require(sd, "decoder.conv_in.weight", {-1, -1, 3, 3}).size(1);
  const int64_t n = f.packed_channels();
  // require() refuses non-finite statistics, as it does every weight.
  f.mean = require(sd, "bn.running_mean", {n}).to(device, at::kFloat);
  f.var = require(sd, "bn.running_var", {n}).to(device, at::kFloat);
  if ((f.var < 0).any().item<bool>())
    throw InputError("vae", "'bn.running_var' has negative entries; a variance cannot be negative (damaged file?)");
  return f;
}

at::Tensor unpack_latent(const Front& f, const at::Tensor& packed, at::ScalarType dtype) {
  const int64_t n = f.packed_channels();
  at::Tensor x = packed.to(f.mean.device(), at::kFloat);
  x = x.mul(at::sqrt(f.var + kBnEps).view({1, n, 1, 1})).add_(f.mean.view({1, n, 1, 1}));
  // pixel_shuffle reads channel c*r*r + i*r + j into pixel (h*r + i, w*r + j) of channel c: BFL's
  // "(c pi pj) i j -> c (i pi) (j pj)" with r = 2.
  return at::pixel_shuffle(x, kPatch).to(dtype).contiguous();
}

}  // namespace headroom::torch_ops::flux2
