#include "torch/groupnorm.hpp"

#include "torch/tiling_kernels.hpp"

namespace headroom::torch_ops {

GroupMoments group_moments(const at::Tensor& x, int64_t groups) {
  const int64_t B = x.size(0);
  if (at::Tensor k = tiling_kernels::group_stats(x, groups); k.defined())
    return {k.select(2, 0), k.select(2, 1), k.select(2, 2)};
  at::Tensor v = x.reshape({B, groups, -1});
  const double n = static_cast<double>(v.size(2));
  at::Tensor vf = v.scalar_type() == at::kFloat ? v : v.to(at::kFloat);
  auto [var, mean] = at::var_mean(vf, {2}, /*unbiased=*/false);
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
  at::Tensor y;
  if (x.scalar_type() == at::kFloat) {
    y = at::addcmul(a.shift.view(shape), x, a.scale.view(shape));
  } else {
    y = at::addcmul(a.shift.view(shape), x.to(at::kFloat), a.scale.view(shape));
  }
  if (silu) at::silu_(y);
  return y.scalar_type() == x.scalar_type() ? y : y.to(x.scalar_type());
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
