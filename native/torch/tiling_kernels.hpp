#pragma once
// Bridges from tensors to the raw-pointer CUDA kernels of native/cuda. Each function returns
// false / an undefined tensor when it cannot run (CPU tensor, dtype not covered, or a build whose
// LibTorch has no CUDA); the caller then runs its ATen path, which computes the same result.
#include <ATen/ATen.h>

namespace headroom::torch_ops::tiling_kernels {

// True when this build can launch the kernels at all (LibTorch with CUDA + headroom_cuda linked).
bool available();

// acc [P, H, W] += tile [P, h, w] * wy[h] x wx[w] at (y, x); wsum [H, W] += the mask. All fp32, contiguous.
bool weighted_accumulate(at::Tensor& acc, at::Tensor& wsum, const at::Tensor& tile, const at::Tensor& wy,
                         const at::Tensor& wx, int64_t y, int64_t x);
// acc / wsum (broadcast over planes), or undefined.
at::Tensor normalize_accumulated(const at::Tensor& acc, const at::Tensor& wsum);

// y = silu?(x * scale[b, c] + shift[b, c]) for contiguous x [B, C, ...] in fp32/fp16/bf16; scale/shift fp32 [B, C].
at::Tensor groupnorm_apply(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift, bool silu);
// [B, G, 3] fp32 (count, mean, M2), or undefined.
at::Tensor group_stats(const at::Tensor& x, int64_t groups);

}  // namespace headroom::torch_ops::tiling_kernels
