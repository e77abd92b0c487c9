#pragma once
// GroupNorm split into its two halves so tiled decoders can share statistics across tiles:
// per-tile moments (count, mean, M2 in fp32), their exact pooling (Chan et al.'s parallel
// combination), and the normalisation applied with supplied statistics, fused with SiLU.
#include <ATen/ATen.h>

namespace headroom::torch_ops {

// Moments per (batch, group), each [B, G] fp32.
struct GroupMoments {
  at::Tensor count, mean, m2;
  bool defined() const { return count.defined(); }
};

// Moments of x [B, C, ...] over every non-(B, C) position, groups of C/G consecutive channels.
GroupMoments group_moments(const at::Tensor& x, int64_t groups);

// acc <- acc (+) part; an undefined acc becomes part. Exact for disjoint pixel sets.
void merge_moments(GroupMoments& acc, const GroupMoments& part);

// Per-(b, c) fp32 scale and shift such that x * scale + shift == group_norm(x) with these moments.
struct NormAffine {
  at::Tensor scale, shift;  // [B, C] fp32
};
NormAffine norm_affine(const GroupMoments& m, const at::Tensor& gamma, const at::Tensor& beta, double eps);

// silu?(x * scale + shift), computed in fp32 and returned in x's dtype (CUDA kernel when available).
at::Tensor apply_norm(const at::Tensor& x, const NormAffine& a, bool silu);

// Whole-tensor GroupNorm (+ SiLU) with statistics in fp32 whatever x's dtype.
at::Tensor group_norm(const at::Tensor& x, int64_t groups, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                      bool silu);

}  // namespace headroom::torch_ops
