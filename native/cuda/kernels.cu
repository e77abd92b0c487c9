#include "cuda/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace headroom::cuda {
namespace {

__device__ __forceinline__ float load(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, std::int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, std::int64_t i, float v) { p[i] = __float2half(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__global__ void apply_kernel(const T* x, T* y, const float* scale, const float* shift, std::int64_t S,
                             std::int64_t total, bool silu) {
  for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < total;
       i += (std::int64_t)gridDim.x * blockDim.x) {
    const std::int64_t bc = i / S;
    float v = load(x, i) * scale[bc] + shift[bc];
    if (silu) v = v / (1.f + __expf(-v));
    store(y, i, v);
  }
}

// Chan's parallel combination of (n, mean, M2) triples.
__device__ __forceinline__ void combine(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
  if (nb == 0.f) return;
  const float nn = n + nb;
  const float delta = meanb - mean;
  mean += delta * (nb / nn);
  m2 += m2b + delta * delta * (n * nb / nn);
  n = nn;
}

constexpr int kStatsThreads = 256;

// One block per (b, g); each thread runs Welford over a strided share, then a tree of Chan combinations.
template <typename T>
__global__ void stats_kernel(const T* x, std::int64_t C, std::int64_t S, std::int64_t G, float* out) {
  const std::int64_t bg = blockIdx.x;
  const std::int64_t cpg = C / G;
  const std::int64_t len = cpg * S;
  const T* base = x + bg * len;  // channels of a group are consecutive, so the group is one run
  float n = 0.f, mean = 0.f, m2 = 0.f;
  for (std::int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    const float v = load(base, i);
    n += 1.f;
    const float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
  }
  __shared__ float sn[kStatsThreads], smean[kStatsThreads], sm2[kStatsThreads];
  sn[threadIdx.x] = n;
  smean[threadIdx.x] = mean;
  sm2[threadIdx.x] = m2;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) {
      float a = sn[threadIdx.x], am = smean[threadIdx.x], a2 = sm2[threadIdx.x];
      combine(a, am, a2, sn[threadIdx.x + step], smean[threadIdx.x + step], sm2[threadIdx.x + step]);
      sn[threadIdx.x] = a;
      smean[threadIdx.x] = am;
      sm2[threadIdx.x] = a2;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[bg * 3 + 0] = sn[0];
    out[bg * 3 + 1] = smean[0];
    out[bg * 3 + 2] = sm2[0];
  }
}

__global__ void accumulate_kernel(float* acc, float* wsum, const float* tile, const float* wy, const float* wx,
                                  std::int64_t planes, std::int64_t H, std::int64_t W, std::int64_t h, std::int64_t w,
                                  std::int64_t oy, std::int64_t ox) {
  const std::int64_t hw = h * w;
  const std::int64_t total = planes * hw;
  for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < total;
       i += (std::int64_t)gridDim.x * blockDim.x) {
    const std::int64_t p = i / hw, r = i % hw, y = r / w, xx = r % w;
    const float wt = wy[y] * wx[xx];
    const std::int64_t o = (p * H + oy + y) * W + ox + xx;
    acc[o] += tile[i] * wt;  // tiles are accumulated one after another on one stream: no races
    if (p == 0) wsum[(oy + y) * W + ox + xx] += wt;
  }
}

__global__ void normalize_kernel(float* out, const float* acc, const float* wsum, std::int64_t planes, std::int64_t HW) {
  const std::int64_t total = planes * HW;
  for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < total;
       i += (std::int64_t)gridDim.x * blockDim.x)
    out[i] = acc[i] / wsum[i % HW];
}

unsigned grid_for(std::int64_t total, int threads) {
  std::int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace

void groupnorm_apply(const void* x, void* y, DType dtype, const float* scale, const float* shift, std::int64_t B,
                     std::int64_t C, std::int64_t S, bool silu, Stream stream) {
  const std::int64_t total = B * C * S;
  const int threads = 256;
  const unsigned grid = grid_for(total, threads);
  switch (dtype) {
    case DType::F32:
      apply_kernel<<<grid, threads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), scale, shift, S,
                                                 total, silu);
      break;
    case DType::F16:
      apply_kernel<<<grid, threads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), scale, shift,
                                                 S, total, silu);
      break;
    case DType::BF16:
      apply_kernel<<<grid, threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y),
                                                 scale, shift, S, total, silu);
      break;
  }
}

void group_stats(const void* x, DType dtype, std::int64_t B, std::int64_t C, std::int64_t S, std::int64_t G,
                 float* out, Stream stream) {
  const unsigned grid = static_cast<unsigned>(B * G);
  switch (dtype) {
    case DType::F32:
      stats_kernel<<<grid, kStatsThreads, 0, stream>>>(static_cast<const float*>(x), C, S, G, out);
      break;
    case DType::F16:
      stats_kernel<<<grid, kStatsThreads, 0, stream>>>(static_cast<const __half*>(x), C, S, G, out);
      break;
    case DType::BF16:
      stats_kernel<<<grid, kStatsThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), C, S, G, out);
      break;
  }
}

void weighted_accumulate(float* acc, float* wsum, const float* tile, const float* wy, const float* wx,
                         std::int64_t planes, std::int64_t H, std::int64_t W, std::int64_t h, std::int64_t w,
                         std::int64_t oy, std::int64_t ox, Stream stream) {
  const std::int64_t total = planes * h * w;
  accumulate_kernel<<<grid_for(total, 256), 256, 0, stream>>>(acc, wsum, tile, wy, wx, planes, H, W, h, w, oy, ox);
}

void normalize_accumulated(float* out, const float* acc, const float* wsum, std::int64_t planes, std::int64_t HW,
                           Stream stream) {
  normalize_kernel<<<grid_for(planes * HW, 256), 256, 0, stream>>>(out, acc, wsum, planes, HW);
}

int last_error() { return static_cast<int>(cudaGetLastError()); }
const char* error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

}  // namespace headroom::cuda
