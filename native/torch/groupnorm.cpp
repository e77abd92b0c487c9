#include "torch/groupnorm.hpp"

#include "torch/tiling_kernels.hpp"

namespace headroom::torch_ops {

GroupMoments group_moments(const at::Tensor& x, int64_t groups) {
  const int64_t B = x.size(0), C = x.size(1);
  if (at::Tensor k = tiling_kernels::group_stats(x, groups); k.defined())
    return {k.select(2, 0), k.select(2, 1), k.select(2, 2)};
  // Splitting the channel axis is a view even for a strided tile, so nothing is copied in fp32.
  std::vector<int64_t> shape{B, groups, C / groups};
  std::vector<int64_t> dims{2};
  for (int64_t d = 2; d < x.dim(); ++d) {
    shape.push_back(x.size(d));
    dims.push_back(d + 1);
  }
  at::Tensor v = x.view(shape);
  at::Tensor vf = v.scalar_type() == at::kFloat ? v : v.to(at::kFloat);
  const double n = static_cast<double>(v.numel() / (B * groups));
  auto [var, mean] = at::var_mean(vf, dims, /*unbiased=*/false);
  return {at::full({B, groups}, n, vf.options()), mean, var * n};
}

void merge_moments(GroupMoments& acc, const GroupMoments& part) {
  if (!acc.defined()) {
    acc = part;
    return;
  }
  at::Tensor n = acc.count + part.count;
  at::Tensor delta = part.mean - acc.mean;
  at::Tensor w = part.count / n;
  acc.mean = acc.mean + delta * w;
  acc.m2 = acc.m2 + part.m2 + delta * delta * acc.count * w;
  acc.count = n;
}

NormAffine norm_affine(const GroupMoments& m, const at::Tensor& gamma, const at::Tensor& beta, double eps) {
  const int64_t B = m.mean.size(0), G = m.mean.size(1), C = gamma.size(0);
  at::Tensor rstd = at::rsqrt(m.m2 / m.count + eps);                          // [B, G]
  at::Tensor rs = rstd.repeat_interleave(C / G, 1);                           // [B, C]
  at::Tensor mu = m.mean.repeat_interleave(C / G, 1);
  at::Tensor g = gamma.to(at::kFloat).view({1, C}), b = beta.to(at::kFloat).view({1, C});
  at::Tensor scale = rs * g;
  at::Tensor shift = b - mu * scale;
  (void)B;
  return {scale.contiguous(), shift.contiguous()};
}

at::Tensor apply_norm(const at::Tensor& x, const NormAffine& a, bool silu) {
  if (at::Tensor k = tiling_kernels::groupnorm_apply(x, a.scale, a.shift, silu); k.defined()) return k;
  std::vector<int64_t> shape(x.dim(), 1);
  shape[0] = x.size(0);
  shape[1] = x.size(1);
  if (x.scalar_type() == at::kFloat) {
    at::Tensor y = at::addcmul(a.shift.view(shape), x, a.scale.view(shape));
    return silu ? at::silu_(y) : y;
  }
  // bf16/fp16 on the CPU: one fp32 working copy, updated in place.
  at::Tensor y = x.to(at::kFloat);
  y.mul_(a.scale.view(shape)).add_(a.shift.view(shape));
  if (silu) at::silu_(y);
  return y.to(x.scalar_type());
}

at::Tensor group_norm(const at::Tensor& x, int64_t groups, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                      bool silu) {
  if (x.scalar_type() == at::kFloat && !x.is_cuda()) {
    // ATen's CPU kernel already accumulates fp32 input in fp32 (and is the eager reference's op).
    at::Tensor y = at::group_norm(x, groups, gamma, beta, eps);
    return silu ? at::silu_(y) : y;
  }
  return apply_norm(x, norm_affine(group_moments(x, groups), gamma, beta, eps), silu);
}

}  // namespace headroom::torch_ops
